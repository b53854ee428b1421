package strictjson

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// Kinded is implemented by struct types that carry a constant "kind"
// discriminator. The encoder writes "kind" first; the decoder accepts a "kind"
// key only when it equals Kind().
type Kinded interface {
	Kind() string
}

// Enum is implemented by string types restricted to a fixed set of values.
type Enum interface {
	EnumValues() []string
}

// Validator is implemented by types with rules across fields. It runs after a
// value decoded without errors; locations are relative to the value.
type Validator interface {
	ValidateStrict() []Error
}

// ValueDecoder is implemented (on the pointer) by types that decode themselves
// from a parsed value, such as timestamps. A non-nil Error (with relative
// location) rejects the value.
type ValueDecoder interface {
	DecodeStrict(v Value) *Error
}

// ValueEncoder is implemented by types that encode themselves. The bytes
// appended must be one valid, compact JSON value.
type ValueEncoder interface {
	AppendStrictJSON(b []byte) ([]byte, error)
}

var (
	rawMessageType   = reflect.TypeFor[json.RawMessage]()
	kindedType       = reflect.TypeFor[Kinded]()
	enumType         = reflect.TypeFor[Enum]()
	validatorType    = reflect.TypeFor[Validator]()
	valueDecoderType = reflect.TypeFor[ValueDecoder]()
	valueEncoderType = reflect.TypeFor[ValueEncoder]()
	optionalType     = reflect.TypeFor[Optional]()
)

// Optional is a field of a partial update: it records whether the field was
// present and its raw value, so an explicit null (clear the field) differs
// from an absent field (keep it).
type Optional struct {
	// Set reports that the field was present (null included).
	Set bool
	// Raw is the field's JSON ("null" for an explicit null).
	Raw json.RawMessage
}

// IsNull reports an explicit null.
func (o Optional) IsNull() bool { return o.Set && string(o.Raw) == "null" }

// DecodeStrict implements ValueDecoder: any JSON value is accepted.
func (o *Optional) DecodeStrict(v Value) *Error {
	o.Set = true
	o.Raw = append(json.RawMessage(nil), v.Raw...)
	if v.Kind == Null {
		o.Raw = json.RawMessage("null")
	}
	return nil
}

// AppendStrictJSON implements ValueEncoder (null when absent).
func (o Optional) AppendStrictJSON(b []byte) ([]byte, error) {
	if !o.Set {
		return append(b, "null"...), nil
	}
	return append(b, o.Raw...), nil
}

type fieldInfo struct {
	pos      int // position in structInfo.fields
	name     string
	index    []int
	typ      reflect.Type
	required bool
	nullable bool
	emitNull bool
	object   bool
	hasDef   bool
	def      string
	hasConst bool
	constVal string

	ge, gt, le, lt             *float64
	minLen, maxLen, exactLen   int // -1 when unset
	isRaw, isPtr, isSliceOrMap bool
}

type structInfo struct {
	typ    reflect.Type
	fields []*fieldInfo
	byName map[string]*fieldInfo
	kind   string // "" when not Kinded
}

var structCache sync.Map // reflect.Type -> *structInfo

// methods says which of this package's interfaces a type and its pointer
// implement. Encoding and decoding ask it for every value.
type methods struct{ encoder, ptrEncoder, ptrDecoder, enum bool }

var methodCache sync.Map // reflect.Type -> methods

// methodsOf returns t's methods, computed once per type.
func methodsOf(t reflect.Type) methods {
	if m, ok := methodCache.Load(t); ok {
		return m.(methods)
	}
	pt := reflect.PointerTo(t)
	m := methods{encoder: t.Implements(valueEncoderType), ptrEncoder: pt.Implements(valueEncoderType),
		ptrDecoder: pt.Implements(valueDecoderType), enum: t.Implements(enumType)}
	methodCache.Store(t, m)
	return m
}

func getStructInfo(t reflect.Type) *structInfo {
	if si, ok := structCache.Load(t); ok {
		return si.(*structInfo)
	}
	si := buildStructInfo(t)
	actual, _ := structCache.LoadOrStore(t, si)
	return actual.(*structInfo)
}

func buildStructInfo(t reflect.Type) *structInfo {
	si := &structInfo{typ: t, byName: map[string]*fieldInfo{}}
	if reflect.PointerTo(t).Implements(kindedType) {
		si.kind = reflect.New(t).Interface().(Kinded).Kind()
	} else if t.Implements(kindedType) {
		si.kind = reflect.Zero(t).Interface().(Kinded).Kind()
	}
	collectFields(t, nil, si)
	return si
}

func collectFields(t reflect.Type, index []int, si *structInfo) {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		idx := append(append([]int(nil), index...), i)
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct && sf.Tag.Get("json") == "" {
			collectFields(sf.Type, idx, si)
			continue
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		fi := parseFieldInfo(name, idx, sf.Type, sf.Tag.Get("acs"))
		fi.pos = len(si.fields)
		if _, dup := si.byName[name]; dup {
			panic(fmt.Sprintf("strictjson: duplicate JSON key %q in %v", name, si.typ))
		}
		si.fields = append(si.fields, fi)
		si.byName[name] = fi
	}
}

func parseFieldInfo(name string, idx []int, t reflect.Type, tag string) *fieldInfo {
	fi := &fieldInfo{name: name, index: idx, typ: t, minLen: -1, maxLen: -1, exactLen: -1}
	fi.isRaw = t == rawMessageType
	fi.isPtr = t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface
	fi.isSliceOrMap = !fi.isRaw && (t.Kind() == reflect.Slice || t.Kind() == reflect.Map)
	if fi.isPtr {
		fi.nullable = true
	}
	for _, opt := range splitTag(tag) {
		key, val, _ := strings.Cut(opt, "=")
		switch key {
		case "required":
			fi.required = true
		case "nullable":
			fi.nullable = true
		case "emitnull":
			fi.emitNull = true
			fi.nullable = true
		case "object":
			fi.object = true
		case "default":
			fi.hasDef, fi.def = true, val
		case "const":
			fi.hasConst, fi.constVal = true, val
		case "ge", "gt", "le", "lt":
			f, err := strconv.ParseFloat(val, 64)
			if err != nil {
				panic(fmt.Sprintf("strictjson: bad %s bound %q on %s", key, val, name))
			}
			switch key {
			case "ge":
				fi.ge = &f
			case "gt":
				fi.gt = &f
			case "le":
				fi.le = &f
			case "lt":
				fi.lt = &f
			}
		case "minlen", "maxlen", "len":
			n, err := strconv.Atoi(val)
			if err != nil {
				panic(fmt.Sprintf("strictjson: bad %s %q on %s", key, val, name))
			}
			switch key {
			case "minlen":
				fi.minLen = n
			case "maxlen":
				fi.maxLen = n
			case "len":
				fi.exactLen = n
			}
		case "":
		default:
			panic(fmt.Sprintf("strictjson: unknown option %q on %s", key, name))
		}
	}
	return fi
}

// splitTag splits on commas, except inside a default= or const= value, which
// runs to the end of the tag when it is the last option.
func splitTag(tag string) []string {
	if tag == "" {
		return nil
	}
	var out []string
	for tag != "" {
		if strings.HasPrefix(tag, "default=") || strings.HasPrefix(tag, "const=") {
			// A default/const value may not contain a comma unless it is last.
			i := strings.IndexByte(tag, ',')
			if i < 0 {
				out = append(out, tag)
				break
			}
			out = append(out, tag[:i])
			tag = tag[i+1:]
			continue
		}
		opt, rest, _ := strings.Cut(tag, ",")
		out = append(out, opt)
		tag = rest
	}
	return out
}

// unions maps an interface type to how its concrete types are chosen.
var unions sync.Map // reflect.Type -> *Union

// Union describes an interface type whose concrete type is selected by a
// discriminator key such as "kind" or "type".
type Union struct {
	// Key is the discriminator key.
	Key string
	// Default is the tag used when the key is absent; "" makes it required.
	Default string
	// New returns a pointer to a fresh value for a tag, or false.
	New func(tag string) (any, bool)
	// Tags lists the accepted tags, for error messages.
	Tags []string
	// After runs after a successful decode of the concrete value (for
	// defaults that depend on the tag). Locations are relative to the value.
	After func(v any, present func(key string) bool) []Error
}

// RegisterUnion registers the union for interface type I. Fields of type I
// then decode through u and encode as their concrete value.
func RegisterUnion[I any](u *Union) {
	t := reflect.TypeFor[I]()
	if t.Kind() != reflect.Interface {
		panic("strictjson: RegisterUnion needs an interface type")
	}
	unions.Store(t, u)
}

func lookupUnion(t reflect.Type) *Union {
	u, ok := unions.Load(t)
	if !ok {
		return nil
	}
	return u.(*Union)
}
