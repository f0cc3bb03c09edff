package boot

import (
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/go-kratos/kratos/v2"
	"github.com/go-kratos/kratos/v2/log"
	"github.com/go-kratos/kratos/v2/transport"
	"github.com/google/wire"
	"google.golang.org/protobuf/proto"

	"github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/kit/telemetry"
)

// Info names a service's build: its name and its version (a service's
// main sets Version with -ldflags "-X main.Version=…"). Wire hands it to
// NewApp.
type Info struct{ Name, Version string }

// Wire is a service's wireApp: it builds the app from the shared
// sections of the config (kit), the service's own (B), the build's Info
// and the service's slog logger; the func it returns releases what the
// app holds.
type Wire[B proto.Message] func(kit *conf.Bootstrap, own B, info Info, logger *slog.Logger) (*kratos.App, func(), error)

// Serve is a service's main: it parses the command line (-conf, a config
// file or directory, default defaultConf) and runs the service (Run). On
// an error it prints "<name>: <error>" to stderr and exits 1.
func Serve[T any, B interface {
	*T
	proto.Message
}](info Info, defaultConf string, wire Wire[B]) {
	path := flag.String("conf", defaultConf, "config file or directory, eg: -conf config.yaml")
	flag.Parse()
	if err := Run(info, *path, wire); err != nil {
		fmt.Fprintln(os.Stderr, info.Name+":", err)
		os.Exit(1)
	}
}

// Run runs a service until a signal: it sets up the one logger (Logger,
// on stdout), loads the configuration at path into kit/conf's Bootstrap
// and the service's own B (Load), installs tracing to the configured
// OTLP endpoint (Tracing), builds the app with wire and runs it; then it
// cleans up and flushes the spans.
func Run[T any, B interface {
	*T
	proto.Message
}](info Info, path string, wire Wire[B]) error {
	logger, _ := Logger(os.Stdout, info.Name)
	kit, own, err := LoadService[T, B](path)
	if err != nil {
		return err
	}
	stopTracing, err := Tracing(info.Name, info.Version, kit.GetObservability().GetOtlpEndpoint())
	if err != nil {
		return err
	}
	defer stopTracing()
	app, cleanup, err := wire(kit, own, info, logger)
	if err != nil {
		return err
	}
	defer cleanup()
	return app.Run()
}

// LoadService loads a service's configuration at path (Load): the shared
// sections into kit/conf's Bootstrap, the service's own into a new B
// (its Bootstrap; name the type: LoadService[conf.Bootstrap](path)).
// ${NAME:default} placeholders resolve from the environment.
func LoadService[T any, B interface {
	*T
	proto.Message
}](path string) (*conf.Bootstrap, B, error) {
	kit, own := new(conf.Bootstrap), B(new(T))
	if err := Load(path, kit, own); err != nil {
		return nil, nil, err
	}
	return kit, own, nil
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

// NewApp returns the service's Kratos application (a wire provider): its
// name, version and instance id (Instance), logger, and servers (started
// in order, stopped in reverse; a service's newServers lists them).
func NewApp(info Info, logger log.Logger, servers []transport.Server) *kratos.App {
	return kratos.New(kratos.ID(Instance()), kratos.Name(info.Name), kratos.Version(info.Version), kratos.Metadata(map[string]string{}),
		kratos.Logger(logger), kratos.Server(servers...))
}

// ProviderSet is what every service's wireApp takes from boot: the
// Kratos view of the slog logger (Kratos), the app (NewApp, from the
// service's newServers) and the shared sections of kit/conf's Bootstrap
// (server, data, cleanup; observability is Run's).
var ProviderSet = wire.NewSet(Kratos, NewApp, wire.FieldsOf(new(*conf.Bootstrap), "Server", "Data", "Cleanup"))
