package topics

import (
	"strings"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/services/kit/boot"
)

// SplitAddrs splits a NameServer list separated by ';', ',' or spaces.
func SplitAddrs(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' || r == ' ' })
}

// Credentials returns mqclient.WithCredentials with accessKey and
// secretKey, or nothing when accessKey is empty (no ACL).
func Credentials(accessKey, secretKey string) []mqclient.Option {
	if accessKey == "" {
		return nil
	}
	return []mqclient.Option{mqclient.WithCredentials(mqclient.Credentials{AccessKey: accessKey, SecretKey: secretKey})}
}

// ClientOptions are the options every producer, consumer and admin
// client of a service starts from: the NameServers of the list
// nameServers (SplitAddrs), when accessKey is set the plain-ACL
// credentials that sign every request, and with MQ_INSTANCE_NAME set
// (boot.InstanceName) a client id that stays the same across restarts.
func ClientOptions(nameServers, accessKey, secretKey string) []mqclient.Option {
	opts := append([]mqclient.Option{mqclient.WithNameServers(SplitAddrs(nameServers)...)}, Credentials(accessKey, secretKey)...)
	if n := boot.InstanceName(); n != "" {
		opts = append(opts, mqclient.WithInstanceName(n)) // stable client id across restarts
	}
	return opts
}
