package api

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-kratos/kratos/v2/errors"
	"github.com/go-kratos/kratos/v2/log"
	"github.com/go-kratos/kratos/v2/transport"
)

// fakeTransport is the transport.Transporter of a request of kind.
type fakeTransport struct{ kind transport.Kind }

func (f fakeTransport) Kind() transport.Kind            { return f.kind }
func (f fakeTransport) Endpoint() string                { return "" }
func (f fakeTransport) Operation() string               { return "/test.v1.Test/Do" }
func (f fakeTransport) RequestHeader() transport.Header { return nil }
func (f fakeTransport) ReplyHeader() transport.Header   { return nil }

// TestLoggingOnce: every request is logged exactly once, a client mistake
// at WARN and a failure at ERROR, whether it fails in a handler (gRPC:
// Logging logs it) or reaches the HTTP error encoder (EncodeError logs it;
// Logging does not log it again).
func TestLoggingOnce(t *testing.T) {
	tests := []struct {
		name      string
		kind      transport.Kind
		err       error
		wantLevel string // "" = not logged by the middleware
	}{
		{"gRPC ok", transport.KindGRPC, nil, "INFO"},
		{"gRPC client mistake", transport.KindGRPC, errors.BadRequest("INVALID_ARGUMENT", "user_id: required"), "WARN"},
		{"gRPC not found", transport.KindGRPC, errors.NotFound("ORDER_NOT_FOUND", "no such order"), "WARN"},
		{"gRPC failure", transport.KindGRPC, errors.ServiceUnavailable("UNAVAILABLE", "db down"), "ERROR"},
		{"gRPC plain error", transport.KindGRPC, context.DeadlineExceeded, "ERROR"},
		{"HTTP ok", transport.KindHTTP, nil, "INFO"},
		{"HTTP client mistake", transport.KindHTTP, errors.BadRequest("INVALID_ARGUMENT", "x"), ""},
		{"HTTP failure", transport.KindHTTP, errors.ServiceUnavailable("UNAVAILABLE", "x"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logged bytes.Buffer
			in := New(Options{Logger: log.NewStdLogger(&logged)}, nil)
			h := in.Logging()(func(context.Context, any) (any, error) { return nil, tt.err })
			ctx := transport.NewServerContext(context.Background(), fakeTransport{tt.kind})
			if _, err := h(ctx, nil); err != tt.err {
				t.Fatalf("err %v, want %v", err, tt.err)
			}
			lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
			if tt.wantLevel == "" {
				if logged.Len() != 0 {
					t.Fatalf("logged %q, want nothing (the error encoder logs HTTP errors)", logged.String())
				}
				return
			}
			if len(lines) != 1 || !strings.HasPrefix(lines[0], tt.wantLevel+" ") {
				t.Fatalf("logged %q, want one %s line", logged.String(), tt.wantLevel)
			}
		})
	}
}

// TestEncodeErrorLogsOnce: the HTTP error encoder logs a client mistake
// once at WARN and a failure once at ERROR.
func TestEncodeErrorLogsOnce(t *testing.T) {
	for _, tt := range []struct {
		err   error
		level string
	}{
		{errors.BadRequest("INVALID_ARGUMENT", "quantity: must be 1 to 1000"), "WARN"},
		{TooLarge(16), "WARN"},
		{errors.ServiceUnavailable("UNAVAILABLE", "db down"), "ERROR"},
	} {
		var logged bytes.Buffer
		in := New(Options{Logger: log.NewStdLogger(&logged)}, nil)
		in.EncodeError(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/x", nil), tt.err)
		lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
		if len(lines) != 1 || !strings.HasPrefix(lines[0], tt.level+" ") {
			t.Errorf("%v: logged %q, want one %s line", tt.err, logged.String(), tt.level)
		}
	}
}
