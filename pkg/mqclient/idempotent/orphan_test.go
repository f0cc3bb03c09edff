package idempotent

import (
	"context"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/mqclient"
)

// TestOrphanedClaimNeverDeadLetters: a consumer died holding a message's
// Redis claim (left with the default ClaimTTL, as a crash leaves it). The
// broker retries fast (1 s delay levels) and the group allows 2
// reconsumes, far less time than the claim lives. The redelivered message
// must still be applied once, never dead-lettered: an orphaned claim may
// delay a message, not lose it to the DLQ.
func TestOrphanedClaimNeverDeadLetters(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	common, admin, topic := startBroker(t, ctx, "orphan", 1, func(o *broker.Options) {
		o.Store.MessageDelayLevel = "1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s"
	})

	const group, key = "orphans", "order-9"
	c := f.consumer(t, f.rdb, Options{Group: group}) // default ClaimTTL
	k := keysFor(c.opts.KeyPrefix, group, c.opts.Handler, key)
	if err := f.rdb.Set(ctx, k.claim, "token-of-a-dead-consumer", c.opts.ClaimTTL).Err(); err != nil {
		t.Fatal(err)
	}
	pc, err := mqclient.NewPushConsumer(group, append(common, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst),
		mqclient.WithMaxReconsumeTimes(2))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, "*", c.Wrap(transfer)); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer pc.Shutdown(context.Background())
	p, err := mqclient.NewProducer(common...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	res, err := p.Send(ctx, &mqclient.Message{Topic: topic, Keys: []string{key}, Body: []byte(`{"amount":10}`)})
	if err != nil {
		t.Fatal(err)
	}
	for f.count(t, "SELECT COUNT(*) FROM effects WHERE biz_key = ?", key) == 0 {
		if dead, _ := admin.QueryByUniqID(ctx, mqclient.DLQTopicPrefix+group, res.MsgID); len(dead) > 0 {
			t.Fatalf("the message went to the DLQ after %d reconsumes while an orphaned claim (ClaimTTL %v) held its key",
				dead[0].ReconsumeTimes, c.opts.ClaimTTL)
		}
		if ctx.Err() != nil {
			t.Fatal("the message was neither applied nor dead-lettered")
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.checkInvariant(t, []string{key})
}
