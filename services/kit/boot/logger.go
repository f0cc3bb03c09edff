package boot

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/go-kratos/kratos/v2/log"
	"github.com/go-kratos/kratos/v2/middleware/tracing"

	"github.com/tidemq/tide/services/kit/telemetry"
)

// Logger returns a service's one logger: JSON records on w, each with
// the service's name and, when its context carries a span, trace_id and
// span_id (telemetry.TraceHandler). The second result is the same logger
// seen through Kratos's log.Logger interface (kratos.App, kit/api and
// Kratos middleware take one): it writes through the slog logger, so the
// process has one format and one sink. Logger also makes the slog logger
// slog.Default(), where pkg/mqclient and the pattern packages log.
func Logger(w io.Writer, name string) (*slog.Logger, log.Logger) {
	l := slog.New(telemetry.TraceHandler{Handler: slog.NewJSONHandler(w, nil)}).With("service", name)
	slog.SetDefault(l)
	return l, Kratos(l)
}

// Kratos returns l as a Kratos log.Logger: a record's "msg" value is the
// message, the other pairs its attributes, and Kratos's levels map onto
// slog's (fatal logs at error: Kratos's helper exits by itself). The
// span ids of a Kratos logger's WithContext are added as attributes.
func Kratos(l *slog.Logger) log.Logger {
	return log.With(kratosLogger{l}, "trace_id", tracing.TraceID(), "span_id", tracing.SpanID())
}

type kratosLogger struct{ l *slog.Logger }

func (k kratosLogger) Log(level log.Level, keyvals ...any) error {
	msg := ""
	attrs := make([]any, 0, len(keyvals))
	for i := 0; i+1 < len(keyvals); i += 2 {
		if keyvals[i] == log.DefaultMessageKey {
			msg = fmt.Sprint(keyvals[i+1])
			continue
		}
		if s, ok := keyvals[i+1].(string); ok && s == "" && (keyvals[i] == "trace_id" || keyvals[i] == "span_id") {
			continue // no span
		}
		attrs = append(attrs, keyvals[i], keyvals[i+1])
	}
	if len(keyvals)%2 == 1 {
		attrs = append(attrs, "!BADKEY", keyvals[len(keyvals)-1])
	}
	k.l.Log(context.Background(), slogLevel(level), msg, attrs...)
	return nil
}

// slogLevels maps Kratos's levels onto slog's; others log at INFO.
var slogLevels = map[log.Level]slog.Level{log.LevelDebug: slog.LevelDebug, log.LevelWarn: slog.LevelWarn,
	log.LevelError: slog.LevelError, log.LevelFatal: slog.LevelError}

func slogLevel(l log.Level) slog.Level { return slogLevels[l] }
