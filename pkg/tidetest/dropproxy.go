package tidetest

import (
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// DropProxy sits between clients and a broker's client port and drops a
// share of the broker's answers to sends (SEND_MESSAGE, SEND_MESSAGE_V2,
// SEND_BATCH_MESSAGE): the broker stored the message, the producer never
// hears it and retries. Everything else passes unchanged. It stops when
// the test ends. Safe for concurrent use.
type DropProxy struct {
	ln      net.Listener
	target  string
	rate    float64
	dropped atomic.Int64
	passed  atomic.Int64

	mu    sync.Mutex
	rng   *rand.Rand
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// StartDropProxy listens on listen and forwards to target, dropping each
// send answer with probability rate (seeded: the same seed drops the same
// share, the exact answers depend on timing).
func StartDropProxy(t testing.TB, listen, target string, rate float64, seed uint64) *DropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatalf("drop proxy: %v", err)
	}
	p := &DropProxy{ln: ln, target: target, rate: rate, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr returns the proxy's address.
func (p *DropProxy) Addr() string { return p.ln.Addr().String() }

// Dropped returns how many send answers were dropped so far.
func (p *DropProxy) Dropped() int64 { return p.dropped.Load() }

// Passed returns how many send answers were forwarded so far.
func (p *DropProxy) Passed() int64 { return p.passed.Load() }

func (p *DropProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		sends := &sync.Map{} // opaques of the sends in flight on this connection
		p.wg.Add(2)
		go p.pipe(c, up, func(cmd *protocol.Command) bool {
			switch cmd.Code {
			case protocol.SendMessage, protocol.SendMessageV2, protocol.SendBatchMessage:
				if !cmd.IsResponse() {
					sends.Store(cmd.Opaque, true)
				}
			}
			return true
		})
		go p.pipe(up, c, func(cmd *protocol.Command) bool {
			if !cmd.IsResponse() {
				return true
			}
			if _, ok := sends.LoadAndDelete(cmd.Opaque); !ok {
				return true
			}
			p.mu.Lock()
			drop := p.rng.Float64() < p.rate
			p.mu.Unlock()
			if drop {
				p.dropped.Add(1)
			} else {
				p.passed.Add(1)
			}
			return !drop
		})
	}
}

// pipe copies frames from src to dst while keep says so.
func (p *DropProxy) pipe(src, dst net.Conn, keep func(*protocol.Command) bool) {
	defer p.wg.Done()
	defer src.Close()
	defer dst.Close()
	var lenBuf [4]byte
	for {
		if _, err := io.ReadFull(src, lenBuf[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(lenBuf[:])
		frame := make([]byte, 4+int(n))
		copy(frame, lenBuf[:])
		if _, err := io.ReadFull(src, frame[4:]); err != nil {
			return
		}
		cmd, err := protocol.DecodeFrame(frame[4:])
		if err == nil && !keep(cmd) {
			continue
		}
		if _, err := dst.Write(frame); err != nil {
			return
		}
	}
}

func (p *DropProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
