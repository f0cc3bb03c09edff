package boot

import (
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/go-kratos/kratos/v2"
	"github.com/go-kratos/kratos/v2/log"
	"github.com/go-kratos/kratos/v2/transport"
	"github.com/tidemq/tide/services/kit/telemetry"
	"google.golang.org/protobuf/proto"
)

// Main is a service's main: it parses the command line (-conf, a config
// file or directory, default defaultConf), calls run with the config
// path, and on an error prints "<name>: <error>" to stderr and exits 1.
func Main(name, defaultConf string, run func(confPath string) error) {
	conf := flag.String("conf", defaultConf, "config file or directory, eg: -conf config.yaml")
	flag.Parse()
	if err := run(*conf); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// Instance is the process's instance id (the host name).
func Instance() string {
	id, _ := os.Hostname()
	return id
}

// Tracing installs the service's tracer provider (exporting over
// OTLP/HTTP to endpoint when set) and the W3C propagators
// (telemetry.Setup). The returned func flushes queued spans; call it
// once, after the app stopped.
func Tracing(name, version, endpoint string) (func(), error) {
	return telemetry.Setup(telemetry.Options{Name: name, Version: version, Instance: Instance(), Endpoint: endpoint})
}

// App returns the service's Kratos application: its name, version and
// instance id (Instance), logger, and servers (started in order, stopped
// in reverse).
func App(name, version string, logger log.Logger, servers ...transport.Server) *kratos.App {
	return kratos.New(kratos.ID(Instance()), kratos.Name(name), kratos.Version(version), kratos.Metadata(map[string]string{}),
		kratos.Logger(logger), kratos.Server(servers...))
}

// Run is a service's run: it sets up the one logger (Logger, on
// stdout), loads the configuration at path into bc (Load), installs
// tracing to the OTLP endpoint endpoint() names (Tracing), builds the
// app with build (the service's wireApp, given the slog logger; its
// wiring adapts it with Kratos where Kratos or kit/api take a log.Logger)
// and runs it until a signal; then it cleans up and
// flushes the spans.
func Run(name, version, path string, bc proto.Message, endpoint func() string,
	build func(*slog.Logger) (*kratos.App, func(), error)) error {
	logger, _ := Logger(os.Stdout, name)
	// ${NAME:default} placeholders in the file resolve from the environment.
	if err := Load(path, bc); err != nil {
		return err
	}
	stopTracing, err := Tracing(name, version, endpoint())
	if err != nil {
		return err
	}
	defer stopTracing()
	app, cleanup, err := build(logger)
	if err != nil {
		return err
	}
	defer cleanup()
	return app.Run()
}
