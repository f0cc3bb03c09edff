package api

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Rule bounds one field. Text rules bound a string's length in bytes
// (the database columns are VARCHAR(n) and a byte bound is the safe one
// whatever their character set), Int rules a number, Items rules the
// number of elements of a repeated field.
type Rule struct {
	kind     ruleKind
	min, max int64
}

type ruleKind int

const (
	ruleText ruleKind = iota + 1
	ruleInt
	ruleItems
)

// Text bounds a string to min..max bytes (min 1 makes it required).
func Text(min, max int) Rule { return Rule{kind: ruleText, min: int64(min), max: int64(max)} }

// Int bounds a number to min..max.
func Int(min, max int64) Rule { return Rule{kind: ruleInt, min: min, max: max} }

// Items bounds a repeated field to min..max elements.
func Items(min, max int) Rule { return Rule{kind: ruleItems, min: int64(min), max: int64(max)} }

// Why describes what the rule allows, for messages: "1 to 64 bytes".
func (r Rule) Why() string {
	switch r.kind {
	case ruleText:
		if r.min == 0 {
			return fmt.Sprintf("at most %d bytes", r.max)
		}
		return fmt.Sprintf("%d to %d bytes", r.min, r.max)
	case ruleInt:
		return fmt.Sprintf("a whole number from %d to %d", r.min, r.max)
	case ruleItems:
		return fmt.Sprintf("%d to %d entries", r.min, r.max)
	}
	return "no rule"
}

// Schema holds the rules of one request message by field path: the
// proto field names, joined with "." through nested and repeated
// messages ("items.quantity" bounds every item's quantity). A field
// without a rule is not checked.
type Schema map[string]Rule

// Schemas maps request message types (full proto names, e.g.
// "tide.order.v1.CreateOrderRequest") to their schema.
type Schemas map[protoreflect.FullName]Schema

// Check returns the first violation of s in m as an INVALID_ARGUMENT
// error naming the field path (items[2].quantity), or nil.
func (s Schema) Check(m proto.Message) error {
	return s.check(m.ProtoReflect(), "", "")
}

func (s Schema) check(m protoreflect.Message, path, key string) error {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		p, k := path+string(fd.Name()), key+string(fd.Name())
		if fd.IsList() {
			list := m.Get(fd).List()
			if r, ok := s[k]; ok && r.kind == ruleItems && (int64(list.Len()) < r.min || int64(list.Len()) > r.max) {
				return Invalid(p, "must have %s, got %d", r.Why(), list.Len())
			}
			for j := range list.Len() {
				ep := p + "[" + strconv.Itoa(j) + "]"
				if fd.Kind() == protoreflect.MessageKind {
					if err := s.check(list.Get(j).Message(), ep+".", k+"."); err != nil {
						return err
					}
					continue
				}
				if err := s.value(fd, list.Get(j), ep, k); err != nil {
					return err
				}
			}
			continue
		}
		if fd.IsMap() {
			continue
		}
		if fd.Kind() == protoreflect.MessageKind {
			if m.Has(fd) {
				if err := s.check(m.Get(fd).Message(), p+".", k+"."); err != nil {
					return err
				}
			}
			continue
		}
		if err := s.value(fd, m.Get(fd), p, k); err != nil {
			return err
		}
	}
	return nil
}

func (s Schema) value(fd protoreflect.FieldDescriptor, v protoreflect.Value, path, key string) error {
	r, ok := s[key]
	if !ok {
		return nil
	}
	switch r.kind {
	case ruleText:
		str := v.String()
		if n := int64(len(str)); n < r.min || n > r.max {
			if n == 0 {
				return Invalid(path, "is required (%s)", r.Why())
			}
			return Invalid(path, "must be %s, got %d bytes", r.Why(), n)
		}
		if !utf8.ValidString(str) || strings.ContainsRune(str, 0) {
			return Invalid(path, "must be valid UTF-8 text without NUL characters")
		}
	case ruleInt:
		var n int64
		switch fd.Kind() {
		case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
			u := v.Uint()
			if u > uint64(r.max) {
				return Invalid(path, "must be %s, got %d", r.Why(), u)
			}
			n = int64(u)
		default:
			n = v.Int()
		}
		if n < r.min || n > r.max {
			if n == 0 {
				return Invalid(path, "is required (%s)", r.Why())
			}
			return Invalid(path, "must be %s, got %d", r.Why(), n)
		}
	}
	return nil
}
