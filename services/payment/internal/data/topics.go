package data

import (
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/services/kit/topics"
	"github.com/tidemq/tide/services/payment/internal/conf"
)

// ClientOptions are the options every producer, consumer and admin client
// of the service starts from: the NameServers and, when
// messaging.access_key is set, the plain-ACL credentials that sign every
// request; with MQ_INSTANCE_NAME set (boot.InstanceName), a client id
// that stays the same across restarts.
func ClientOptions(c *conf.Messaging) []mqclient.Option {
	return topics.ClientOptions(c.GetNameServers(), c.GetAccessKey(), c.GetSecretKey())
}

// CredentialOptions is mqclient.WithCredentials with messaging.access_key
// and secret_key, or nothing when access_key is empty.
func CredentialOptions(c *conf.Messaging) []mqclient.Option {
	return topics.Credentials(c.GetAccessKey(), c.GetSecretKey())
}
