package mqclient_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
)

func TestPullConsumer(t *testing.T) {
	e := startEnv(t)
	topic := e.Topic(t, 1)
	p := e.Producer(t)
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		tag := "A"
		if i%2 == 1 {
			tag = "B"
		}
		if _, err := p.Send(ctx, &mqclient.Message{Topic: topic, Tag: tag, Body: []byte(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := mqclient.NewPullConsumer("g-pull", e.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	c.Start(ctx)
	defer c.Shutdown(ctx)
	qs, err := c.Queues(ctx, topic)
	if err != nil || len(qs) != 1 {
		t.Fatalf("queues %v %v", qs, err)
	}
	if off, err := c.CommittedOffset(ctx, qs[0]); err != nil || off >= 1 {
		t.Fatalf("fresh group offset %d %v", off, err)
	}
	// The broker indexes stored messages asynchronously: pull until
	// offset 10 is reached, as a pull loop would.
	var got []*mqclient.MessageExt
	var off int64
	deadline := time.Now().Add(10 * time.Second)
	for off < 10 && time.Now().Before(deadline) {
		res, err := c.Pull(ctx, qs[0], "A", off, 32, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res.Messages...)
		off = res.NextOffset
	}
	if len(got) != 5 || off != 10 {
		t.Fatalf("pulled %d messages up to offset %d, want 5 up to 10", len(got), off)
	}
	for _, m := range got {
		if m.Tag != "A" {
			t.Errorf("tag %q passed filter A", m.Tag)
		}
	}
	start := time.Now()
	res, err := c.Pull(ctx, qs[0], "*", 10, 32, 300*time.Millisecond)
	if err != nil || res.Status != mqclient.PullNoNewMessage {
		t.Fatalf("empty pull: %v %+v", err, res)
	}
	if time.Since(start) < 200*time.Millisecond {
		t.Errorf("empty long poll returned after %v", time.Since(start))
	}
	if err := c.Commit(ctx, qs[0], 10); err != nil {
		t.Fatal(err)
	}
	if off, err := c.CommittedOffset(ctx, qs[0]); err != nil || off != 10 {
		t.Fatalf("committed %d %v", off, err)
	}
}
