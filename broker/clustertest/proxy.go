package clustertest

import (
	"net"
	"sync"
	"time"

	"github.com/tidemq/tide/pkg/testenv/freeport"
)

// Proxy forwards TCP connections from a fixed loopback port to a target
// address. Two partitions can be simulated: Stall stops forwarding bytes
// but keeps the connections open (a silent network: peers notice only by
// timeouts) until Resume; Cut closes every forwarded connection on both
// sides and refuses new ones (the port stops listening) until Restore.
// Safe for concurrent use.
type Proxy struct {
	Addr   string // the proxy's listen address (fixed across Cut/Restore)
	target string

	mu      sync.Mutex
	flowing *sync.Cond // signalled when stalled turns false
	stalled bool
	ln      net.Listener
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

// NewProxy listens on 127.0.0.1 and forwards to target. Its port is
// outside the kernel's ephemeral range (freeport), so that no other
// connection takes it while the proxy is cut (Restore binds it again).
func NewProxy(target string) (*Proxy, error) {
	addr, err := freeport.Addr()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, conns: map[net.Conn]struct{}{}}
	p.flowing = sync.NewCond(&p.mu)
	p.serve(ln)
	return p, nil
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
			if err != nil {
				c.Close()
				continue
			}
			if !p.track(c, up) {
				return
			}
			go p.pipe(c, up)
			go p.pipe(up, c)
		}
	}()
}

// track registers a forwarded pair unless the proxy was cut meanwhile.
func (p *Proxy) track(a, b net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		a.Close()
		b.Close()
		return false
	}
	p.conns[a], p.conns[b] = struct{}{}, struct{}{}
	return true
}

// pipe copies src to dst, holding each chunk while the proxy is stalled
// (the rest stays in the kernel's buffers, so the sender eventually
// blocks, as on a dead link).
func (p *Proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.stalled {
				p.flowing.Wait()
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Stall stops forwarding without closing anything.
func (p *Proxy) Stall() {
	p.mu.Lock()
	p.stalled = true
	p.mu.Unlock()
}

// Resume forwards again after Stall.
func (p *Proxy) Resume() {
	p.mu.Lock()
	p.stalled = false
	p.mu.Unlock()
	p.flowing.Broadcast()
}

// Cut closes the listener and every forwarded connection.
func (p *Proxy) Cut() {
	p.Resume() // release held chunks: their writes fail on the closed conns
	p.mu.Lock()
	ln := p.ln
	p.ln = nil
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	for c := range conns {
		c.Close()
	}
	p.wg.Wait()
}

// Restore listens on the same address again.
func (p *Proxy) Restore() error {
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		return err
	}
	p.serve(ln)
	return nil
}

// Close cuts the proxy for good.
func (p *Proxy) Close() { p.Cut() }
