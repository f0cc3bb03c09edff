package topicstest

import (
	"testing"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
)

// Start runs a NameServer and a broker registered with it in the test's
// process (nameservertest, brokertest; both stop when the test ends), the
// broker with a's ACL (BrokerOptions) and then extra, and returns the
// NameServer's address.
func (a ACL) Start(t testing.TB, extra ...func(*broker.Options)) string {
	t.Helper()
	ns := nameservertest.Start(t)
	brokertest.Start(t, ns, append(a.BrokerOptions(), extra...)...)
	return ns
}
