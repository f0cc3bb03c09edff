package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
)

type listen struct {
	network, addr string
	timeout       *durationpb.Duration
}

func (l *listen) GetNetwork() string               { return l.network }
func (l *listen) GetAddr() string                  { return l.addr }
func (l *listen) GetTimeout() *durationpb.Duration { return l.timeout }

// TestNewServers: the servers listen where the configuration says and
// carry the input contract (an oversized body is 413 in the one shape).
func TestNewServers(t *testing.T) {
	in := New(Options{MaxBody: 16}, nil)
	l := &listen{network: "tcp", addr: "127.0.0.1:0", timeout: durationpb.New(time.Second)}
	hs := in.NewHTTPServer(l)
	hs.HandleFunc("/x", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	ep, err := hs.Endpoint()
	if err != nil || ep.Hostname() != "127.0.0.1" {
		t.Fatalf("HTTP endpoint %v: %v", ep, err)
	}
	defer hs.Stop(context.Background())
	w := httptest.NewRecorder()
	hs.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/x", strings.NewReader(strings.Repeat(" ", 17))))
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), ReasonBodyTooLarge) {
		t.Fatalf("oversized body: %d %s", w.Code, w.Body)
	}
	gs := in.NewGRPCServer(l)
	gep, err := gs.Endpoint()
	if err != nil || gep.Hostname() != "127.0.0.1" {
		t.Fatalf("gRPC endpoint %v: %v", gep, err)
	}
	_ = gs.Stop(context.Background())
}
