package consume

import (
	"context"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/idempotent"
)

// Dedup makes a message handler idempotent (pkg/mqclient/idempotent with
// the options o, which name the group, handler, key and policies). A
// service's data layer implements it over its database and Redis; its
// service layer, which knows the messages, chooses o and the handler.
// The server layer subscribes what comes out, so neither the server nor
// the service needs the data layer's types.
type Dedup interface {
	Wrap(o idempotent.Options, h mqclient.Handler) (mqclient.Handler, error)
}

// TxDedup is the Dedup of a service whose data layer finds a transaction
// in a context: the dedup record and h's effect commit in one
// transaction, which h finds in its ctx (WithTx). Safe for concurrent
// use once built; its fields are not changed after.
type TxDedup struct {
	// DB holds the dedup records; nil keeps them in Redis only (a handler
	// with its own durable record, such as the order timeline's unique
	// key), and h then runs with its ctx unchanged.
	DB    *gorm.DB
	Redis redis.UniversalClient
	// WithTx returns ctx carrying tx, the data layer's convention.
	WithTx func(ctx context.Context, tx *gorm.DB) context.Context
	// Effect, if set, wraps the effect inside the record's transaction
	// (inventory: the ordered.Guard's version check).
	Effect func(idempotent.Effect) idempotent.Effect
}

// Wrap implements Dedup.
func (d TxDedup) Wrap(o idempotent.Options, h mqclient.Handler) (mqclient.Handler, error) {
	c, err := idempotent.New(d.DB, d.Redis, o)
	if err != nil {
		return nil, err
	}
	effect := func(ctx context.Context, tx *gorm.DB, m *mqclient.MessageExt) error {
		if tx != nil && d.WithTx != nil {
			ctx = d.WithTx(ctx, tx)
		}
		return h(ctx, m)
	}
	if d.Effect != nil {
		return c.Wrap(d.Effect(effect)), nil
	}
	return c.Wrap(effect), nil
}
