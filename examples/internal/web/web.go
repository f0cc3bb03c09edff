// Package web holds the few HTTP helpers the examples share: JSON in and
// out, and one error shape ({"error": "...", "reason": "..."}).
package web

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// MaxBody bounds a request body (bytes).
const MaxBody = 64 << 10

// JSON writes v with status.
func JSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// Error writes {"reason": reason, "error": msg} with status.
func Error(w http.ResponseWriter, status int, reason, msg string) {
	JSON(w, status, map[string]string{"reason": reason, "error": msg})
}

// Decode reads a JSON body of at most MaxBody bytes into v, refusing
// unknown fields and trailing data.
func Decode(r *http.Request, v any) error {
	d := json.NewDecoder(io.LimitReader(r.Body, MaxBody))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("bad JSON body: %w", err)
	}
	if d.More() {
		return fmt.Errorf("bad JSON body: trailing data")
	}
	return nil
}
