package console

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"
)

// MaxFormBytes bounds a request body (forms): a DLQ resend of 1000 ids
// is about 40 KiB.
const MaxFormBytes = 256 << 10

// ErrTooLarge: a request body over MaxFormBytes (answered 413).
var ErrTooLarge = errors.New("request too large")

// fieldLimits are the longest values the console accepts per form, query
// or path field, in bytes: RocketMQ's limits for names (topic 127, group
// 255), message ids and order ids (64), keys (255).
var fieldLimits = map[string]int{
	"topic": 127, "group": 255, "id": 64, "key": 255, "broker": 255,
	"time": 64, "begin": 64, "end": 64, "offset": 20, "max": 10, "action": 16, "target": 16,
	"all": 8, "allowOnline": 8,
}

// checkInput limits the body and checks every field a client sent
// (query, form body, path) before a handler uses it: too long, not
// UTF-8, unknown, or "max" out of 1..1000 is ErrBadRequest naming the
// field; a body over MaxFormBytes is ErrTooLarge.
func checkInput(w http.ResponseWriter, r *http.Request, pathFields ...string) error {
	if r.ContentLength > MaxFormBytes {
		return fmt.Errorf("%w: the body is larger than %d bytes", ErrTooLarge, MaxFormBytes)
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fmt.Errorf("%w: the body is larger than %d bytes", ErrTooLarge, MaxFormBytes)
		}
		return fmt.Errorf("%w: the form could not be read: %v", ErrBadRequest, err)
	}
	for name, vals := range r.Form {
		limit, ok := fieldLimits[name]
		if !ok {
			return fmt.Errorf("%w: unknown field %q", ErrBadRequest, clipField(name))
		}
		if name != "id" && len(vals) > 1 {
			return fmt.Errorf("%w: %s: given %d times, want once", ErrBadRequest, name, len(vals))
		}
		for _, v := range vals {
			if err := checkField(name, v, limit); err != nil {
				return err
			}
		}
	}
	for _, name := range pathFields {
		if err := checkField(name, r.PathValue(name), fieldLimits[name]); err != nil {
			return err
		}
	}
	if m := r.Form.Get("max"); m != "" {
		if n, err := strconv.Atoi(m); err != nil || n < 1 || n > 1000 {
			return fmt.Errorf("%w: max: must be a whole number from 1 to 1000, got %q", ErrBadRequest, m)
		}
	}
	return nil
}

func checkField(name, v string, limit int) error {
	if !utf8.ValidString(v) {
		return fmt.Errorf("%w: %s: must be UTF-8 text", ErrBadRequest, name)
	}
	if len(v) > limit {
		return fmt.Errorf("%w: %s: must be at most %d bytes, got %d", ErrBadRequest, name, limit, len(v))
	}
	return nil
}

func clipField(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return string([]rune(s)) // replaces invalid UTF-8
}
