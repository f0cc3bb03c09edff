package console

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestCheckInput(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name   string
		method string
		target string
		form   url.Values
		body   io.Reader // raw body instead of form
		length int64
		want   error
		inMsg  string
	}{
		{name: "plain search", method: "GET", target: "/messages?topic=order-events&key=k1&max=10"},
		{name: "resend form", method: "POST", target: "/dlq/resend", form: url.Values{"group": {"g"}, "id": {"a", "b"}, "target": {"origin"}}},
		{name: "topic 128 bytes", method: "GET", target: "/messages?topic=" + long(128), want: ErrBadRequest, inMsg: "topic: must be at most 127 bytes, got 128"},
		{name: "group 256 bytes", method: "POST", target: "/dlq/resend", form: url.Values{"group": {long(256)}}, want: ErrBadRequest, inMsg: "group: must be at most 255 bytes"},
		{name: "id 65 bytes", method: "GET", target: "/message?id=" + long(65), want: ErrBadRequest, inMsg: "id: must be at most 64 bytes"},
		{name: "max 0", method: "GET", target: "/messages?topic=t&key=k&max=0", want: ErrBadRequest, inMsg: "max: must be a whole number from 1 to 1000"},
		{name: "max 1e6", method: "GET", target: "/messages?topic=t&key=k&max=1e6", want: ErrBadRequest, inMsg: "max:"},
		{name: "max 99999999999", method: "GET", target: "/messages?topic=t&key=k&max=99999999999", want: ErrBadRequest, inMsg: "max:"},
		{name: "max -1", method: "GET", target: "/messages?topic=t&key=k&max=-1", want: ErrBadRequest, inMsg: "max:"},
		{name: "unknown field", method: "GET", target: "/messages?topik=t", want: ErrBadRequest, inMsg: `unknown field "topik"`},
		{name: "topic twice", method: "GET", target: "/messages?topic=a&topic=b", want: ErrBadRequest, inMsg: "given 2 times"},
		{name: "not UTF-8", method: "GET", target: "/messages?key=%ff", want: ErrBadRequest, inMsg: "UTF-8"},
		{name: "declared body too large", method: "POST", target: "/dlq/resend", body: strings.NewReader("x"), length: MaxFormBytes + 1, want: ErrTooLarge},
		{name: "body too large", method: "POST", target: "/dlq/resend", body: strings.NewReader("id=" + long(MaxFormBytes)), length: -1, want: ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r *http.Request
			switch {
			case tt.body != nil:
				r = httptest.NewRequest(tt.method, tt.target, tt.body)
				r.ContentLength = tt.length
				r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			case tt.form != nil:
				r = httptest.NewRequest(tt.method, tt.target, strings.NewReader(tt.form.Encode()))
				r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			default:
				r = httptest.NewRequest(tt.method, tt.target, nil)
			}
			err := checkInput(httptest.NewRecorder(), r)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.inMsg) {
				t.Fatalf("got %v, want %v containing %q", err, tt.want, tt.inMsg)
			}
			if code := statusOf(err); code != 400 && code != 413 {
				t.Fatalf("status %d", code)
			}
		})
	}
}
