package middleware

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
)

func msg() *mqclient.MessageExt { return &mqclient.MessageExt{MsgID: "id"} }

func TestRetry(t *testing.T) {
	cases := []struct {
		name      string
		failures  int
		err       error
		max       int
		wantCalls int
		wantErr   bool
	}{
		{"succeeds after retries", 2, errors.New("x"), 3, 3, false},
		{"gives up", 10, errors.New("x"), 2, 3, true},
		{"permanent not retried", 10, Permanent(errors.New("x")), 5, 1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			h := Retry{MaxRetries: c.max, InitialInterval: time.Millisecond}.Middleware()(func(ctx context.Context, m *mqclient.MessageExt) error {
				calls++
				if calls <= c.failures {
					return c.err
				}
				return nil
			})
			err := h(context.Background(), msg())
			if (err != nil) != c.wantErr || calls != c.wantCalls {
				t.Fatalf("err %v calls %d", err, calls)
			}
		})
	}
}

func TestRetryStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := Retry{MaxRetries: 100, InitialInterval: time.Hour}.Middleware()(func(ctx context.Context, m *mqclient.MessageExt) error {
		cancel()
		return errors.New("x")
	})
	if err := h(ctx, msg()); err == nil {
		t.Fatal("want the last error")
	}
}

func TestTimeout(t *testing.T) {
	h := Timeout(10 * time.Millisecond)(func(ctx context.Context, m *mqclient.MessageExt) error {
		<-ctx.Done()
		return ctx.Err()
	})
	if err := h(context.Background(), msg()); !errors.Is(err, ErrTimeout) {
		t.Fatalf("got %v", err)
	}
}

func TestRecover(t *testing.T) {
	h := Recover(nil)(func(ctx context.Context, m *mqclient.MessageExt) error { panic("boom") })
	var pe *mqclient.PanicError
	if err := h(context.Background(), msg()); !errors.As(err, &pe) || pe.Value != "boom" {
		t.Fatalf("got %v", err)
	}
}

func TestDuplicate(t *testing.T) {
	calls := 0
	h := Duplicate()(func(ctx context.Context, m *mqclient.MessageExt) error { calls++; return nil })
	if err := h(context.Background(), msg()); err != nil || calls != 2 {
		t.Fatalf("err %v calls %d", err, calls)
	}
}
