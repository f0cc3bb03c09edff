package service

import (
	"context"
	"math"
	nethttp "net/http"

	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/api/apierr"
	"github.com/tidemq/tide/services/payment/internal/biz"
)

// Statements reads the simulated gateway's ledger (data.Gateway).
type Statements interface {
	// Statement lists up to limit lines with id > after, oldest first.
	Statement(ctx context.Context, after int64, limit int) ([]biz.StatementLine, error)
}

// GatewayService serves the simulated gateway's statement, which the
// reconciliation and the end-to-end checks compare with the payments.
type GatewayService struct{ st Statements }

// NewGatewayService returns the service over st.
func NewGatewayService(st Statements) *GatewayService { return &GatewayService{st: st} }

// Statement returns the handler of GET /v1/gateway/statement?after=<id>:
// {"lines":[...]}, up to 1000 lines with id > after (default 0), oldest
// first. Errors (a bad after, 503 UNAVAILABLE when the ledger cannot be
// read) go through encode.
func (g *GatewayService) Statement(encode func(nethttp.ResponseWriter, *nethttp.Request, error)) nethttp.HandlerFunc {
	return func(w nethttp.ResponseWriter, r *nethttp.Request) {
		after, err := api.QueryInt(r, "after", 0, math.MaxInt64, 0)
		if err != nil {
			encode(w, r, err)
			return
		}
		lines, err := g.st.Statement(r.Context(), after, 1000)
		if err != nil {
			encode(w, r, apierr.Unavailable("the gateway statement could not be read; it was logged").WithCause(err))
			return
		}
		api.WriteJSON(w, nethttp.StatusOK, map[string]any{"lines": lines})
	}
}
