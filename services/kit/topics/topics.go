// Package topics creates the topics a service needs before it uses them.
package topics

import (
	"context"
	"fmt"
	"slices"

	"github.com/tidemq/tide/pkg/mqclient"
)

// Ensure creates each of topics that the NameServers do not know yet, on
// every master (8 queues, read-write, ordered-capable), and waits until
// every one of them is routed. Existing topics are left as they are. opts
// configure the admin client it uses (name servers, credentials, TLS). It
// blocks until done or ctx ends.
func Ensure(ctx context.Context, opts []mqclient.Option, topics ...string) error {
	a, err := mqclient.NewAdmin(opts...)
	if err != nil {
		return err
	}
	if err := a.Start(ctx); err != nil {
		return err
	}
	defer a.Shutdown(context.WithoutCancel(ctx))
	have, err := a.Topics(ctx)
	if err != nil {
		return fmt.Errorf("topics: list topics: %w", err)
	}
	for _, t := range topics {
		if !slices.Contains(have, t) {
			if err := a.CreateTopic(ctx, t, mqclient.TopicConfig{Order: true}); err != nil {
				return fmt.Errorf("topics: create %s: %w", t, err)
			}
		}
		if err := a.WaitTopic(ctx, t); err != nil {
			return err
		}
	}
	return nil
}
