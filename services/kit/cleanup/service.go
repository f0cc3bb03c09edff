package cleanup

import (
	"context"
	"google.golang.org/protobuf/types/known/durationpb"
	"gorm.io/gorm"

	"github.com/tidemq/tide/pkg/mqclient/kratosmq"
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

// Clean runs one pass of s's cleaner now (Cleaner.Clean).
func (s *Service) Clean(ctx context.Context) (map[string]int64, error) { return s.Cleaner.Clean(ctx) }
