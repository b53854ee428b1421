package strictjson

import "reflect"

// Field describes one struct field as strictjson decodes and encodes it:
// its JSON key and the rules of its `acs` tag. Documentation generators
// (internal/openapi) read it so that a schema says what the codec does.
type Field struct {
	Name string
	Type reflect.Type
	// Required: decoding fails without the key.
	Required bool
	// Nullable: null is accepted (pointers, and nullable/emitnull fields).
	Nullable bool
	// AlwaysEncoded: the key is always written (a value that cannot be
	// none, a required or emitnull field, a const).
	AlwaysEncoded bool
	// Object: a raw field that must hold a JSON object.
	Object bool
	// Default is the default= value, when there is one.
	Default *string
	// Const is the const= value, when there is one.
	Const *string
	// Numeric bounds (nil when unset).
	Ge, Gt, Le, Lt *float64
	// Length bounds (-1 when unset).
	MinLen, MaxLen, Len int
	// Raw: a json.RawMessage (any JSON value).
	Raw bool
}

// Describe returns the fields of struct type t in encoding order, and its
// constant kind when t is Kinded ("" otherwise). It panics, as encoding
// would, on an invalid tag.
func Describe(t reflect.Type) (kind string, fields []Field) {
	si := getStructInfo(t)
	for _, fi := range si.fields {
		f := Field{Name: fi.name, Type: fi.typ, Required: fi.required, Nullable: fi.nullable, Object: fi.object,
			Ge: fi.ge, Gt: fi.gt, Le: fi.le, Lt: fi.lt, MinLen: fi.minLen, MaxLen: fi.maxLen, Len: fi.exactLen, Raw: fi.isRaw}
		f.AlwaysEncoded = fi.required || fi.emitNull || fi.hasConst || !(fi.isRaw || fi.isPtr || (fi.isSliceOrMap && fi.nullable))
		if fi.hasDef {
			d := fi.def
			f.Default = &d
		}
		if fi.hasConst {
			c := fi.constVal
			f.Const = &c
		}
		fields = append(fields, f)
	}
	return si.kind, fields
}

// UnionOf returns the union registered for interface type t, if any.
func UnionOf(t reflect.Type) (*Union, bool) {
	u := lookupUnion(t)
	return u, u != nil
}

// Codec reports whether t (or *t) encodes or decodes itself
// (ValueEncoder, ValueDecoder), so its shape is not its Go fields.
func Codec(t reflect.Type) bool {
	return t.Implements(valueEncoderType) || reflect.PointerTo(t).Implements(valueEncoderType) ||
		t.Implements(valueDecoderType) || reflect.PointerTo(t).Implements(valueDecoderType)
}

// EnumOf returns the values of an Enum type, if t is one.
func EnumOf(t reflect.Type) ([]string, bool) {
	if t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface {
		return nil, false
	}
	if t.Implements(enumType) {
		return reflect.Zero(t).Interface().(Enum).EnumValues(), true
	}
	if reflect.PointerTo(t).Implements(enumType) {
		return reflect.New(t).Interface().(Enum).EnumValues(), true
	}
	return nil, false
}
