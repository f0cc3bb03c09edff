package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	nethttp "net/http"
	"strings"
	"time"

	kerrors "github.com/go-kratos/kratos/v2/errors"
	kgrpc "github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/kratosmq"
	"github.com/tidemq/tide/services/inventory/internal/biz"
	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/inventory/internal/data"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/reconcile"
)

// Discrepancy classes of the reservations job.
const (
	// ClassOrphan: a RESERVED reservation whose order does not exist.
	ClassOrphan reconcile.Class = "reservation_without_order"
	// ClassCancelled: a RESERVED reservation of a CANCELLED order (its
	// OrderCancelled was lost or dead-lettered).
	ClassCancelled reconcile.Class = "reservation_of_cancelled_order"
	// ClassPaid: a RESERVED reservation of a PAID order (OrderPaid lost):
	// reported, not repaired (a sale needs the payment's event).
	ClassPaid reconcile.Class = "reservation_of_paid_order"
)

// ActionRelease is the repair of orphan and cancelled reservations.
const ActionRelease = "release"

// JobReservations is the reservations job's name.
const JobReservations = "reservations"

// OrderLookup reads an order's status from the order service; found is
// false when the order does not exist.
type OrderLookup interface {
	OrderStatus(ctx context.Context, id string) (status orderv1.OrderStatus, found bool, err error)
}

type grpcOrders struct{ c orderv1.OrderClient }

func (g grpcOrders) OrderStatus(ctx context.Context, id string) (orderv1.OrderStatus, bool, error) {
	r, err := g.c.GetOrder(ctx, &orderv1.GetOrderRequest{Id: id})
	if kerrors.IsNotFound(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return r.GetOrder().GetStatus(), true, nil
}

// ReservationsJob compares inventory's RESERVED reservations with the
// order service's orders (an independent source: its own database, read
// through its gRPC API). A reservation is live only while its order is
// CREATED or RESERVED. One without an order, or of a cancelled order, is
// released through the same idempotent flow as an OrderCancelled event:
// the Release command (stock back, StockReleased in the outbox) runs in
// one transaction with an idempotent dedup record keyed by the repair's
// idempotency key. Reservations changed within the grace window are in
// flight.
type ReservationsJob struct {
	data   *data.Data
	orders OrderLookup
	uc     *biz.StockUsecase
	store  *idempotent.Store
	grace  time.Duration
}

// Name implements reconcile.Job.
func (j *ReservationsJob) Name() string { return JobReservations }

// Check implements reconcile.Job: one page of RESERVED reservations.
func (j *ReservationsJob) Check(ctx context.Context, s reconcile.Scan) (reconcile.Page, error) {
	rows, err := j.data.ReservedAfter(ctx, s.Cursor, s.Limit)
	if err != nil {
		return reconcile.Page{}, err
	}
	page := reconcile.Page{Checked: len(rows)}
	if len(rows) == s.Limit && len(rows) > 0 {
		page.Next = rows[len(rows)-1].OrderID
	}
	for _, r := range rows {
		if r.UpdatedAt.After(s.AsOf.Add(-j.grace)) {
			page.Discrepancies = append(page.Discrepancies, reconcile.Discrepancy{Key: r.OrderID, Class: reconcile.InFlight})
			continue
		}
		st, found, err := j.orders.OrderStatus(ctx, r.OrderID)
		if err != nil {
			return reconcile.Page{}, fmt.Errorf("order %s: %w", r.OrderID, err)
		}
		ev := map[string]any{"reservation": map[string]any{"order_id": r.OrderID, "status": biz.StatusReserved,
			"updated_at": r.UpdatedAt}, "order_found": found}
		if found {
			ev["order_status"] = st.String()
		}
		switch {
		case !found:
			page.Discrepancies = append(page.Discrepancies, reconcile.Discrepancy{Key: r.OrderID, Class: ClassOrphan,
				Evidence: ev, Action: ActionRelease})
		case st == orderv1.OrderStatus_ORDER_STATUS_CANCELLED:
			page.Discrepancies = append(page.Discrepancies, reconcile.Discrepancy{Key: r.OrderID, Class: ClassCancelled,
				Evidence: ev, Action: ActionRelease})
		case st == orderv1.OrderStatus_ORDER_STATUS_PAID:
			page.Discrepancies = append(page.Discrepancies, reconcile.Discrepancy{Key: r.OrderID, Class: ClassPaid, Evidence: ev})
		}
	}
	return page, nil
}

// Repair implements reconcile.Job: Release once per idempotency key.
func (j *ReservationsJob) Repair(ctx context.Context, d reconcile.Discrepancy, key string) error {
	if d.Action != ActionRelease {
		return fmt.Errorf("reservations: no repair %q", d.Action)
	}
	_, _, err := j.store.Do(ctx, key, idempotent.Fingerprint([]byte(d.Key), []byte(d.Action)), func(tx *gorm.DB) ([]byte, error) {
		out, err := j.uc.Release(data.WithTx(ctx, tx), d.Key)
		if err != nil {
			return nil, err
		}
		return []byte(out.String()), nil
	})
	return err
}

// Reconciler runs the reservations job on a schedule and on demand, and
// serves POST /v1/reconcile/{job} and GET /v1/reconcile/runs. It is a
// Kratos server (the scheduled loop).
type Reconciler struct {
	*kratosmq.Task
	runner *reconcile.Runner
	job    *ReservationsJob
	db     *gorm.DB
	log    *slog.Logger
}

// NewReconciler builds the runner (lease in Redis, runs, discrepancies
// and audit in the inventory database) and the job; the order service is
// dialled lazily at rc.order_grpc_addr.
func NewReconciler(rc *conf.Reconcile, d *data.Data, uc *biz.StockUsecase, reg prometheus.Registerer, l *slog.Logger) (*Reconciler, func(), error) {
	addr := rc.GetOrderGrpcAddr()
	if addr == "" {
		addr = "127.0.0.1:9000"
	}
	conn, err := kgrpc.DialInsecure(context.Background(), kgrpc.WithEndpoint(addr), kgrpc.WithTimeout(5*time.Second))
	if err != nil {
		return nil, nil, fmt.Errorf("server: dial order service %s: %w", addr, err)
	}
	cleanup := func() { conn.Close() }
	store, err := idempotent.NewStore(d.Gorm(), idempotent.StoreOptions{Scope: "inventory-reconcile", Operation: "release"})
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	grace := rc.GetMinAge().AsDuration()
	if rc.GetMinAge() == nil {
		grace = 30 * time.Second
	}
	job := &ReservationsJob{data: d, orders: grpcOrders{orderv1.NewOrderClient(conn)}, uc: uc, store: store, grace: grace}
	rl := l.With("module", "inventory/reconcile")
	runner, err := reconcile.New(d.Gorm(), d.Redis(), reconcile.WithRepair(ClassOrphan, ClassCancelled),
		reconcile.WithRegisterer(reg), reconcile.WithLogger(rl), reconcile.WithLeasePrefix("tide:inventory:reconcile:"))
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	if every := rc.GetInterval().AsDuration(); every > 0 {
		if err := runner.Schedule(job, every); err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	r := &Reconciler{runner: runner, job: job, db: d.Gorm(), log: rl}
	r.Task = kratosmq.Runner("reconcile", runner.Start, runner.Shutdown)
	return r, cleanup, nil
}

// SetOrders replaces the order lookup (tests).
func (r *Reconciler) SetOrders(o OrderLookup) { r.job.orders = o }

// RunJSON is a run report as the API returns it (contract.md).
type RunJSON struct {
	RunID         int64             `json:"run_id"`
	Job           string            `json:"job"`
	DryRun        bool              `json:"dry_run"`
	Discrepancies []DiscrepancyJSON `json:"discrepancies"`
	Repaired      int               `json:"repaired"`
	WouldRepair   int               `json:"would_repair"`
	Found         map[string]int    `json:"found"`
	Checked       int               `json:"checked"`
	InFlight      int               `json:"in_flight"`
	Resumed       bool              `json:"resumed,omitempty"`
}

// DiscrepancyJSON is one discrepancy of a report.
type DiscrepancyJSON struct {
	Class    string `json:"class"`
	Key      string `json:"key"`
	Evidence any    `json:"evidence"`
	Repair   string `json:"repair"`
	Status   string `json:"status,omitempty"`
}

// Run runs job once (dry or not) and returns its report.
func (r *Reconciler) Run(ctx context.Context, job string, dry bool) (*RunJSON, error) {
	if job != JobReservations {
		return nil, fmt.Errorf("%w: unknown job %q (have %q)", reconcile.ErrInvalidJob, job, JobReservations)
	}
	rep, err := r.runner.RunOnce(ctx, r.job, reconcile.RunOptions{DryRun: dry})
	if err != nil {
		return nil, err
	}
	out := &RunJSON{RunID: rep.RunID, Job: rep.Job, DryRun: rep.DryRun, Repaired: rep.Repaired, WouldRepair: rep.WouldRepair,
		Found: map[string]int{}, Checked: rep.Checked, InFlight: rep.InFlight, Resumed: rep.Resumed, Discrepancies: []DiscrepancyJSON{}}
	for c, n := range rep.Found {
		out.Found[string(c)] = n
	}
	if dry {
		for _, d := range rep.Discrepancies {
			if d.Class == reconcile.InFlight {
				continue
			}
			out.Discrepancies = append(out.Discrepancies, DiscrepancyJSON{Class: string(d.Class), Key: d.Key, Evidence: d.Evidence, Repair: d.Action})
		}
		return out, nil
	}
	recs, err := r.runner.Discrepancies(ctx, job)
	if err != nil {
		return nil, err
	}
	for _, d := range recs {
		if d.LastRunID != rep.RunID {
			continue
		}
		out.Discrepancies = append(out.Discrepancies, DiscrepancyJSON{Class: string(d.Class), Key: d.Key,
			Evidence: d.Evidence, Repair: d.Action, Status: string(d.Status)})
	}
	r.log.InfoContext(ctx, "reconciliation run", "job", job, "run_id", rep.RunID, "found", out.Found, "repaired", rep.Repaired)
	return out, nil
}

type runRow struct {
	ID         int64      `json:"id"`
	Job        string     `json:"job"`
	Status     string     `json:"status"`
	Checked    int64      `json:"checked"`
	Found      int64      `json:"found"`
	InFlight   int64      `json:"in_flight"`
	Repaired   int64      `json:"repaired"`
	Resumes    int        `json:"resumes"`
	LastError  *string    `json:"last_error,omitempty"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// Runs returns the recent runs of job ("" for all), newest first (the
// reconcile_runs table; dry runs are not recorded). With an orderID, only
// the runs that found or repaired a discrepancy of that order
// (reconcile.Involving): none for an order the job never flagged.
func (r *Reconciler) Runs(ctx context.Context, job, orderID string, limit int) ([]runRow, error) {
	q := r.db.WithContext(ctx).Table("reconcile_runs").
		Select("id, job, status, checked, found, in_flight, repaired, resumes, last_error, started_at, finished_at")
	if job != "" {
		q = q.Where("job = ?", job)
	}
	if orderID != "" {
		_, ids, err := r.runner.Involving(ctx, orderID, limit)
		if err != nil {
			return nil, fmt.Errorf("server: runs of order %s: %w", orderID, err)
		}
		if len(ids) == 0 {
			return []runRow{}, nil
		}
		q = q.Where("id IN ?", ids)
	}
	out := []runRow{}
	if err := q.Order("id DESC").Limit(limit).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("server: runs: %w", err)
	}
	return out, nil
}

// Handler serves POST /v1/reconcile/{job} (JSON body {"dry_run":bool} or
// none) and GET /v1/reconcile/runs?job=X&order_id=Y (both optional).
// Errors take the shape and the input rules of services/kit/api (in).
func (r *Reconciler) Handler(in *api.Input) nethttp.Handler {
	return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, req *nethttp.Request) {
		name := strings.Trim(strings.TrimPrefix(req.URL.Path, "/v1/reconcile"), "/")
		switch {
		case req.Method == nethttp.MethodGet && name == "runs":
			orderID := req.URL.Query().Get("order_id")
			if len(orderID) > 64 {
				in.EncodeError(w, req, kerrors.BadRequest("INVALID_ARGUMENT", "order_id: at most 64 bytes"))
				return
			}
			runs, err := r.Runs(req.Context(), req.URL.Query().Get("job"), orderID, 50)
			if err != nil {
				in.EncodeError(w, req, kerrors.ServiceUnavailable("UNAVAILABLE", "the runs could not be read; it was logged").WithCause(err))
				return
			}
			writeJSON(w, nethttp.StatusOK, map[string]any{"runs": runs})
		case req.Method == nethttp.MethodPost && name != "" && name != "runs":
			var body struct {
				DryRun bool `json:"dry_run"`
			}
			if err := api.DecodeJSON(req, &body); err != nil {
				in.EncodeError(w, req, err)
				return
			}
			ctx, cancel := context.WithTimeout(req.Context(), 2*time.Minute)
			defer cancel()
			out, err := r.Run(ctx, name, body.DryRun)
			switch {
			case errors.Is(err, reconcile.ErrInvalidJob):
				in.EncodeError(w, req, kerrors.NotFound("UNKNOWN_JOB", err.Error()))
			case errors.Is(err, reconcile.ErrLeaseHeld):
				in.EncodeError(w, req, kerrors.Conflict("RUN_IN_PROGRESS", "another run of the job is in progress"))
			case err != nil:
				r.log.WarnContext(ctx, "reconciliation run failed", "job", name, "err", err)
				in.EncodeError(w, req, kerrors.ServiceUnavailable("UNAVAILABLE", "reconciliation could not run; it was logged").WithCause(err))
			default:
				writeJSON(w, nethttp.StatusOK, out)
			}
		default:
			in.EncodeError(w, req, kerrors.New(nethttp.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "use POST /v1/reconcile/{job} or GET /v1/reconcile/runs"))
		}
	})
}
