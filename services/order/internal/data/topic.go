package data

import (
	"context"
	"fmt"

	"github.com/tidemq/tide/pkg/mqclient"
)

// EnsureTopics creates each topic that has no route yet on every master
// the NameServers know (8 queues, read-write) and waits until its route is
// published. Existing topics are left as they are. It blocks until done
// or ctx ends.
func EnsureTopics(ctx context.Context, opts []mqclient.Option, topics ...string) error {
	a, err := mqclient.NewAdmin(opts...)
	if err != nil {
		return err
	}
	if err := a.Start(ctx); err != nil {
		return err
	}
	defer a.Shutdown(context.WithoutCancel(ctx))
	for _, t := range topics {
		if _, err := a.TopicRoute(ctx, t); err == nil {
			continue
		}
		if err := a.CreateTopic(ctx, t, mqclient.TopicConfig{Order: true}); err != nil {
			return fmt.Errorf("create topic %s: %w", t, err)
		}
		if err := a.WaitTopic(ctx, t); err != nil {
			return err
		}
	}
	return nil
}
