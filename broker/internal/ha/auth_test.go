package ha

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestAuthUnauthenticatedPeerGetsNothing: with a secret on the master, a
// peer that connects and reports offset 0 (what any slave does first),
// or answers the challenge wrongly, receives the 40-byte challenge and
// then end of stream: not one byte of commit log. Without a secret the
// same peer receives the log (the leak this closes).
func TestAuthUnauthenticatedPeerGetsNothing(t *testing.T) {
	master, _ := newStore(t)
	newProducer(1).put(t, master, 20)
	secret := []byte("0123456789abcdef-secret")

	// read returns everything the master sends until it closes or 2 s of
	// silence pass.
	read := func(t *testing.T, nc net.Conn) []byte {
		t.Helper()
		var got bytes.Buffer
		buf := make([]byte, 4096)
		for {
			nc.SetReadDeadline(time.Now().Add(2 * time.Second))
			n, err := nc.Read(buf)
			got.Write(buf[:n])
			if err != nil {
				return got.Bytes()
			}
		}
	}
	report0 := make([]byte, reportSize) // offset 0
	dial := func(t *testing.T, srv *Server) net.Conn {
		t.Helper()
		nc, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		return nc
	}

	open := startServer(t, master, ServerOptions{})
	nc := dial(t, open)
	nc.Write(report0)
	if got := read(t, nc); len(got) <= headerSize {
		t.Fatalf("without a secret a peer reporting 0 got %d bytes; the test cannot show the leak", len(got))
	}

	srv := startServer(t, master, ServerOptions{Secret: secret, ReadTimeout: time.Second})
	for name, send := range map[string][]byte{
		"report 0":    report0,
		"wrong proof": bytes.Repeat([]byte{7}, proofSize),
		"silence":     nil,
	} {
		nc := dial(t, srv)
		if send != nil {
			nc.Write(send)
		}
		got := read(t, nc)
		if len(got) != challengeSize || !bytes.Equal(got[:len(challengeMagic)], challengeMagic[:]) {
			t.Errorf("%s: received %d bytes, want only the %d-byte challenge", name, len(got), challengeSize)
		}
	}
	waitFor(t, "refused peers gone from the status", func() bool { return len(srv.Status().Slaves) == 0 })

	// A peer that knows the secret is streamed.
	nc = dial(t, srv)
	var ch [challengeSize]byte
	if _, err := io.ReadFull(nc, ch[:]); err != nil {
		t.Fatal(err)
	}
	nc.Write(proof(secret, ch[len(challengeMagic):]))
	nc.Write(report0)
	var hdr [headerSize]byte
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(nc, hdr[:]); err != nil {
		t.Fatalf("authenticated peer: %v", err)
	}
	if size := binary.BigEndian.Uint32(hdr[8:]); size == 0 {
		t.Errorf("authenticated peer got an empty first transfer")
	}
}

// TestAuthReplicates: a slave with the master's secret replicates; one
// with another secret or none gets nothing and says why.
func TestAuthReplicates(t *testing.T) {
	master, _ := newStore(t)
	newProducer(2).put(t, master, 50)
	secret := []byte("0123456789abcdef-secret")
	srv := startServer(t, master, ServerOptions{Secret: secret, ReadTimeout: time.Second})

	good, _ := newStore(t)
	startClient(t, good, srv.Addr(), ClientOptions{Secret: secret})
	waitCaughtUp(t, master, good)
	assertSameLog(t, master, good)

	for name, s := range map[string][]byte{"wrong secret": []byte("another-secret-0123456"), "no secret": nil} {
		bad, _ := newStore(t)
		cl := startClient(t, bad, srv.Addr(), ClientOptions{Secret: s, ReadTimeout: time.Second})
		// Wait until it tried at least twice, then check it has nothing.
		waitFor(t, name+": two sessions", func() bool { return cl.Status().Sessions >= 2 })
		if n := bad.MaxPhyOffset(); n != 0 {
			t.Errorf("%s: slave holds %d bytes of the master's commit log", name, n)
		}
	}
	if _, err := NewServer(master, ServerOptions{Secret: []byte("short")}); !errors.Is(err, ErrBadOptions) {
		t.Errorf("short secret: %v", err)
	}
}
