package ha

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tidemq/tide/broker/internal/store"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

const benchSeg = 64 << 20

func benchStore(b *testing.B) *store.Store {
	c := storeConfig(b.TempDir())
	c.MappedFileSizeCommitLog = benchSeg
	c.MaxMessageSize = 4 << 20
	c.FlushIntervalCommitLog = 500
	c.FlushIntervalConsumeQueue = 1000
	c.MaxHashSlotNum = 1 << 16
	c.MaxIndexNum = 1 << 20
	c.MappedFileSizeConsumeQueue = 300000 * 20
	return openStore(b, c)
}

func benchMsg(size int) *protocol.MessageExt {
	m := &protocol.MessageExt{BornTimestamp: time.Now().UnixMilli(), BornHost: bornHost, StoreHost: storeHost}
	m.Topic, m.Body = "Bench", make([]byte, size)
	return m
}

// BenchmarkReplicate measures catch-up throughput: b.N messages already on
// the master stream to an empty slave (transfer, append, dispatch of
// consume queues and index). MB/s counts stored bytes.
func BenchmarkReplicate(b *testing.B) {
	for _, size := range []int{128, 1024, 4096} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			master := benchStore(b)
			var stored int64
			for i := range b.N {
				m := benchMsg(size)
				m.QueueID = int32(i % 4)
				r, err := master.PutMessage(context.Background(), m)
				if err != nil {
					b.Fatal(err)
				}
				stored += int64(r.WroteBytes)
			}
			srv := startServer(b, master, ServerOptions{})
			slave := benchStore(b)
			b.SetBytes(stored / int64(b.N))
			b.ResetTimer()
			startClient(b, slave, srv.Addr(), ClientOptions{SegmentSize: benchSeg})
			end := master.MaxPhyOffset()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			for slave.MaxPhyOffset() < end {
				time.Sleep(100 * time.Microsecond)
			}
			if err := slave.WaitDispatched(ctx, end); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
		})
	}
}

// BenchmarkSyncAck measures one SYNC_MASTER send: append on the master,
// then WaitSlaveAck until the slave has it (one writer: pure latency).
func BenchmarkSyncAck(b *testing.B) {
	master := benchStore(b)
	srv := startServer(b, master, ServerOptions{PollInterval: time.Hour})
	slave := benchStore(b)
	startClient(b, slave, srv.Addr(), ClientOptions{SegmentSize: benchSeg})
	waitFor(b, "slave ready", func() bool { return len(srv.Status().Slaves) == 1 && srv.Status().Slaves[0].Ready })
	b.SetBytes(1024)
	b.ResetTimer()
	for range b.N {
		r, err := master.PutMessage(context.Background(), benchMsg(1024))
		if err != nil {
			b.Fatal(err)
		}
		if err := srv.WaitSlaveAck(context.Background(), r.CommitLogOffset+int64(r.WroteBytes)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSyncAckParallel: many writers share acks (group waiting).
func BenchmarkSyncAckParallel(b *testing.B) {
	master := benchStore(b)
	srv := startServer(b, master, ServerOptions{PollInterval: time.Hour})
	slave := benchStore(b)
	startClient(b, slave, srv.Addr(), ClientOptions{SegmentSize: benchSeg})
	waitFor(b, "slave ready", func() bool { return len(srv.Status().Slaves) == 1 && srv.Status().Slaves[0].Ready })
	b.SetBytes(1024)
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r, err := master.PutMessage(context.Background(), benchMsg(1024))
			if err != nil {
				b.Error(err)
				return
			}
			if err := srv.WaitSlaveAck(context.Background(), r.CommitLogOffset+int64(r.WroteBytes)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
