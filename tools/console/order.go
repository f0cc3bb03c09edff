package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
)

// OrderEvent is one message of an order's timeline.
type OrderEvent struct {
	Message    MessageView `json:"message"`
	Deliveries []Delivery  `json:"deliveries"`
}

// ReconcileSource is what one service answered to GET
// /v1/reconcile/runs?order_id=: the runs that dealt with the order.
type ReconcileSource struct {
	// Service names the service ("payment service"); its address is not
	// shown.
	Service string `json:"service"`
	Error   string `json:"error,omitempty"`
	// Runs is the answer when it is a list of objects (or an object with
	// one such list); Raw otherwise.
	Runs    []map[string]any `json:"runs"`
	Columns []Column         `json:"-"`
	Raw     string           `json:"raw,omitempty"`
}

// Column is a table column: the JSON key and its heading.
type Column struct{ Key, Heading string }

// headings are the human names of the reconciliation runs' fields; other
// keys are shown with their underscores as spaces.
var headings = map[string]string{
	"id": "Run", "run_id": "Run", "job": "Job", "status": "Status", "checked": "Checked", "found": "Discrepancies",
	"in_flight": "In flight", "repaired": "Repaired", "resumes": "Resumed", "last_error": "Last error",
	"started_at": "Started", "finished_at": "Finished", "discrepancies": "Discrepancies by class",
}

// heading returns the heading of a JSON key.
func heading(k string) string {
	if h, ok := headings[k]; ok {
		return h
	}
	h := strings.ReplaceAll(k, "_", " ")
	if h == "" {
		return h
	}
	return strings.ToUpper(h[:1]) + h[1:]
}

// columnOrder puts the usual fields first, in reading order.
var columnOrder = []string{"id", "run_id", "job", "status", "started_at", "finished_at", "checked", "found", "in_flight", "repaired", "resumes", "last_error"}

// OrderView is the timeline of one order id.
type OrderView struct {
	OrderID   string            `json:"orderId"`
	Topics    []string          `json:"topics"`
	Events    []OrderEvent      `json:"events"`
	Retries   int               `json:"retries"`
	DLQ       int               `json:"deadLetters"`
	Errors    []string          `json:"errors,omitempty"`
	Reconcile []ReconcileSource `json:"reconcile,omitempty"`
}

// order collects the messages of OrderTopics whose keys contain id, with
// each consuming group's delivery state, sorted by store time, and the
// reconciliation runs of the configured services.
func (s *Server) order(ctx context.Context, id string) (*OrderView, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return nil, fmt.Errorf("%w: empty order id", ErrBadRequest)
	}
	v := &OrderView{OrderID: id, Topics: s.opts.OrderTopics, Events: []OrderEvent{}}
	for _, topic := range s.opts.OrderTopics {
		ms, err := s.admin.QueryByKey(ctx, topic, id, 256, time.UnixMilli(0), time.Now().Add(time.Hour))
		if errors.Is(err, mqclient.ErrTopicNotFound) {
			continue // not created yet: nothing was sent to it
		}
		if err != nil {
			v.Errors = append(v.Errors, fmt.Sprintf("%s: %v", topic, err))
			continue
		}
		for _, m := range ms {
			// The key index matches by hash: keep exact matches only.
			if !slices.Contains(m.Keys, id) {
				continue
			}
			mv := viewOf(m)
			ev := OrderEvent{Message: mv, Deliveries: s.deliveries(ctx, mv)}
			for _, d := range ev.Deliveries {
				v.Retries += d.Retries
				if d.DLQ != "" {
					v.DLQ++
				}
			}
			v.Events = append(v.Events, ev)
		}
	}
	sort.SliceStable(v.Events, func(i, j int) bool {
		a, b := v.Events[i].Message, v.Events[j].Message
		if !a.StoreTime.Equal(b.StoreTime.Time) {
			return a.StoreTime.Before(b.StoreTime.Time)
		}
		return a.CommitLogOffset < b.CommitLogOffset
	})
	for i, e := range s.opts.ReconcileURLs {
		name, u := serviceURL(e, i)
		src := s.reconcileRuns(ctx, u, id)
		src.Service = name
		v.Reconcile = append(v.Reconcile, src)
	}
	return v, nil
}

// reconcileRuns fetches base/v1/reconcile/runs?order_id=, the runs that
// found or repaired something of the order (Tide's services filter by it).
// The answer's shape is the services' business: a list of objects (or an
// object holding one) becomes a table, anything else is shown raw. Errors
// name the service, not its address.
func (s *Server) reconcileRuns(ctx context.Context, base, orderID string) (src ReconcileSource) {
	u := strings.TrimRight(base, "/") + "/v1/reconcile/runs?order_id=" + url.QueryEscape(orderID)
	src = ReconcileSource{Runs: []map[string]any{}}
	defer func() { src.Error = hideAddress(src.Error, base) }()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		src.Error = err.Error()
		return src
	}
	resp, err := s.http.Do(req)
	if err != nil {
		src.Error = err.Error()
		return src
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		src.Error = err.Error()
		return src
	}
	if resp.StatusCode != http.StatusOK {
		src.Error = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body[:min(len(body), 200)])))
		return src
	}
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		src.Raw = string(body[:min(len(body), 2000)])
		return src
	}
	list := asObjects(doc)
	if list == nil {
		if obj, ok := doc.(map[string]any); ok {
			list = asObjects(obj["runs"])
			for _, k := range sortedKeys(obj) {
				if list != nil {
					break
				}
				list = asObjects(obj[k])
			}
		}
	}
	if list == nil {
		src.Raw = string(body[:min(len(body), 2000)])
		return src
	}
	src.Runs = list
	cols := map[string]bool{}
	for _, r := range list {
		for k := range r {
			cols[k] = true
		}
	}
	for _, k := range columnOrder {
		if cols[k] {
			src.Columns = append(src.Columns, Column{k, heading(k)})
			delete(cols, k)
		}
	}
	for _, k := range sortedKeys(cols) {
		src.Columns = append(src.Columns, Column{k, heading(k)})
	}
	return src
}

func asObjects(v any) []map[string]any {
	l, ok := v.([]any)
	if !ok {
		return nil
	}
	out := []map[string]any{}
	for _, e := range l {
		o, ok := e.(map[string]any)
		if !ok {
			return nil
		}
		out = append(out, o)
	}
	return out
}

// hideAddress removes a service's base URL and host from an error message:
// pages name services, they do not show internal addresses.
func hideAddress(msg, base string) string {
	if msg == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, strings.TrimRight(base, "/"), "")
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		msg = strings.ReplaceAll(msg, u.Host, "the service")
	}
	return msg
}
