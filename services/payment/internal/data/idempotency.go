package data

import (
	"context"
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/services/payment/internal/biz"
)

// IdempotencyStore is biz.IdempotencyStore on idempotent.Store (table
// mq_dedup, scope "payment-api", operation "create-payment"), on the
// Data's second connection pool.
type IdempotencyStore struct{ s *idempotent.Store }

// NewIdempotencyStore returns the API idempotency store.
func NewIdempotencyStore(d *Data, reg prometheus.Registerer, l *slog.Logger) (biz.IdempotencyStore, error) {
	s, err := idempotent.NewStore(d.keys, idempotent.StoreOptions{Scope: "payment-api", Operation: "create-payment",
		Logger: l, Registerer: reg})
	if err != nil {
		return nil, err
	}
	return &IdempotencyStore{s: s}, nil
}

// Do implements biz.IdempotencyStore. The store's transaction is not
// given to fn: the payment commits in its own (transactional message)
// transaction, and is itself idempotent per key (its id derives from it).
func (s *IdempotencyStore) Do(ctx context.Context, key string, fp []byte, fn func(ctx context.Context) ([]byte, error)) ([]byte, bool, error) {
	resp, replayed, err := s.s.Do(ctx, key, fp, func(*gorm.DB) ([]byte, error) { return fn(ctx) })
	switch {
	case err == nil:
		return resp, replayed, nil
	case errors.Is(err, idempotent.ErrPayloadMismatch):
		return nil, false, biz.ErrIdempotencyKeyReused.WithMetadata(map[string]string{"idempotency_key": key})
	case errors.Is(err, idempotent.ErrBadKey):
		return nil, false, biz.ErrInvalidArgument.WithMetadata(map[string]string{"field": "idempotency_key"})
	case idempotent.IsTransient(err):
		return nil, false, biz.ErrIdempotencyInProgress.WithCause(err)
	}
	return nil, false, err
}
