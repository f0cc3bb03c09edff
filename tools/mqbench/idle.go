package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// runIdle opens n connections to a broker, registers each with one
// heartbeat (as a producer client of its own id) and holds them open
// without traffic until -hold passes or the process is told to stop: the
// idle-connection half of the scale measurements. It prints "ready N" when
// all are open.
func runIdle(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("idle", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("broker", "127.0.0.1:10911", "broker `host:port`")
	n := fs.Int("n", 1000, "connections")
	hold := fs.Duration("hold", time.Minute, "keep them open this long")
	beat := fs.Duration("heartbeat", 20*time.Second, "heartbeat interval per connection (0 = only the first)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	conns := make([]net.Conn, 0, *n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	frame := func(i, opaque int) ([]byte, error) {
		body, err := json.Marshal(protocol.HeartbeatData{ClientID: fmt.Sprintf("127.0.0.1@idle-%d", i),
			ProducerDataSet: []protocol.ProducerData{{GroupName: "mqbench-idle"}}})
		if err != nil {
			return nil, err
		}
		req := protocol.NewRequest(protocol.HeartBeat, nil, body)
		req.Opaque = int32(opaque)
		return req.Encode()
	}
	t0 := time.Now()
	for i := range *n {
		c, err := net.DialTimeout("tcp", *addr, 5*time.Second)
		if err != nil {
			return fmt.Errorf("connection %d: %w", i, err)
		}
		conns = append(conns, c)
		f, err := frame(i, 1)
		if err != nil {
			return err
		}
		if _, err := c.Write(f); err != nil {
			return fmt.Errorf("connection %d: heartbeat: %w", i, err)
		}
		// Read the answer, so that the broker is known to have registered it.
		var lenBuf [4]byte
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(c, lenBuf[:]); err != nil {
			return fmt.Errorf("connection %d: heartbeat answer: %w", i, err)
		}
		if _, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(lenBuf[:]))); err != nil {
			return fmt.Errorf("connection %d: heartbeat answer: %w", i, err)
		}
		_ = c.SetReadDeadline(time.Time{})
		go io.Copy(io.Discard, c) // drain anything the broker sends later
	}
	fmt.Fprintf(stdout, "ready %d in %v\n", len(conns), time.Since(t0).Round(time.Millisecond))
	var tick <-chan time.Time
	if *beat > 0 {
		t := time.NewTicker(*beat)
		defer t.Stop()
		tick = t.C
	}
	end := time.NewTimer(*hold)
	defer end.Stop()
	for op := 2; ; op++ {
		select {
		case <-ctx.Done():
			return nil
		case <-end.C:
			return nil
		case <-tick:
			for i, c := range conns {
				f, err := frame(i, op)
				if err == nil {
					_, _ = c.Write(f)
				}
			}
		}
	}
}
