package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// OrderStatuses are the statuses the Orders list filters by (the order
// service's, without the ORDER_STATUS_ prefix).
var OrderStatuses = []string{"CREATED", "RESERVED", "PAID", "CANCELLED"}

// ordersPage is how many orders the Orders list shows at a time.
const ordersPage = 20

// OrderSummary is one row of the Orders list.
type OrderSummary struct {
	ID     string `json:"id"`
	UserID string `json:"userId"`
	Status string `json:"status"` // CREATED, RESERVED, PAID or CANCELLED
	// Total is the order's total in cents.
	Total     int64     `json:"totalAmount,string"`
	CreatedAt time.Time `json:"createdAt"`
}

// OrdersView is the Orders page: the filter, one page of the most recent
// orders from the order service, and the token of the next page.
type OrdersView struct {
	Status   string         `json:"status"`
	UserID   string         `json:"userId"`
	Statuses []string       `json:"-"`
	Orders   []OrderSummary `json:"orders"`
	// Next is the page token of older orders; "" on the last page.
	Next string `json:"next,omitempty"`
	// Configured is false when the console has no order service URL.
	Configured bool `json:"configured"`
}

// orders asks the order service for one page of orders (GET /v1/orders),
// newest first, filtered by status and user. A bad filter is
// ErrBadRequest; an unreachable or failing service is reported without
// its address.
func (s *Server) orders(ctx context.Context, status, user, page string) (*OrdersView, error) {
	status, user, page = strings.ToUpper(strings.TrimSpace(status)), strings.TrimSpace(user), strings.TrimSpace(page)
	v := &OrdersView{Status: status, UserID: user, Statuses: OrderStatuses, Orders: []OrderSummary{}, Configured: s.opts.OrderURL != ""}
	switch {
	case status != "" && !contains(OrderStatuses, status):
		return v, fmt.Errorf("%w: status %q is not one of %s", ErrBadRequest, status, strings.Join(OrderStatuses, ", "))
	case len(user) > 64:
		return v, fmt.Errorf("%w: user id longer than 64 bytes", ErrBadRequest)
	case len(page) > 64:
		return v, fmt.Errorf("%w: page token longer than 64 bytes", ErrBadRequest)
	case !v.Configured:
		return v, nil
	}
	q := url.Values{"limit": {fmt.Sprint(ordersPage)}}
	for k, val := range map[string]string{"status": status, "user_id": user, "page_token": page} {
		if val != "" {
			q.Set(k, val)
		}
	}
	base := strings.TrimRight(s.opts.OrderURL, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/orders?"+q.Encode(), nil)
	if err != nil {
		return v, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return v, fmt.Errorf("order service: %s", hideAddress(err.Error(), base))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return v, fmt.Errorf("order service: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Reason, Message string }
		json.Unmarshal(body, &e)
		err := fmt.Errorf("order service: HTTP %d %s %s", resp.StatusCode, e.Reason, e.Message)
		if resp.StatusCode == http.StatusBadRequest {
			err = fmt.Errorf("%w: %w", ErrBadRequest, err)
		}
		return v, err
	}
	var out struct {
		Orders        []OrderSummary `json:"orders"`
		NextPageToken string         `json:"nextPageToken"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return v, fmt.Errorf("order service: unexpected answer: %w", err)
	}
	for _, o := range out.Orders {
		o.Status = strings.TrimPrefix(o.Status, "ORDER_STATUS_")
		v.Orders = append(v.Orders, o)
	}
	v.Next = out.NextPageToken
	return v, nil
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
