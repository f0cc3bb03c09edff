package protocol

//go:generate go run ./internal/headergen -out headers_gen.go

import (
	"fmt"
	"strconv"
)

// Header is a typed request or response header: the RocketMQ
// CommandCustomHeader. Encode renders it as ext fields (every value a
// string, keys spelled exactly as the Java field names); Decode fills it
// from ext fields.
//
// Decode follows the Java header classes: a field marked @CFNotNull that is
// absent or empty is ErrMissingField; a present value that does not parse
// as its type is ErrBadField; optional numeric fields that are absent or
// empty decode as zero (unless a field's doc says otherwise). Unknown keys
// (for example the ACL fields AccessKey, Signature and SecurityToken) are
// ignored. Errors name the field and wrap the sentinel with %w.
//
// Headers are plain values with no internal locking.
//
// The Encode and Decode methods of most headers are generated into
// headers_gen.go from the struct declarations: a type marked with the
// directive //rmq:codec, its fields tagged `rmq:"<wire name>,<options>"`
// (required, omitempty, positive, nullneg, nullid, default=, short=; see
// internal/headergen). Edit the tags, then run go generate (or make
// generate); never edit headers_gen.go. A header whose rules no tag can
// state keeps hand-written methods with a comment why.
type Header interface {
	Encode() map[string]string
	Decode(ext map[string]string) error
}

// ACL ext fields some clients add to every request. Brokers without ACL
// ignore them; header decoders never look at them.
const (
	ExtAccessKey     = "AccessKey"
	ExtSignature     = "Signature"
	ExtSecurityToken = "SecurityToken"
)

// extReader decodes ext fields and remembers the first error, so a
// Decode method reads like the field list of its header class.
type extReader struct {
	ext map[string]string
	err error
}

func (r *extReader) raw(name string, required bool) (string, bool) {
	v := r.ext[name]
	if v == "" {
		if required && r.err == nil {
			r.err = fmt.Errorf("%w: %s", ErrMissingField, name)
		}
		return "", false
	}
	return v, true
}

func (r *extReader) str(name string, required bool) string {
	v, _ := r.raw(name, required)
	return v
}

func (r *extReader) int(name string, required bool, bits int) int64 {
	v, ok := r.raw(name, required)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		if r.err == nil {
			r.err = fmt.Errorf("%w: %s=%q is not an int%d", ErrBadField, name, v, bits)
		}
		return 0
	}
	return n
}

func (r *extReader) i32(name string, required bool) int32 { return int32(r.int(name, required, 32)) }
func (r *extReader) i64(name string, required bool) int64 { return r.int(name, required, 64) }

// i32Unset is i32 for an optional field whose absence means something
// else than 0 (Java Integer null): absent or empty decodes as -1.
func (r *extReader) i32Unset(name string) int32 {
	if r.ext[name] == "" {
		return -1
	}
	return r.i32(name, false)
}

// i64Or is i64 for an optional field whose absence means def.
func (r *extReader) i64Or(name string, def int64) int64 {
	if r.ext[name] == "" {
		return def
	}
	return r.i64(name, false)
}

func (r *extReader) bool(name string, required bool) bool {
	v, ok := r.raw(name, required)
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		if r.err == nil {
			r.err = fmt.Errorf("%w: %s=%q is not a bool", ErrBadField, name, v)
		}
		return false
	}
	return b
}

func itoa32(v int32) string { return strconv.FormatInt(int64(v), 10) }
func itoa64(v int64) string { return strconv.FormatInt(v, 10) }
func btoa(v bool) string    { return strconv.FormatBool(v) }
