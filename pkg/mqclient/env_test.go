package mqclient_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/pkg/tidetest"
)

// freePort returns a port for a broker that the test restarts on the same
// port: free now and outside Linux's default ephemeral range (32768-60999),
// from which every listen on port 0 and outgoing connection takes its port,
// so none takes it while the broker is down. pkg/testenv/freeport does the
// same (reading the kernel's range); this module may not depend on it.
// TIDE_TEST_PORTS ("lo-hi") narrows the choice as there.
func freePort(t testing.TB) int {
	t.Helper()
	lo, hi := 25000, 32767
	fmt.Sscanf(os.Getenv("TIDE_TEST_PORTS"), "%d-%d", &lo, &hi)
	for range 100 {
		p := lo + rand.IntN(max(hi-lo+1, 1))
		if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
			ln.Close()
			return p
		}
	}
	t.Fatalf("no free port in %d-%d", lo, hi)
	return 0
}

// env is the shared in-process harness (pkg/tidetest: a NameServer, a
// broker and an Admin client) with this package's helpers on top.
type env struct{ *tidetest.Env }

func startEnv(t testing.TB, opts ...func(*broker.Options)) *env {
	t.Helper()
	return &env{tidetest.Start(t, opts...)}
}

// probe reports whether the broker serves a request code (anything but
// REQUEST_CODE_NOT_SUPPORTED), so tests of features other teams are still
// adding skip instead of failing.
func (e *env) probe(t *testing.T, feature string) bool {
	t.Helper()
	var req *protocol.Command
	switch feature {
	case "sendback":
		h := protocol.ConsumerSendMsgBackRequestHeader{Offset: -1, Group: "probe", OriginTopic: "probe", MaxReconsumeTimes: 16}
		req = protocol.NewRequest(protocol.ConsumerSendMsgBack, h.Encode(), nil)
	case "transaction":
		h := protocol.EndTransactionRequestHeader{ProducerGroup: "probe", CommitOrRollback: 12}
		req = protocol.NewRequest(protocol.EndTransaction, h.Encode(), nil)
	default:
		t.Fatalf("unknown feature %q", feature)
	}
	cl := remoting.NewClient(remoting.ClientOptions{Logger: tidetest.Logger()})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, e.Broker.Addr(), req)
	if err != nil {
		t.Fatalf("probe %s: %v", feature, err)
	}
	return resp.Code != protocol.RequestCodeNotSupported
}
