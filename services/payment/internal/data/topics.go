package data

import (
	"context"
	"fmt"

	"github.com/tidemq/tide/pkg/mqclient"
)

// EnsureTopics creates topics (8 queues, on every master) that do not
// exist yet and waits until the NameServers route them.
func EnsureTopics(ctx context.Context, nameServers []string, topics ...string) error {
	a, err := mqclient.NewAdmin(mqclient.WithNameServers(nameServers...))
	if err != nil {
		return err
	}
	if err := a.Start(ctx); err != nil {
		return err
	}
	defer a.Shutdown(context.WithoutCancel(ctx))
	have, err := a.Topics(ctx)
	if err != nil {
		return fmt.Errorf("data: list topics: %w", err)
	}
	for _, t := range topics {
		found := false
		for _, h := range have {
			found = found || h == t
		}
		if !found {
			if err := a.CreateTopic(ctx, t, mqclient.TopicConfig{Order: true}); err != nil {
				return fmt.Errorf("data: create topic: %w", err)
			}
		}
		if err := a.WaitTopic(ctx, t); err != nil {
			return err
		}
	}
	return nil
}
