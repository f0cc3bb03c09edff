// Package apitest sends adversarial HTTP requests to a running service
// and checks that each gets the expected error in the one error shape of
// package api (and never a 5xx or protobuf/database jargon).
package apitest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Case is one request and the error it must get.
type Case struct {
	Name   string
	Method string // POST when empty
	Path   string
	// ContentType is sent when not empty; NoContentType sends none.
	ContentType   string
	NoContentType bool
	Body          string
	// Chunked hides the body's length (no Content-Length), so the server
	// meets the limit while reading.
	Chunked bool
	Header  map[string]string
	// Code, Reason and Field (metadata "field", when not empty) are
	// expected; Code 0 expects a 2xx.
	Code   int
	Reason string
	Field  string
}

// Body is the error shape.
type Body struct {
	Code     int               `json:"code"`
	Reason   string            `json:"reason"`
	Message  string            `json:"message"`
	Metadata map[string]string `json:"metadata"`
}

// Jargon are words no client-facing message may contain.
var Jargon = []string{"proto", "int32", "int64", "unmarshal", "sql", "mariadb", "mysql", "data too long", "codec", "syntax error"}

// Run sends every case to base (http://host:port) as a subtest.
func Run(t *testing.T, base string, cases []Case) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			code, b := Do(t, base, c)
			if c.Code == 0 {
				if code/100 != 2 {
					t.Fatalf("status %d, want 2xx: %s", code, clip(b))
				}
				return
			}
			var body Body
			if err := json.Unmarshal(b, &body); err != nil {
				t.Fatalf("status %d, body is not the error shape (%v): %s", code, err, clip(b))
			}
			if code != c.Code || body.Code != c.Code || body.Reason != c.Reason || (c.Field != "" && body.Metadata["field"] != c.Field) {
				t.Fatalf("got %d %+v, want %d %s field=%q", code, body, c.Code, c.Reason, c.Field)
			}
			if body.Message == "" {
				t.Fatal("empty message")
			}
			for _, j := range Jargon {
				if strings.Contains(strings.ToLower(body.Message), j) {
					t.Errorf("message %q contains %q", body.Message, j)
				}
			}
		})
	}
}

// Do sends one case and returns the status and body.
func Do(t testing.TB, base string, c Case) (int, []byte) {
	t.Helper()
	method := c.Method
	if method == "" {
		method = http.MethodPost
	}
	var body io.Reader
	if c.Body != "" {
		body = strings.NewReader(c.Body)
		if c.Chunked {
			body = io.NopCloser(body) // hides the length
		}
	}
	req, err := http.NewRequest(method, base+c.Path, body)
	if err != nil {
		t.Fatal(err)
	}
	if c.ContentType != "" {
		req.Header.Set("Content-Type", c.ContentType)
	} else if !c.NoContentType && c.Body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range c.Header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// OversizedGRPC checks the outcome of a gRPC call whose request message
// is over the server's body limit (api.Input.GRPCMaxRecvMsgSize):
// ResourceExhausted, with a message that says the request is larger than
// the limit. gRPC refuses it before any handler runs; the service neither
// decodes nor stores anything of it, and keeps serving (check with a
// valid call after it).
func OversizedGRPC(t testing.TB, err error) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "larger than max") {
		t.Fatalf("oversized gRPC request: %v, want ResourceExhausted (received message larger than max)", err)
	}
}

// Big returns a JSON object of about n bytes: {"<field>":"xxx…"}.
func Big(field string, n int) string {
	return `{"` + field + `":"` + strings.Repeat("x", n) + `"}`
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
