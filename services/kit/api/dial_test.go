package api

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	kitconf "github.com/tidemq/tide/services/kit/conf"
)

// TestDialClient: the client is built on the connection (lazily: nothing
// listens), with the configured timeout or the default, and Bound puts
// that timeout on a call's context.
func TestDialClient(t *testing.T) {
	for _, tt := range []struct {
		p    *kitconf.Peer
		want time.Duration
	}{
		{nil, 3 * time.Second},
		{&kitconf.Peer{}, 3 * time.Second},
		{&kitconf.Peer{GrpcAddr: "127.0.0.1:1", Timeout: durationpb.New(time.Second)}, time.Second},
	} {
		var got grpc.ClientConnInterface
		c, cleanup, err := DialClient("peer", tt.p, "127.0.0.1:2", 3*time.Second,
			func(conn grpc.ClientConnInterface) grpc.ClientConnInterface { got = conn; return conn })
		if err != nil {
			t.Fatal(err)
		}
		if c.API != got || c.Timeout != tt.want {
			t.Errorf("%+v: client %v timeout %v, want the connection and %v", tt.p, c.API, c.Timeout, tt.want)
		}
		ctx, cancel := c.Bound(context.Background())
		if d, ok := ctx.Deadline(); !ok || time.Until(d) > tt.want {
			t.Errorf("%+v: deadline %v %v, want within %v", tt.p, d, ok, tt.want)
		}
		cancel()
		cleanup()
	}
}
