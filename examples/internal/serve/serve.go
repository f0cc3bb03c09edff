// Package serve is the examples' main loop: build the app, serve HTTP,
// and on SIGINT/SIGTERM stop taking requests, finish those in flight and
// close the app (its producers and consumers drain and commit).
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// App is what an example builds.
type App interface {
	Routes() http.Handler
	// Close stops its producers, consumers and background jobs.
	Close(ctx context.Context) error
}

// Env returns the environment variable name, or def when it is unset.
func Env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// Run builds the app, serves it on addr until SIGINT or SIGTERM, then
// shuts down (at most 30 s).
func Run(addr string, log *slog.Logger, build func(context.Context) (App, error)) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	app, err := build(ctx)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	srv := &http.Server{Addr: addr, Handler: app.Routes(), ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("listening", "addr", addr)
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return errors.Join(ignoreClosed(err), srv.Shutdown(sctx), app.Close(sctx))
}

func ignoreClosed(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
