package data

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	kerrors "github.com/go-kratos/kratos/v2/errors"
	kgrpc "github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/services/inventory/internal/biz"
	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/kit/reconcile"
)

// DefaultOrderAddr is the order service's gRPC address when
// reconcile.order_grpc_addr is empty.
const DefaultOrderAddr = "127.0.0.1:9000"

// GRPCOrders reads orders through the order service's gRPC API.
type GRPCOrders struct{ C orderv1.OrderClient }

// OrderStatus implements biz.OrderLookup.
func (g GRPCOrders) OrderStatus(ctx context.Context, id string) (orderv1.OrderStatus, bool, error) {
	r, err := g.C.GetOrder(ctx, &orderv1.GetOrderRequest{Id: id})
	if kerrors.IsNotFound(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return r.GetOrder().GetStatus(), true, nil
}

// NewOrderLookup dials the order service lazily at rc.order_grpc_addr;
// the cleanup closes the connection.
func NewOrderLookup(rc *conf.Reconcile) (biz.OrderLookup, func(), error) {
	addr := rc.GetOrderGrpcAddr()
	if addr == "" {
		addr = DefaultOrderAddr
	}
	conn, err := kgrpc.DialInsecure(context.Background(), kgrpc.WithEndpoint(addr), kgrpc.WithTimeout(5*time.Second))
	if err != nil {
		return nil, nil, fmt.Errorf("data: dial order service %s: %w", addr, err)
	}
	return GRPCOrders{orderv1.NewOrderClient(conn)}, func() { conn.Close() }, nil
}

// repairLog is biz.RepairLog on pkg/mqclient/idempotent's Store (scope
// inventory-reconcile, operation release).
type repairLog struct{ store *idempotent.Store }

// NewRepairLog returns the reconciliation's repair log.
func NewRepairLog(d *Data) (biz.RepairLog, error) {
	store, err := idempotent.NewStore(d.db, idempotent.StoreOptions{Scope: "inventory-reconcile", Operation: "release"})
	if err != nil {
		return nil, err
	}
	return repairLog{store}, nil
}

// Once implements biz.RepairLog.
func (l repairLog) Once(ctx context.Context, key string, fingerprint [][]byte, fn func(ctx context.Context) ([]byte, error)) error {
	_, _, err := l.store.Do(ctx, key, idempotent.Fingerprint(fingerprint...), func(tx *gorm.DB) ([]byte, error) {
		return fn(WithTx(ctx, tx))
	})
	return err
}

// NewRunner returns the reconciliation runner: lease in Redis
// (tide:inventory:reconcile:), runs, discrepancies and audit in the
// inventory database; orphan and cancelled reservations are repaired.
func NewRunner(d *Data, reg prometheus.Registerer, l *slog.Logger) (*reconcile.Runner, error) {
	return reconcile.New(d.db, d.rdb, reconcile.WithRepair(biz.ClassOrphan, biz.ClassCancelled),
		reconcile.WithRegisterer(reg), reconcile.WithLogger(l.With("module", "inventory/reconcile")),
		reconcile.WithLeasePrefix("tide:inventory:reconcile:"))
}
