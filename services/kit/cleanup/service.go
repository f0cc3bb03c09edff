package cleanup

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/types/known/durationpb"
	"gorm.io/gorm"

	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/kratosmq"
	"github.com/tidemq/tide/pkg/mqclient/txmsg"
)

// Config is what a service's configuration says about its cleanup: the
// generated kit/conf Cleanup message, which every service's configuration
// holds, satisfies it (a nil message keeps the defaults).
type Config interface {
	GetRetention() *durationpb.Duration
	GetInterval() *durationpb.Duration
	GetDisabled() bool
}

// Service is a service's periodic cleanup as a Kratos transport.Server;
// Cleaner runs a pass on demand.
type Service struct {
	*kratosmq.Task
	Cleaner *Cleaner
}

// NewService returns the cleanup of db's tables named in o, with c's
// retention, interval and switch, as the Kratos server name. It fails
// on a retention below MinRetention (ErrInvalidOptions).
func NewService(db *gorm.DB, name string, c Config, o Options) (*Service, error) {
	o.Retention, o.Interval, o.Disabled = c.GetRetention().AsDuration(), c.GetInterval().AsDuration(), c.GetDisabled()
	cl, err := New(db, o)
	if err != nil {
		return nil, err
	}
	return &Service{Task: cl.Server(name), Cleaner: cl}, nil
}

// ForService returns the cleanup of service svc's pattern tables under
// their default names: idempotent's dedup table (mq_dedup) always, and
// txmsg's fence table (tide_tx_fence) when fence is set (a service that
// sends transactional messages). It runs as the Kratos server
// "<svc>-cleanup" with c's retention, interval and switch, logs to l with
// module "<svc>/cleanup" and registers its counters with reg (NewService,
// Options).
func ForService(svc string, db *gorm.DB, c Config, fence bool, reg prometheus.Registerer, l *slog.Logger) (*Service, error) {
	o := Options{DedupTable: idempotent.DefaultTable, Logger: l.With("module", svc+"/cleanup"), Registerer: reg}
	if fence {
		o.FenceTable = txmsg.DefaultTable
	}
	return NewService(db, svc+"-cleanup", c, o)
}

// Clean runs one pass of s's cleaner now (Cleaner.Clean).
func (s *Service) Clean(ctx context.Context) (map[string]int64, error) { return s.Cleaner.Clean(ctx) }
