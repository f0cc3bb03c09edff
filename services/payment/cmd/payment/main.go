// Command payment runs the payment service: accounts, payments through
// transactional messages, refunds of cancelled orders, HTTP and gRPC APIs.
//
//	go run ./services/payment/cmd/payment -conf services/payment/configs
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/go-kratos/kratos/v2"
	"github.com/go-kratos/kratos/v2/config"
	"github.com/go-kratos/kratos/v2/config/env"
	"github.com/go-kratos/kratos/v2/config/file"
	"github.com/go-kratos/kratos/v2/log"
	"github.com/go-kratos/kratos/v2/transport/grpc"
	"github.com/go-kratos/kratos/v2/transport/http"

	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/conf"
	"github.com/tidemq/tide/services/payment/internal/server"
)

// Name and Version are set with -ldflags "-X main.Version=…".
var (
	Name    = "payment"
	Version = "dev"
)

func newApp(logger log.Logger, gs *grpc.Server, hs *http.Server, cs *server.ConsumerServer) *kratos.App {
	id, _ := os.Hostname()
	return kratos.New(
		kratos.ID(id),
		kratos.Name(Name),
		kratos.Version(Version),
		kratos.Logger(logger),
		kratos.Server(gs, hs, cs),
	)
}

// newOptions maps the config onto the use case's options and fault
// switches.
func newOptions(m *conf.Messaging, f *conf.Fault) biz.Options {
	o := biz.Options{
		CheckUnknownWindow: m.GetCheckUnknownWindow().AsDuration(),
		LocalTxTimeout:     m.GetLocalTxTimeout().AsDuration(),
		Faults:             biz.Faults{SlowLocalTx: f.GetSlowLocalTx().AsDuration()},
	}
	if f.GetCrashAfterCommit() {
		o.Faults.CrashAfterCommit = func() { os.Exit(3) }
	}
	return o
}

func main() {
	flagconf := flag.String("conf", "configs", "config file or directory, eg: -conf config.yaml")
	flag.Parse()
	if err := run(*flagconf); err != nil {
		fmt.Fprintln(os.Stderr, "payment:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	slogger := slog.New(slog.NewJSONHandler(os.Stdout, nil)).With("service", Name)
	logger := log.With(log.NewStdLogger(os.Stdout), "ts", log.DefaultTimestamp, "service", Name)
	c := config.New(config.WithSource(env.NewSource(), file.NewSource(path)), config.WithResolveActualTypes(true))
	defer c.Close()
	if err := c.Load(); err != nil {
		return err
	}
	var bc conf.Bootstrap
	if err := c.Scan(&bc); err != nil {
		return err
	}
	app, cleanup, err := wireApp(bc.Server, bc.Data, bc.Messaging, bc.Fault, logger, slogger)
	if err != nil {
		return err
	}
	defer cleanup()
	return app.Run()
}
