package boot

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/go-kratos/kratos/v2"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/tidemq/tide/services/kit/conf"
)

// TestRunHandsBothSections: Run reads one config file into kit/conf's
// Bootstrap (the shared sections) and the service's own message, and
// hands both and the Info to wire; wire's error is Run's.
func TestRunHandsBothSections(t *testing.T) {
	dir := writeConfig(t, "server:\n  http:\n    addr: 127.0.0.1:20001\nmessaging:\n  name_servers: ${KIT_BOOT_NS:ns:9876}\n")
	errWire := errors.New("wire refused")
	var gotAddr, gotNS string
	var gotInfo Info
	err := Run(Info{Name: "svc", Version: "v1"}, dir, func(kit *conf.Bootstrap, own *structpb.Struct, info Info, _ *slog.Logger) (*kratos.App, func(), error) {
		gotAddr, gotInfo = kit.GetServer().GetHttp().GetAddr(), info
		gotNS = own.GetFields()["messaging"].GetStructValue().GetFields()["name_servers"].GetStringValue()
		return nil, nil, errWire
	})
	if !errors.Is(err, errWire) {
		t.Fatalf("Run = %v, want wire's error", err)
	}
	if gotAddr != "127.0.0.1:20001" || gotNS != "ns:9876" || gotInfo != (Info{Name: "svc", Version: "v1"}) {
		t.Fatalf("wire got addr %q, name servers %q, info %v", gotAddr, gotNS, gotInfo)
	}
}
