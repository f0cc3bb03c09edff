// Package mq builds the one mqclient.Client of a service process.
package mq

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/services/kit/topics"
)

// NewClient returns the service process's one mqclient.Client (as
// RocketMQ's MQClientInstance), for the NameServer list nameServers
// (topics.SplitAddrs) and, when accessKey is set, the plain-ACL
// credentials (topics.ClientOptions), logging to l. Every producer,
// consumer, admin and pattern of the service runs on it through
// mqclient.WithClient, so the process has one client id, one connection
// per NameServer and broker, one route cache and one heartbeat that
// carries all its groups.
//
// The Client is started (Start takes the process's reference; nothing
// connects before a member needs it). cleanup releases that reference:
// the Client closes when its last member has shut down too, never under a
// running one. Wire runs cleanups in reverse order of construction and
// every member is built after the Client, so the connections close after
// the app stopped the consumers and the producers' cleanups ran.
func NewClient(nameServers, accessKey, secretKey string, l *slog.Logger) (*mqclient.Client, func(), error) {
	if len(topics.SplitAddrs(nameServers)) == 0 {
		return nil, nil, fmt.Errorf("mq: no NameServer configured")
	}
	c, err := mqclient.NewClient(append(topics.ClientOptions(nameServers, accessKey, secretKey), mqclient.WithLogger(l))...)
	if err != nil {
		return nil, nil, fmt.Errorf("mq: client: %w", err)
	}
	if err := c.Start(context.Background()); err != nil {
		return nil, nil, fmt.Errorf("mq: start client: %w", err)
	}
	return c, func() { _ = c.Shutdown(context.Background()) }, nil
}

// On returns the option that puts a producer, consumer or admin on c
// (mqclient.WithClient), as a list: what topics.Ensure, kratosmq's
// WithClientOptions and the patterns' producer options take.
func On(c *mqclient.Client) []mqclient.Option { return []mqclient.Option{mqclient.WithClient(c)} }
