package mqclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/pkg/tidetest"
)

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
