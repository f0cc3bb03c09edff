package data

import (
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/services/kit/boot"
	"github.com/tidemq/tide/services/payment/internal/conf"
)

// ClientOptions are the options every producer, consumer and admin client
// of the service starts from: the NameServers and, when
// messaging.access_key is set, the plain-ACL credentials that sign every
// request; with MQ_INSTANCE_NAME set (boot.InstanceName), a client id
// that stays the same across restarts.
func ClientOptions(c *conf.Messaging) []mqclient.Option {
	opts := append([]mqclient.Option{mqclient.WithNameServers(SplitAddrs(c.GetNameServers())...)}, CredentialOptions(c)...)
	if n := boot.InstanceName(); n != "" {
		opts = append(opts, mqclient.WithInstanceName(n)) // stable client id across restarts
	}
	return opts
}

// CredentialOptions is mqclient.WithCredentials with messaging.access_key
// and secret_key, or nothing when access_key is empty.
func CredentialOptions(c *conf.Messaging) []mqclient.Option {
	if c.GetAccessKey() == "" {
		return nil
	}
	return []mqclient.Option{mqclient.WithCredentials(mqclient.Credentials{AccessKey: c.GetAccessKey(), SecretKey: c.GetSecretKey()})}
}
