package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawCall is one hand-made request to a service's HTTP API: the body,
// Content-Type and headers exactly as given (call always sends JSON).
type rawCall struct {
	name, svc, method, path string
	contentType             string // "" sends none
	body                    string
	chunked                 bool // no Content-Length
	hdr                     map[string]string
	wantStatus              int
	wantReason              string
	wantField               string // metadata "field", when not empty
}

// send sends c and returns the status and the decoded error body.
func (s *stack) send(ctx context.Context, c rawCall) (int, apiErrorBody, error) {
	ep, err := s.endpoint(ctx, c.svc, servicePorts[baseService(c.svc)])
	if err != nil {
		return 0, apiErrorBody{}, err
	}
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
		if c.chunked {
			body = io.NopCloser(body)
		}
	}
	req, err := http.NewRequestWithContext(ctx, c.method, "http://"+ep+c.path, body)
	if err != nil {
		return 0, apiErrorBody{}, err
	}
	if c.contentType != "" {
		req.Header.Set("Content-Type", c.contentType)
	}
	for k, v := range c.hdr {
		req.Header.Set(k, v)
	}
	resp, err := httpc.Do(req)
	if err != nil {
		return 0, apiErrorBody{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e apiErrorBody
	if err := json.Unmarshal(b, &e); err != nil && resp.StatusCode/100 != 2 {
		return resp.StatusCode, e, fmt.Errorf("HTTP %d answer is not the error shape: %q", resp.StatusCode, b)
	}
	return resp.StatusCode, e, nil
}

type apiErrorBody struct {
	Code     int               `json:"code"`
	Reason   string            `json:"reason"`
	Message  string            `json:"message"`
	Metadata map[string]string `json:"metadata"`
}

// 13. Adversarial API calls: oversized and malformed bodies, wrong
// content types, out-of-range and too-long fields, and payments the order
// does not allow. Each gets its 4xx with a reason (and the field), never
// a 5xx; nothing of it moves money or stock (the invariant check).
func TestAdversarialAPICalls(t *testing.T) {
	s, ctx := begin(t, 5*time.Minute)
	const js = "application/json"
	long := strings.Repeat("x", 65)
	big := `{"user_id":"` + strings.Repeat("x", 5<<20) + `"}`
	order := func(q string) string {
		return `{"user_id":"u-carol","items":[{"product_id":"p-apple","quantity":` + q + `,"unit_price":"120"}]}`
	}
	key := func() map[string]string { return map[string]string{"Idempotency-Key": idemKey("adv")} }
	calls := []rawCall{
		{name: "order: 5 MB body", svc: "order", method: "POST", path: "/v1/orders", contentType: js, body: big, wantStatus: 413, wantReason: "BODY_TOO_LARGE"},
		{name: "order: 5 MB chunked body", svc: "order", method: "POST", path: "/v1/orders", contentType: js, body: big, chunked: true, wantStatus: 413, wantReason: "BODY_TOO_LARGE"},
		{name: "order: form content type", svc: "order", method: "POST", path: "/v1/orders", contentType: "application/x-www-form-urlencoded", body: order("1"), wantStatus: 415, wantReason: "UNSUPPORTED_MEDIA_TYPE"},
		{name: "order: XML content type", svc: "order", method: "POST", path: "/v1/orders", contentType: "application/xml", body: "<order/>", wantStatus: 415, wantReason: "UNSUPPORTED_MEDIA_TYPE"},
		{name: "order: malformed JSON", svc: "order", method: "POST", path: "/v1/orders", contentType: js, body: `{"user_id":"u-carol",`, wantStatus: 400, wantReason: "MALFORMED_BODY"},
		{name: "order: malformed JSON without content type", svc: "order", method: "POST", path: "/v1/orders", body: `{user_id: u-carol}`, wantStatus: 400, wantReason: "MALFORMED_BODY"},
		{name: "order: unknown field", svc: "order", method: "POST", path: "/v1/orders", contentType: js, body: `{"user":"u-carol"}`, wantStatus: 400, wantReason: "INVALID_ARGUMENT", wantField: "user"},
		{name: "order: user_id of 65 bytes", svc: "order", method: "POST", path: "/v1/orders", contentType: js, body: `{"user_id":"` + long + `","items":[{"product_id":"p-apple","quantity":1}]}`, wantStatus: 400, wantReason: "INVALID_ARGUMENT", wantField: "user_id"},
		{name: "order: product_id of 65 bytes", svc: "order", method: "POST", path: "/v1/orders", contentType: js, body: `{"user_id":"u-carol","items":[{"product_id":"` + long + `","quantity":1}]}`, wantStatus: 400, wantReason: "INVALID_ARGUMENT", wantField: "items[0].product_id"},
		{name: "order: quantity 0", svc: "order", method: "POST", path: "/v1/orders", contentType: js, body: order("0"), wantStatus: 400, wantReason: "INVALID_ARGUMENT", wantField: "items[0].quantity"},
		{name: "order: quantity -1", svc: "order", method: "POST", path: "/v1/orders", contentType: js, body: order("-1"), wantStatus: 400, wantReason: "INVALID_ARGUMENT", wantField: "items[0].quantity"},
		{name: "order: quantity 1e6", svc: "order", method: "POST", path: "/v1/orders", contentType: js, body: order("1e6"), wantStatus: 400, wantReason: "INVALID_ARGUMENT", wantField: "items[0].quantity"},
		{name: "order: quantity 99999999999", svc: "order", method: "POST", path: "/v1/orders", contentType: js, body: order("99999999999"), wantStatus: 400, wantReason: "INVALID_ARGUMENT", wantField: "items[0].quantity"},
		{name: "order: GET id of 65 bytes", svc: "order", method: "GET", path: "/v1/orders/" + long, wantStatus: 400, wantReason: "INVALID_ARGUMENT", wantField: "id"},
		{name: "order: GET unknown", svc: "order", method: "GET", path: "/v1/orders/00000000-0000-0000-0000-000000000000", wantStatus: 404, wantReason: "ORDER_NOT_FOUND"},
		{name: "payment: 5 MB body", svc: "payment", method: "POST", path: "/v1/payments", contentType: js, body: big, hdr: key(), wantStatus: 413, wantReason: "BODY_TOO_LARGE"},
		{name: "payment: text content type", svc: "payment", method: "POST", path: "/v1/payments", contentType: "text/plain", body: `{"order_id":"o","user_id":"u-carol","amount":1}`, hdr: key(), wantStatus: 415, wantReason: "UNSUPPORTED_MEDIA_TYPE"},
		{name: "payment: malformed JSON", svc: "payment", method: "POST", path: "/v1/payments", contentType: js, body: `[`, hdr: key(), wantStatus: 400, wantReason: "MALFORMED_BODY"},
		{name: "payment: amount 0", svc: "payment", method: "POST", path: "/v1/payments", contentType: js, body: `{"order_id":"o","user_id":"u-carol","amount":0}`, hdr: key(), wantStatus: 400, wantReason: "INVALID_ARGUMENT", wantField: "amount"},
		{name: "payment: amount -1", svc: "payment", method: "POST", path: "/v1/payments", contentType: js, body: `{"order_id":"o","user_id":"u-carol","amount":-1}`, hdr: key(), wantStatus: 400, wantReason: "INVALID_ARGUMENT", wantField: "amount"},
		{name: "payment: amount over int64", svc: "payment", method: "POST", path: "/v1/payments", contentType: js, body: `{"order_id":"o","user_id":"u-carol","amount":"99999999999999999999"}`, hdr: key(), wantStatus: 400, wantReason: "INVALID_ARGUMENT", wantField: "amount"},
		{name: "payment: user_id of 65 bytes", svc: "payment", method: "POST", path: "/v1/payments", contentType: js, body: `{"order_id":"o","user_id":"` + long + `","amount":1}`, hdr: key(), wantStatus: 400, wantReason: "INVALID_ARGUMENT", wantField: "user_id"},
		{name: "payment: Idempotency-Key of 129 bytes", svc: "payment", method: "POST", path: "/v1/payments", contentType: js, body: `{"order_id":"o","user_id":"u-carol","amount":1}`, hdr: map[string]string{"Idempotency-Key": strings.Repeat("k", 129)}, wantStatus: 400, wantReason: "INVALID_ARGUMENT", wantField: "Idempotency-Key"},
		{name: "payment: unknown order", svc: "payment", method: "POST", path: "/v1/payments", contentType: js, body: `{"order_id":"00000000-0000-0000-0000-000000000000","user_id":"u-carol","amount":120}`, hdr: key(), wantStatus: 404, wantReason: "ORDER_NOT_FOUND"},
		{name: "inventory: page_size -1", svc: "inventory", method: "GET", path: "/v1/products?page_size=-1", wantStatus: 400, wantReason: "INVALID_ARGUMENT", wantField: "page_size"},
		{name: "inventory: page_size 99999999999", svc: "inventory", method: "GET", path: "/v1/products?page_size=99999999999", wantStatus: 400, wantReason: "INVALID_ARGUMENT", wantField: "page_size"},
		{name: "inventory: id of 65 bytes", svc: "inventory", method: "GET", path: "/v1/products/" + long, wantStatus: 400, wantReason: "INVALID_ARGUMENT", wantField: "id"},
	}

	// Payments the order does not allow, against a real reserved order.
	o := placeReserved(t, ctx, s, "u-carol", apple(1))
	total := int64(o.TotalAmount)
	pay := func(user string, amount int64) string {
		return fmt.Sprintf(`{"order_id":%q,"user_id":%q,"amount":"%d"}`, o.ID, user, amount)
	}
	calls = append(calls,
		rawCall{name: "payment: underpay", svc: "payment", method: "POST", path: "/v1/payments", contentType: js, body: pay("u-carol", total-1), hdr: key(), wantStatus: 400, wantReason: "AMOUNT_MISMATCH"},
		rawCall{name: "payment: overpay", svc: "payment", method: "POST", path: "/v1/payments", contentType: js, body: pay("u-carol", total+1), hdr: key(), wantStatus: 400, wantReason: "AMOUNT_MISMATCH"},
		rawCall{name: "payment: other user's order", svc: "payment", method: "POST", path: "/v1/payments", contentType: js, body: pay("u-bob", total), hdr: key(), wantStatus: 403, wantReason: "ORDER_NOT_OWNED"},
	)
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			var (
				code int
				body apiErrorBody
				err  error
			)
			// A transport error (the service restarting after an earlier
			// scenario) is retried; an answer is judged as it is.
			for range 20 {
				if code, body, err = s.send(ctx, c); code != 0 || ctx.Err() != nil {
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
			if err != nil {
				t.Fatal(err)
			}
			if code >= 500 {
				t.Fatalf("HTTP %d %+v for a client mistake", code, body)
			}
			if code != c.wantStatus || body.Reason != c.wantReason || (c.wantField != "" && body.Metadata["field"] != c.wantField) {
				t.Fatalf("HTTP %d %+v, want %d %s field=%q", code, body, c.wantStatus, c.wantReason, c.wantField)
			}
			for _, j := range []string{"proto", "int32", "int64", "sql", "data too long", "codec"} {
				if strings.Contains(strings.ToLower(body.Message), j) {
					t.Errorf("message %q contains %q", body.Message, j)
				}
			}
		})
	}

	// The order is still payable by its user at its total, once.
	if _, err := s.payRetrying(ctx, idemKey("adv-ok"), o.ID, "u-carol", total); err != nil {
		t.Fatalf("paying the order after the refusals: %v", err)
	}
	if _, err := s.waitOrder(ctx, o.ID, "PAID"); err != nil {
		t.Fatal(err)
	}
	_, err := s.pay(ctx, idemKey("adv-twice"), o.ID, "u-carol", total)
	if statusOf(err) != 409 || reasonOf(err) != "ORDER_ALREADY_PAID" {
		t.Fatalf("second payment of a paid order: %v, want 409 ORDER_ALREADY_PAID", err)
	}
}
