package data

import (
	"context"
	"fmt"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/services/payment/internal/conf"
)

// ClientOptions are the options every producer, consumer and admin client
// of the service starts from: the NameServers and, when
// messaging.access_key is set, the plain-ACL credentials that sign every
// request.
func ClientOptions(c *conf.Messaging) []mqclient.Option {
	return append([]mqclient.Option{mqclient.WithNameServers(SplitAddrs(c.GetNameServers())...)}, CredentialOptions(c)...)
}

// CredentialOptions is mqclient.WithCredentials with messaging.access_key
// and secret_key, or nothing when access_key is empty.
func CredentialOptions(c *conf.Messaging) []mqclient.Option {
	if c.GetAccessKey() == "" {
		return nil
	}
	return []mqclient.Option{mqclient.WithCredentials(mqclient.Credentials{AccessKey: c.GetAccessKey(), SecretKey: c.GetSecretKey()})}
}

// EnsureTopics creates topics (8 queues, on every master) that do not
// exist yet and waits until the NameServers route them; opts are the
// admin client's (ClientOptions).
func EnsureTopics(ctx context.Context, opts []mqclient.Option, topics ...string) error {
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
