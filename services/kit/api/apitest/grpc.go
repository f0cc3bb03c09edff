package apitest

import (
	"context"
	"net/http"
	"strings"
	"testing"

	kerrors "github.com/go-kratos/kratos/v2/errors"
	kgrpc "github.com/go-kratos/kratos/v2/transport/grpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tidemq/tide/services/kit/api"
)

// DialGRPC connects to a service's gRPC server at addr (host:port,
// insecure), failing the test when it cannot; the connection closes when
// the test ends.
func DialGRPC(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := kgrpc.DialInsecure(context.Background(), kgrpc.WithEndpoint(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// InvalidGRPC fails the test unless err, the outcome of a gRPC call, is
// the one refusal of bad input of package api: code InvalidArgument,
// reason INVALID_ARGUMENT, metadata field = field and a message that
// starts with "<field>: ".
func InvalidGRPC(t testing.TB, err error, field string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != codes.InvalidArgument || kerrors.Reason(err) != api.ReasonInvalidArgument ||
		kerrors.FromError(err).Metadata["field"] != field || !strings.HasPrefix(st.Message(), field+": ") {
		t.Fatalf("got %v (reason %s, metadata %v), want InvalidArgument on %s", err, kerrors.Reason(err),
			kerrors.FromError(err).Metadata, field)
	}
}

// Healthy fails the test unless GET base+"/healthz" and base+"/readyz"
// (api.RegisterHealth) both answer 200.
func Healthy(t testing.TB, base string) {
	t.Helper()
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
	}
}
