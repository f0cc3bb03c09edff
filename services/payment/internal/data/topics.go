package data

import (
	"log/slog"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/services/kit/mq"
	"github.com/tidemq/tide/services/payment/internal/conf"
)

// NewMQClient returns the process's one mqclient.Client (kit/mq): the
// NameServers and, when messaging.access_key is set, the plain-ACL
// credentials that sign every request; with MQ_INSTANCE_NAME set
// (boot.InstanceName), a client id that stays the same across restarts.
// The publisher, the consumer and the broker job run on it; cleanup
// releases it after they shut down.
func NewMQClient(c *conf.Messaging, l *slog.Logger) (*mqclient.Client, func(), error) {
	return mq.NewClient(c.GetNameServers(), c.GetAccessKey(), c.GetSecretKey(), l)
}
