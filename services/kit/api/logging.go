package api

import (
	"context"
	"time"

	"github.com/go-kratos/kratos/v2/errors"
	"github.com/go-kratos/kratos/v2/log"
	"github.com/go-kratos/kratos/v2/middleware"
	"github.com/go-kratos/kratos/v2/middleware/recovery"
	"github.com/go-kratos/kratos/v2/middleware/tracing"
	"github.com/go-kratos/kratos/v2/transport"
)

// ServerMiddleware returns the middleware chain of the services' HTTP and
// gRPC servers, outermost first: panic recovery, OpenTelemetry tracing,
// the access log (Logging) and the request checks (Middleware).
func (in *Input) ServerMiddleware() []middleware.Middleware {
	return []middleware.Middleware{recovery.Recovery(), tracing.Server(), in.Logging(), in.Middleware()}
}

// Logging is the access log, in place of Kratos's logging.Server (which
// logs every error at ERROR, so each client mistake was logged twice:
// there and by EncodeError). Every request is logged once:
//   - a success at INFO (operation, code 200, latency);
//   - a gRPC error at WARN when it is the client's (code < 500) and at
//     ERROR with its cause when it is ours (5xx);
//   - an HTTP error not here: the server's error encoder (EncodeError)
//     logs it, at the same levels, because errors raised before the
//     middleware (body decoding) reach only the encoder.
func (in *Input) Logging() middleware.Middleware {
	return func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, req any) (any, error) {
			start := time.Now()
			reply, err := next(ctx, req)
			kind, op := "", ""
			if tr, ok := transport.FromServerContext(ctx); ok {
				kind, op = tr.Kind().String(), tr.Operation()
			}
			switch {
			case err == nil:
				in.log.WithContext(ctx).Log(log.LevelInfo, "msg", "api: request served", "kind", kind, "operation", op,
					"code", 200, "latency", time.Since(start).Seconds())
			case kind == string(transport.KindHTTP):
				// EncodeError logs it.
			default:
				se := errors.FromError(err)
				if se.Code >= 500 {
					in.log.WithContext(ctx).Errorw("msg", "api: request failed", "kind", kind, "operation", op,
						"code", se.Code, "reason", se.Reason, "err", err, "latency", time.Since(start).Seconds())
				} else {
					in.refused(ctx, kind, op, se)
				}
			}
			return reply, err
		}
	}
}
