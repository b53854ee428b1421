package strictjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Marshal encodes v canonically: struct fields in declaration order, "kind"
// first for Kinded structs, nil optional fields omitted, nil lists as [], map
// keys sorted, no HTML escaping, no insignificant whitespace.
func Marshal(v any) ([]byte, error) { return Append(nil, v) }

// Append appends the canonical encoding of v to b.
func Append(b []byte, v any) ([]byte, error) {
	return encode(b, reflect.ValueOf(v), nil)
}

// MustMarshal is Marshal for values known to encode (no NaN, valid raw JSON).
// It panics on error.
func MustMarshal(v any) []byte {
	b, err := Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func encode(b []byte, rv reflect.Value, fi *fieldInfo) ([]byte, error) {
	if !rv.IsValid() {
		return append(b, "null"...), nil
	}
	t := rv.Type()
	if t == rawMessageType {
		raw := rv.Bytes()
		if len(raw) == 0 {
			return append(b, "null"...), nil
		}
		buf := bytes.NewBuffer(b)
		if err := json.Compact(buf, raw); err != nil {
			return b, fmt.Errorf("strictjson: invalid raw JSON: %w", err)
		}
		return buf.Bytes(), nil
	}
	switch t.Kind() {
	case reflect.Interface, reflect.Pointer:
		if rv.IsNil() {
			return append(b, "null"...), nil
		}
		return encode(b, rv.Elem(), fi)
	}
	m := methodsOf(t)
	if m.encoder {
		return rv.Interface().(ValueEncoder).AppendStrictJSON(b)
	}
	if m.ptrEncoder && rv.CanAddr() {
		return rv.Addr().Interface().(ValueEncoder).AppendStrictJSON(b)
	}
	switch t.Kind() {
	case reflect.String:
		if fi != nil && fi.hasConst {
			return AppendString(b, fi.constVal), nil
		}
		return AppendString(b, rv.String()), nil
	case reflect.Bool:
		return strconv.AppendBool(b, rv.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(b, rv.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.AppendUint(b, rv.Uint(), 10), nil
	case reflect.Float32, reflect.Float64:
		return AppendFloat(b, rv.Float())
	case reflect.Slice, reflect.Array:
		b = append(b, '[')
		for i := 0; i < rv.Len(); i++ {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = encode(b, rv.Index(i), nil); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case reflect.Map:
		keys := rv.MapKeys()
		slices.SortFunc(keys, func(a, c reflect.Value) int {
			switch {
			case a.String() < c.String():
				return -1
			case a.String() > c.String():
				return 1
			}
			return 0
		})
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, k.String())
			b = append(b, ':')
			var err error
			if b, err = encode(b, rv.MapIndex(k), nil); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	case reflect.Struct:
		return encodeStruct(b, rv)
	}
	return b, fmt.Errorf("strictjson: cannot encode %v", t)
}

func isNone(fv reflect.Value, fi *fieldInfo) bool {
	switch {
	case fi.isRaw:
		return fv.Len() == 0
	case fi.isPtr:
		return fv.IsNil()
	case fi.isSliceOrMap && fi.nullable:
		return fv.IsNil()
	}
	return false
}

func encodeStruct(b []byte, rv reflect.Value) ([]byte, error) {
	si := getStructInfo(rv.Type())
	b = append(b, '{')
	first := true
	if si.kind != "" {
		b = append(b, `"kind":`...)
		b = AppendString(b, si.kind)
		first = false
	}
	for _, fi := range si.fields {
		fv := rv.FieldByIndex(fi.index)
		if isNone(fv, fi) && !fi.hasConst {
			if !fi.required && !fi.emitNull {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = AppendString(b, fi.name)
			b = append(b, ":null"...)
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = AppendString(b, fi.name)
		b = append(b, ':')
		if fi.hasConst {
			b = AppendString(b, fi.constVal)
			continue
		}
		var err error
		if b, err = encode(b, fv, fi); err != nil {
			return b, fmt.Errorf("%s: %w", fi.name, err)
		}
	}
	return append(b, '}'), nil
}

// AppendFloat appends f as encoding/json does (shortest form, exponent only
// for very small or large magnitudes). NaN and infinities are an error.
func AppendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, fmt.Errorf("strictjson: unsupported float value %v", f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, escaping like encoding/json but
// without HTML escaping. Invalid UTF-8 becomes U+FFFD.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
