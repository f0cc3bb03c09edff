package remoting

import (
	"context"
	"net"
	"testing"
	"time"
)

func TestProbe(t *testing.T) {
	srv := NewServer(ServerOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := Probe(ctx, ln.Addr().String()); err != nil {
		t.Fatalf("probe of a live server: %v", err)
	}
	addr := freeAddr(t) // closed, and no dial can connect to itself there
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	if err := Probe(ctx2, addr); err == nil {
		t.Fatal("probe of a closed port succeeded")
	}
}
