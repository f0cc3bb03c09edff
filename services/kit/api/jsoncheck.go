package api

import (
	"bytes"
	"encoding/json"
	stderrors "errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// checkJSON checks that data is one JSON object whose fields exist in md
// and whose values have the fields' types and fit their number types, so
// that decoding it cannot fail with a message about protobuf internals.
// Errors name the field path and say what is allowed (from s when it has
// a rule, else the type's range).
func checkJSON(data []byte, md protoreflect.MessageDescriptor, s Schema) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return Malformed("request body is not valid JSON: %s", jsonWhy(err, data))
	}
	if _, err := dec.Token(); !stderrors.Is(err, io.EOF) {
		return Malformed("request body is not valid JSON: unexpected data after the JSON value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return Malformed("request body must be a JSON object, got %s", jsonType(v))
	}
	return walkObject(obj, md, s, "", "")
}

// checkValues checks query or path parameters (all strings) the same way.
func checkValues(vals map[string][]string, md protoreflect.MessageDescriptor, s Schema) error {
	for name, vs := range vals {
		fd := fieldByName(md, name)
		if fd == nil {
			continue // query parameters the API does not know are ignored
		}
		if !fd.IsList() && len(vs) > 1 {
			return Invalid(name, "must be given once, got %d values", len(vs))
		}
		for _, v := range vs {
			if err := checkScalar(fd, v, s, name, name, true); err != nil {
				return err
			}
		}
	}
	return nil
}

func jsonWhy(err error, data []byte) string {
	var se *json.SyntaxError
	if stderrors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	if stderrors.Is(err, io.EOF) || stderrors.Is(err, io.ErrUnexpectedEOF) {
		if len(bytes.TrimSpace(data)) == 0 {
			return "the body is empty"
		}
		return "the body ends in the middle of a value"
	}
	return err.Error()
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "true/false"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func fieldByName(md protoreflect.MessageDescriptor, name string) protoreflect.FieldDescriptor {
	if fd := md.Fields().ByJSONName(name); fd != nil {
		return fd
	}
	return md.Fields().ByName(protoreflect.Name(name))
}

func walkObject(obj map[string]any, md protoreflect.MessageDescriptor, s Schema, path, key string) error {
	for name, v := range obj {
		fd := fieldByName(md, name)
		if fd == nil {
			return Invalid(path+clip(name), "unknown field (this request has %s)", fieldList(md))
		}
		p, k := path+string(fd.Name()), key+string(fd.Name())
		if v == nil {
			continue // null is the field's default, as in protojson
		}
		switch {
		case fd.IsList():
			arr, ok := v.([]any)
			if !ok {
				return Invalid(p, "must be an array, got %s", jsonType(v))
			}
			if r, ok := s[k]; ok && r.kind == ruleItems && int64(len(arr)) > r.max {
				return Invalid(p, "must have %s, got %d", r.Why(), len(arr))
			}
			for i, e := range arr {
				if err := walkValue(fd, e, s, p+"["+strconv.Itoa(i)+"]", k); err != nil {
					return err
				}
			}
		case fd.IsMap():
			if _, ok := v.(map[string]any); !ok {
				return Invalid(p, "must be an object, got %s", jsonType(v))
			}
		default:
			if err := walkValue(fd, v, s, p, k); err != nil {
				return err
			}
		}
	}
	return nil
}

func fieldList(md protoreflect.MessageDescriptor) string {
	names := make([]string, md.Fields().Len())
	for i := range names {
		names[i] = string(md.Fields().Get(i).Name())
	}
	return strings.Join(names, ", ")
}

func walkValue(fd protoreflect.FieldDescriptor, v any, s Schema, path, key string) error {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if strings.HasPrefix(string(fd.Message().FullName()), "google.protobuf.") {
			return nil // well-known types have their own JSON forms
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return Invalid(path, "must be an object, got %s", jsonType(v))
		}
		return walkObject(obj, fd.Message(), s, path+".", key+".")
	case protoreflect.StringKind, protoreflect.BytesKind:
		if _, ok := v.(string); !ok {
			return Invalid(path, "must be a string, got %s", jsonType(v))
		}
		return nil
	case protoreflect.BoolKind:
		if _, ok := v.(bool); !ok {
			return Invalid(path, "must be true or false, got %s", jsonType(v))
		}
		return nil
	case protoreflect.EnumKind:
		switch v.(type) {
		case string, json.Number:
			return nil
		}
		return Invalid(path, "must be a name or number, got %s", jsonType(v))
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		if _, ok := v.(json.Number); !ok {
			return Invalid(path, "must be a number, got %s", jsonType(v))
		}
		return nil
	}
	// Integers: JSON numbers, or strings holding one (protojson's form of
	// 64-bit integers).
	switch n := v.(type) {
	case json.Number:
		return checkScalar(fd, string(n), s, path, key, false)
	case string:
		return checkScalar(fd, n, s, path, key, false)
	}
	return Invalid(path, "must be %s, got %s", intWhy(fd, s, key), jsonType(v))
}

// checkScalar checks the text of one integer (or any scalar, for query
// values) against fd's type. plain integers are decimal digits only (the
// query binding's syntax); JSON also takes 1e3 and "5".
func checkScalar(fd protoreflect.FieldDescriptor, text string, s Schema, path, key string, plain bool) error {
	switch fd.Kind() {
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.EnumKind, protoreflect.MessageKind, protoreflect.GroupKind:
		return nil
	case protoreflect.BoolKind:
		if _, err := strconv.ParseBool(text); err != nil {
			return Invalid(path, "must be true or false, got %q", clip(text))
		}
		return nil
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		if _, err := strconv.ParseFloat(text, 64); err != nil {
			return Invalid(path, "must be a number, got %q", clip(text))
		}
		return nil
	}
	lo, hi := intRange(fd.Kind())
	f, ok := new(big.Float).SetString(strings.TrimSpace(text))
	if !ok || f.IsInf() {
		return Invalid(path, "must be %s, got %q", intWhy(fd, s, key), clip(text))
	}
	if !f.IsInt() {
		return Invalid(path, "must be %s, got %s", intWhy(fd, s, key), clip(text))
	}
	i, _ := f.Int(nil)
	if i.Cmp(lo) < 0 || i.Cmp(hi) > 0 {
		return Invalid(path, "must be %s, got %s", intWhy(fd, s, key), clip(text))
	}
	if _, ok := new(big.Int).SetString(text, 10); plain && !ok {
		return Invalid(path, "must be %s written in digits, got %q", intWhy(fd, s, key), clip(text))
	}
	return nil
}

func intWhy(fd protoreflect.FieldDescriptor, s Schema, key string) string {
	if r, ok := s[key]; ok && r.kind == ruleInt {
		return r.Why()
	}
	lo, hi := intRange(fd.Kind())
	return fmt.Sprintf("a whole number from %s to %s", lo, hi)
}

func intRange(k protoreflect.Kind) (lo, hi *big.Int) {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return big.NewInt(math.MinInt32), big.NewInt(math.MaxInt32)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return big.NewInt(0), big.NewInt(math.MaxUint32)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return big.NewInt(0), new(big.Int).SetUint64(math.MaxUint64)
	}
	return big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64)
}

// clip shortens echoed input so an error never carries a huge value.
// and never invalid UTF-8.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}
