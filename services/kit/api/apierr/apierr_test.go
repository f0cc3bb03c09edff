package apierr

import (
	"testing"

	"github.com/go-kratos/kratos/v2/errors"
)

// TestErrors pins what clients see of the shared errors: the HTTP code,
// the reason and the message.
func TestErrors(t *testing.T) {
	for _, tt := range []struct {
		name            string
		err             *errors.Error
		code            int32
		reason, message string
	}{
		{"invalid argument", ErrInvalidArgument, 400, "INVALID_ARGUMENT", "invalid argument"},
		{"unavailable", Unavailable("db down"), 503, "UNAVAILABLE", "db down"},
	} {
		if tt.err.Code != tt.code || tt.err.Reason != tt.reason || tt.err.Message != tt.message {
			t.Errorf("%s: %d %s %q, want %d %s %q", tt.name, tt.err.Code, tt.err.Reason, tt.err.Message, tt.code, tt.reason, tt.message)
		}
	}
	// A service's own message with a shared reason still matches.
	if !errors.Is(errors.BadRequest(ReasonInvalidArgument, "invalid order"), ErrInvalidArgument) {
		t.Error("an INVALID_ARGUMENT with another message does not match ErrInvalidArgument")
	}
}
