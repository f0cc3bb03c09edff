package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The services' public HTTP APIs, as a user (or the demo) calls them.

var httpc = &http.Client{Timeout: 20 * time.Second}

// apiError is a non-2xx answer: Kratos errors carry a reason.
type apiError struct {
	Status int
	Reason string `json:"reason"`
	Msg    string `json:"message"`
	Body   string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("HTTP %d %s: %s", e.Status, e.Reason, e.Body)
}

// errUnreachable wraps transport errors (connection refused or reset:
// the process is down or crashed mid-request).
var errUnreachable = errors.New("service unreachable")

// call sends one request to service svc; out (if not nil) receives the
// JSON answer. It does not retry.
func (s *stack) call(ctx context.Context, svc, method, path string, hdr map[string]string, in, out any) error {
	ep, err := s.endpoint(ctx, svc, servicePorts[baseService(svc)])
	if err != nil {
		return fmt.Errorf("%w: %v", errUnreachable, err)
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+ep+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := httpc.Do(req)
	if err != nil {
		s.invalidate(svc)
		return fmt.Errorf("%w: %s %s: %v", errUnreachable, method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.invalidate(svc)
		return fmt.Errorf("%w: %s %s: %v", errUnreachable, method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		e := &apiError{Status: resp.StatusCode, Body: strings.TrimSpace(string(b))}
		_ = json.Unmarshal(b, e)
		return e
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decode %q: %w", method, path, b, err)
		}
	}
	return nil
}

// baseService maps an instance name ("inventory-2") to its service.
func baseService(name string) string {
	for svc := range servicePorts {
		if strings.HasPrefix(name, svc) {
			return svc
		}
	}
	return name
}

func reasonOf(err error) string {
	var e *apiError
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

func statusOf(err error) int {
	var e *apiError
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// int64s travel as JSON strings (protojson); accept both.
type i64 int64

func (v *i64) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*v = 0
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	*v = i64(n)
	return err
}

type item struct {
	ProductID string `json:"product_id"`
	Quantity  int    `json:"quantity"`
	UnitPrice int64  `json:"unit_price,string"`
}

type orderInfo struct {
	ID           string    `json:"id"`
	UserID       string    `json:"userId"`
	Status       string    `json:"status"`
	TotalAmount  i64       `json:"totalAmount"`
	CancelAt     time.Time `json:"cancelAt"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
	CancelReason string    `json:"cancelReason"`
}

type timelineEntry struct {
	Event  string    `json:"event"`
	Topic  string    `json:"topic"`
	Seq    i64       `json:"seq"`
	Status string    `json:"status"`
	Detail string    `json:"detail"`
	At     time.Time `json:"at"`
}

// short order statuses: "ORDER_STATUS_PAID" -> "PAID"
func short(st string) string {
	st = strings.TrimPrefix(st, "ORDER_STATUS_")
	return strings.TrimPrefix(st, "PAYMENT_STATUS_")
}

// createOrder places an order through the order API. Transient failures
// (503, unreachable) are retried until ctx ends: a client would do that.
func (s *stack) createOrder(ctx context.Context, user string, items ...item) (orderInfo, error) {
	var out struct {
		Order orderInfo `json:"order"`
	}
	err := retryTransient(ctx, func() error {
		return s.call(ctx, "order", http.MethodPost, "/v1/orders", nil, map[string]any{"user_id": user, "items": items}, &out)
	})
	out.Order.Status = short(out.Order.Status)
	return out.Order, err
}

func (s *stack) getOrder(ctx context.Context, id string) (orderInfo, []timelineEntry, error) {
	var out struct {
		Order    orderInfo       `json:"order"`
		Timeline []timelineEntry `json:"timeline"`
	}
	err := retryTransient(ctx, func() error {
		return s.call(ctx, "order", http.MethodGet, "/v1/orders/"+id, nil, nil, &out)
	})
	out.Order.Status = short(out.Order.Status)
	for i := range out.Timeline {
		out.Timeline[i].Status = short(out.Timeline[i].Status)
	}
	return out.Order, out.Timeline, err
}

// waitOrder polls the order until its status is one of want.
func (s *stack) waitOrder(ctx context.Context, id string, want ...string) (orderInfo, error) {
	var last orderInfo
	for {
		o, _, err := s.getOrder(ctx, id)
		if err == nil {
			last = o
			for _, w := range want {
				if o.Status == w {
					return o, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("order %s: status %q, want one of %v: %w", id, last.Status, want, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

type paymentInfo struct {
	ID      string `json:"id"`
	OrderID string `json:"orderId"`
	UserID  string `json:"userId"`
	Amount  i64    `json:"amount"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
}

// pay sends one payment request (no retry: scenarios decide).
func (s *stack) pay(ctx context.Context, key, orderID, user string, amount int64) (paymentInfo, error) {
	var out struct {
		Payment paymentInfo `json:"payment"`
	}
	err := s.call(ctx, "payment", http.MethodPost, "/v1/payments", map[string]string{"Idempotency-Key": key},
		map[string]any{"order_id": orderID, "user_id": user, "amount": strconv.FormatInt(amount, 10)}, &out)
	out.Payment.Status = short(out.Payment.Status)
	return out.Payment, err
}

// payRetrying retries transient failures with the same key, as a client
// with an idempotency key does. Business errors end it.
func (s *stack) payRetrying(ctx context.Context, key, orderID, user string, amount int64) (paymentInfo, error) {
	var p paymentInfo
	err := retryTransient(ctx, func() error {
		var err error
		p, err = s.pay(ctx, key, orderID, user, amount)
		return err
	})
	return p, err
}

// retryTransient runs f until it succeeds, fails with a final (4xx other
// than 409 in-progress) error, or ctx ends.
func retryTransient(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil || !transient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func transient(err error) bool {
	if errors.Is(err, errUnreachable) {
		return true
	}
	st := statusOf(err)
	return st >= 500 || st == 0 && err != nil || reasonOf(err) == "IDEMPOTENCY_KEY_IN_PROGRESS"
}

// fault is one runtime fault switch (contract.md).
type fault struct {
	Name      string `json:"name"`
	Enabled   bool   `json:"enabled"`
	Remaining i64    `json:"remaining"`
	Delay     string `json:"delay"`
}

// setFault arms fault name on instance svc: count 0 = every time.
// A service without the runtime switch (404/405) skips the test.
func (s *stack) setFault(t *testing.T, ctx context.Context, svc, name string, count int, delay time.Duration) {
	t.Helper()
	if err := s.armFault(t, ctx, svc, name, count, delay); err != nil {
		t.Skipf("%v: contract.md fault switches not landed yet", err)
	}
}

// errNoFault: the service has no such runtime fault switch.
var errNoFault = errors.New("no runtime fault switch")

// armFault is setFault for optional faults: it returns errNoFault (wrapped)
// when the service lacks the switch and fails the test on other errors.
func (s *stack) armFault(t *testing.T, ctx context.Context, svc, name string, count int, delay time.Duration) error {
	t.Helper()
	body := map[string]any{"enabled": true, "count": count}
	if delay > 0 {
		body["delay"] = delay.String()
	}
	err := retryTransient(ctx, func() error {
		return s.call(ctx, svc, http.MethodPut, "/v1/faults/"+name, nil, body, nil)
	})
	if st := statusOf(err); st == http.StatusNotFound || st == http.StatusMethodNotAllowed || st == http.StatusBadRequest {
		return fmt.Errorf("%s: %w %q (PUT /v1/faults/%s -> %v)", svc, errNoFault, name, name, err)
	}
	if err != nil {
		t.Fatalf("arm fault %s on %s: %v", name, svc, err)
	}
	t.Logf("fault %s armed on %s (count %d)", name, svc, count)
	return nil
}

// clearFaults switches every runtime fault off on every service instance
// (ignores services without the switch).
func (s *stack) clearFaults(ctx context.Context) {
	s.mu.Lock()
	var names []string
	for n := range s.nodes {
		if _, ok := servicePorts[baseService(n)]; ok {
			names = append(names, n)
		}
	}
	s.mu.Unlock()
	for _, n := range names {
		_ = retryTransient(ctx, func() error {
			err := s.call(ctx, n, http.MethodDelete, "/v1/faults", nil, nil, nil)
			if statusOf(err) == http.StatusNotFound || statusOf(err) == http.StatusMethodNotAllowed {
				return nil
			}
			return err
		})
	}
}

// reconcileReport is POST /v1/reconcile/{job}'s answer.
type reconcileReport struct {
	RunID         any    `json:"run_id"` // number or string
	Job           string `json:"job"`
	DryRun        bool   `json:"dry_run"`
	Discrepancies []struct {
		Class    string `json:"class"`
		Key      string `json:"key"`
		Evidence any    `json:"evidence"`
		Repair   any    `json:"repair"`
	} `json:"discrepancies"`
	Repaired int `json:"repaired"`
}

func (s *stack) reconcile(t *testing.T, ctx context.Context, svc, job string, dryRun bool) reconcileReport {
	t.Helper()
	var r reconcileReport
	err := retryTransient(ctx, func() error {
		return s.call(ctx, svc, http.MethodPost, "/v1/reconcile/"+job, nil, map[string]any{"dry_run": dryRun}, &r)
	})
	if st := statusOf(err); st == http.StatusNotFound || st == http.StatusMethodNotAllowed {
		t.Skipf("%s has no POST /v1/reconcile/%s (%v): contract.md reconciliation not landed yet", svc, job, err)
	}
	if err != nil {
		t.Fatalf("reconcile %s on %s: %v", job, svc, err)
	}
	return r
}
