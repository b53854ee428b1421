package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Unmarshal parses data and decodes it strictly into v, which must be a
// non-nil pointer. Every error location starts with loc (for example "body").
// It returns Errors on any problem: malformed JSON (type json_invalid), unknown
// keys (extra_forbidden), missing required keys (missing), wrong types, enum
// values outside their set, broken limits and failed Validator rules.
func Unmarshal(data []byte, v any, loc ...any) error {
	root, err := Parse(data)
	if err != nil {
		msg := "JSON decode error"
		var se *SyntaxError
		if errors.As(err, &se) {
			msg += ": " + se.Msg
			return Errors{FieldError(append(loc[:len(loc):len(loc)], se.Offset), "json_invalid", msg)}
		}
		return Errors{FieldError(loc, "json_invalid", msg)}
	}
	return DecodeValue(root, v, loc...)
}

// DecodeValue decodes an already parsed value into v (a non-nil pointer) with
// the same rules as Unmarshal.
func DecodeValue(val Value, v any, loc ...any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("strictjson: decode target must be a non-nil pointer, got %T", v)
	}
	d := decoder{}
	d.decode(val, rv.Elem(), loc, nil)
	if len(d.errs) > 0 {
		return d.errs
	}
	return nil
}

type decoder struct {
	errs Errors
}

func (d *decoder) add(loc []any, errType, msg string) {
	if len(d.errs) < maxErrors {
		d.errs = append(d.errs, FieldError(loc, errType, msg))
	}
}

func sub(loc []any, p any) []any { return append(loc[:len(loc):len(loc)], p) }

var enumCache sync.Map // reflect.Type -> map[string]bool + []string

type enumInfo struct {
	values []string
	set    map[string]bool
}

func enumOf(t reflect.Type) *enumInfo {
	if !methodsOf(t).enum {
		return nil
	}
	if ei, ok := enumCache.Load(t); ok {
		return ei.(*enumInfo)
	}
	vals := reflect.Zero(t).Interface().(Enum).EnumValues()
	ei := &enumInfo{values: vals, set: make(map[string]bool, len(vals))}
	for _, v := range vals {
		ei.set[v] = true
	}
	enumCache.Store(t, ei)
	return ei
}

// typeError reports val as not fitting Go type t.
func (d *decoder) typeError(loc []any, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == rawMessageType:
		d.add(loc, "missing", "Field required")
	case t.Kind() == reflect.String:
		d.add(loc, "string_type", "Input should be a valid string")
	case t.Kind() == reflect.Bool:
		d.add(loc, "bool_type", "Input should be a valid boolean")
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		d.add(loc, "int_type", "Input should be a valid integer")
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		d.add(loc, "float_type", "Input should be a valid number")
	case t.Kind() == reflect.Slice:
		d.add(loc, "list_type", "Input should be a valid list")
	case t.Kind() == reflect.Map:
		d.add(loc, "dict_type", "Input should be a valid dictionary")
	default:
		d.add(loc, "model_type", "Input should be a valid dictionary or object to extract fields from")
	}
}

// decode decodes val into rv. fi, when not nil, is the struct field rv is.
func (d *decoder) decode(val Value, rv reflect.Value, loc []any, fi *fieldInfo) {
	t := rv.Type()
	if val.Kind == Null && t == optionalType {
		rv.Addr().Interface().(*Optional).DecodeStrict(val)
		return
	}
	if val.Kind == Null {
		if (fi != nil && fi.nullable) || (fi == nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface)) {
			rv.SetZero()
			return
		}
		if t == rawMessageType {
			d.add(loc, "value_error", "Input should not be null")
			return
		}
		d.typeError(loc, t)
		return
	}
	if t == rawMessageType {
		if fi != nil && fi.object && val.Kind != Object {
			d.add(loc, "dict_type", "Input should be a valid dictionary")
			return
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, val.Raw); err != nil {
			d.add(loc, "json_invalid", "Invalid JSON")
			return
		}
		rv.SetBytes(buf.Bytes())
		return
	}
	switch t.Kind() {
	case reflect.Interface:
		d.decodeUnion(val, rv, loc)
		return
	case reflect.Pointer:
		nv := reflect.New(t.Elem())
		d.decode(val, nv.Elem(), loc, fi)
		rv.Set(nv)
		return
	}
	if rv.CanAddr() && methodsOf(rv.Type()).ptrDecoder {
		if e := rv.Addr().Interface().(ValueDecoder).DecodeStrict(val); e != nil {
			d.add(append(loc[:len(loc):len(loc)], e.Loc...), e.Type, e.Msg)
		}
		return
	}
	switch t.Kind() {
	case reflect.String:
		if val.Kind != String {
			d.typeError(loc, t)
			return
		}
		if fi != nil && fi.hasConst && val.Str != fi.constVal {
			d.add(loc, "literal_error", EnumMessage([]string{fi.constVal}))
			return
		}
		if ei := enumOf(t); ei != nil && !ei.set[val.Str] {
			d.add(loc, "enum", EnumMessage(ei.values))
			return
		}
		rv.SetString(val.Str)
		if fi != nil {
			d.checkLen(loc, fi, utf8.RuneCountInString(val.Str), "String", "character")
		}
	case reflect.Bool:
		if val.Kind != Bool {
			d.typeError(loc, t)
			return
		}
		rv.SetBool(val.Bool)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := d.intValue(val, loc, t)
		if !ok {
			return
		}
		if rv.OverflowInt(n) {
			d.add(loc, "int_parsing", "Input should be a valid integer, the value is out of range")
			return
		}
		rv.SetInt(n)
		if fi != nil {
			d.checkBounds(loc, fi, float64(n))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := d.intValue(val, loc, t)
		if !ok {
			return
		}
		if n < 0 || rv.OverflowUint(uint64(n)) {
			d.add(loc, "int_parsing", "Input should be a valid integer, the value is out of range")
			return
		}
		rv.SetUint(uint64(n))
		if fi != nil {
			d.checkBounds(loc, fi, float64(n))
		}
	case reflect.Float32, reflect.Float64:
		if val.Kind != Number {
			d.typeError(loc, t)
			return
		}
		f, err := strconv.ParseFloat(string(val.Raw), 64)
		if err != nil || math.IsInf(f, 0) {
			d.add(loc, "float_parsing", "Input should be a finite number")
			return
		}
		rv.SetFloat(f)
		if fi != nil {
			d.checkBounds(loc, fi, f)
		}
	case reflect.Slice:
		if val.Kind != Array {
			d.typeError(loc, t)
			return
		}
		if len(val.Elems) == 0 && (fi == nil || !fi.nullable) {
			// A non-nullable list has one empty form: nil (encoded as []).
			rv.SetZero()
			if fi != nil {
				d.checkLen(loc, fi, 0, "List", "item")
			}
			return
		}
		s := reflect.MakeSlice(t, len(val.Elems), len(val.Elems))
		for i := range val.Elems {
			d.decode(val.Elems[i], s.Index(i), sub(loc, i), nil)
		}
		rv.Set(s)
		if fi != nil {
			d.checkLen(loc, fi, len(val.Elems), "List", "item")
		}
	case reflect.Map:
		if val.Kind != Object || t.Key().Kind() != reflect.String {
			d.typeError(loc, t)
			return
		}
		m := reflect.MakeMapWithSize(t, len(val.Members))
		for _, mem := range val.Members {
			ev := reflect.New(t.Elem()).Elem()
			d.decode(mem.Value, ev, sub(loc, mem.Key), nil)
			m.SetMapIndex(reflect.ValueOf(mem.Key).Convert(t.Key()), ev)
		}
		rv.Set(m)
	case reflect.Struct:
		d.decodeStruct(val, rv, loc)
	default:
		d.add(loc, "type_error", "unsupported type "+t.String())
	}
}

func (d *decoder) intValue(val Value, loc []any, t reflect.Type) (int64, bool) {
	if val.Kind != Number {
		d.typeError(loc, t)
		return 0, false
	}
	if n, err := strconv.ParseInt(string(val.Raw), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(val.Raw), 64)
	if err != nil || math.IsInf(f, 0) || f > math.MaxInt64 || f < math.MinInt64 {
		d.add(loc, "int_parsing", "Input should be a valid integer, the value is out of range")
		return 0, false
	}
	if f != math.Trunc(f) {
		d.add(loc, "int_from_float", "Input should be a valid integer, got a number with a fractional part")
		return 0, false
	}
	return int64(f), true
}

func (d *decoder) checkBounds(loc []any, fi *fieldInfo, f float64) {
	switch {
	case fi.ge != nil && f < *fi.ge:
		d.add(loc, "greater_than_equal", fmt.Sprintf("Input should be greater than or equal to %g", *fi.ge))
	case fi.gt != nil && f <= *fi.gt:
		d.add(loc, "greater_than", fmt.Sprintf("Input should be greater than %g", *fi.gt))
	case fi.le != nil && f > *fi.le:
		d.add(loc, "less_than_equal", fmt.Sprintf("Input should be less than or equal to %g", *fi.le))
	case fi.lt != nil && f >= *fi.lt:
		d.add(loc, "less_than", fmt.Sprintf("Input should be less than %g", *fi.lt))
	}
}

func (d *decoder) checkLen(loc []any, fi *fieldInfo, n int, what, unit string) {
	plural := func(k int) string {
		if k == 1 {
			return unit
		}
		return unit + "s"
	}
	short, long := "string_too_short", "string_too_long"
	if what == "List" {
		short, long = "too_short", "too_long"
	}
	minN, maxN := fi.minLen, fi.maxLen
	if fi.exactLen >= 0 {
		minN, maxN = fi.exactLen, fi.exactLen
	}
	switch {
	case minN >= 0 && n < minN:
		d.add(loc, short, fmt.Sprintf("%s should have at least %d %s", what, minN, plural(minN)))
	case maxN >= 0 && n > maxN:
		d.add(loc, long, fmt.Sprintf("%s should have at most %d %s", what, maxN, plural(maxN)))
	}
}

func (d *decoder) decodeStruct(val Value, rv reflect.Value, loc []any) {
	si := getStructInfo(rv.Type())
	if val.Kind != Object {
		d.typeError(loc, rv.Type())
		return
	}
	before := len(d.errs)
	present := make([]bool, len(si.fields))
	for _, mem := range val.Members {
		fi := si.byName[mem.Key]
		if fi == nil {
			if mem.Key == "kind" && si.kind != "" {
				if mem.Value.Kind != String || mem.Value.Str != si.kind {
					d.add(sub(loc, "kind"), "literal_error", EnumMessage([]string{si.kind}))
				}
				continue
			}
			d.add(sub(loc, mem.Key), "extra_forbidden", "Extra inputs are not permitted")
			continue
		}
		present[fi.pos] = true
		d.decode(mem.Value, rv.FieldByIndex(fi.index), sub(loc, mem.Key), fi)
	}
	for i, fi := range si.fields {
		if present[i] {
			continue
		}
		fv := rv.FieldByIndex(fi.index)
		fv.SetZero()
		switch {
		case fi.required:
			d.add(sub(loc, fi.name), "missing", "Field required")
		case fi.hasDef:
			if err := setDefault(fv, fi.def); err != nil {
				panic(fmt.Sprintf("strictjson: default for %s: %v", fi.name, err))
			}
		case fi.hasConst:
			if err := setDefault(fv, fi.constVal); err != nil {
				panic(fmt.Sprintf("strictjson: const for %s: %v", fi.name, err))
			}
		}
	}
	if len(d.errs) == before && rv.CanAddr() {
		if v, ok := rv.Addr().Interface().(Validator); ok {
			for _, e := range v.ValidateStrict() {
				d.add(append(loc[:len(loc):len(loc)], e.Loc...), e.Type, e.Msg)
			}
		}
	}
}

func setDefault(fv reflect.Value, def string) error {
	if fv.Type() == rawMessageType {
		fv.SetBytes([]byte(def))
		return nil
	}
	if fv.Kind() == reflect.Pointer {
		nv := reflect.New(fv.Type().Elem())
		if err := setDefault(nv.Elem(), def); err != nil {
			return err
		}
		fv.Set(nv)
		return nil
	}
	switch fv.Kind() {
	case reflect.String:
		fv.SetString(def)
	case reflect.Bool:
		b, err := strconv.ParseBool(def)
		if err != nil {
			return err
		}
		fv.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(def, 10, 64)
		if err != nil {
			return err
		}
		fv.SetInt(n)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(def, 64)
		if err != nil {
			return err
		}
		fv.SetFloat(f)
	default:
		return fmt.Errorf("unsupported default for %v", fv.Type())
	}
	return nil
}

func (d *decoder) decodeUnion(val Value, rv reflect.Value, loc []any) {
	u := lookupUnion(rv.Type())
	if u == nil {
		d.add(loc, "type_error", "no union registered for "+rv.Type().String())
		return
	}
	if val.Kind != Object {
		d.add(loc, "model_type", "Input should be a valid dictionary or object to extract fields from")
		return
	}
	tag := u.Default
	if tv, ok := val.Get(u.Key); ok {
		if tv.Kind != String {
			d.add(sub(loc, u.Key), "union_tag_invalid", "Input tag should be a string")
			return
		}
		tag = tv.Str
	} else if tag == "" {
		d.add(sub(loc, u.Key), "union_tag_not_found", fmt.Sprintf("Unable to extract tag using discriminator '%s'", u.Key))
		return
	}
	ptr, ok := u.New(tag)
	if !ok {
		d.add(sub(loc, u.Key), "union_tag_invalid",
			fmt.Sprintf("Input tag '%s' found using '%s' does not match any of the expected tags: %s", tag, u.Key, quoteList(u.Tags)))
		return
	}
	pv := reflect.ValueOf(ptr)
	before := len(d.errs)
	d.decode(val, pv.Elem(), loc, nil)
	if len(d.errs) == before && u.After != nil {
		present := func(k string) bool { _, ok := val.Get(k); return ok }
		for _, e := range u.After(ptr, present) {
			d.add(append(loc[:len(loc):len(loc)], e.Loc...), e.Type, e.Msg)
		}
	}
	if !pv.Type().AssignableTo(rv.Type()) {
		d.add(loc, "type_error", fmt.Sprintf("%T does not implement %v", ptr, rv.Type()))
		return
	}
	rv.Set(pv)
}

func quoteList(tags []string) string {
	var b bytes.Buffer
	for i, t := range tags {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("'" + t + "'")
	}
	return b.String()
}
