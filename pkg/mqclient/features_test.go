package mqclient_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TestMasterFeatures asks a Tide broker with and without extensions what
// it offers, and checks that what it says is what it does: the Tide
// requests a feature names are answered, or refused with ErrNotSupported.
func TestMasterFeatures(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run("extensions="+strconv.FormatBool(on), func(t *testing.T) {
			e := startEnv(t, func(o *broker.Options) { o.TideExtensions = on })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			fs, err := e.Admin.MasterFeatures(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(fs) != 1 || fs[0].BrokerName != "broker-a" || fs[0].Addr != e.Broker.Addr() {
				t.Fatalf("MasterFeatures = %+v", fs)
			}
			f := fs[0]
			if f.Timers != on || f.TimerRecall != on || f.HalfMessages != on || f.HAStatus != on || f.IdempotentSend != on || f.Major() != 4 {
				t.Fatalf("features with extensions %v: %+v", on, f)
			}
			if on && !slices.Equal(f.Extensions, protocol.TideExtensions()) {
				t.Errorf("extensions %v, want %v", f.Extensions, protocol.TideExtensions())
			}
			_, err = e.Admin.HalfMessages(ctx, f.Addr)
			if got := errors.Is(err, mqclient.ErrNotSupported); got == f.HalfMessages {
				t.Errorf("HalfMessages: %v (feature says %v)", err, f.HalfMessages)
			}
			_, err = e.Admin.RecallTimer(ctx, f.Addr, "", "nope")
			if got := errors.Is(err, mqclient.ErrNotSupported); got == f.TimerRecall {
				t.Errorf("RecallTimer: %v (feature says %v)", err, f.TimerRecall)
			}
		})
	}
}
