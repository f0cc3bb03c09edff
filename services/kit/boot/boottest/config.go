package boottest

import (
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tidemq/tide/services/kit/boot"
	"github.com/tidemq/tide/services/kit/cleanup"
	"github.com/tidemq/tide/services/kit/conf"
)

// Case is one environment a service's shipped config is loaded in, and
// what the shared sections must then hold.
type Case struct {
	Name string
	// Env is set before loading; a variable set to "" is unset instead,
	// so its placeholder's default applies. A variable another case sets
	// is unset in this one unless Env names it.
	Env map[string]string
	// OTLP is the expected observability.otlp_endpoint.
	OTLP string
	// Retention and CleanupDisabled are the expected cleanup.retention
	// and cleanup.disabled (cleanup.interval is always 1h).
	Retention       time.Duration
	CleanupDisabled bool
}

// Defaults is the case of an environment without the shared variables:
// no broker credentials (MQ_ACCESS_KEY, MQ_SECRET_KEY), no
// OTEL_EXPORTER_OTLP_ENDPOINT, no <prefix>_CLEANUP_RETENTION (so 7 days),
// and extra (<prefix>_CLEANUP_DISABLED "true" there expects the cleanup
// disabled).
func Defaults(prefix string, extra map[string]string) Case {
	return withExtra(Case{Name: "defaults", Env: map[string]string{"MQ_ACCESS_KEY": "", "MQ_SECRET_KEY": "",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "", prefix + "_CLEANUP_RETENTION": ""}, Retention: cleanup.DefaultRetention}, prefix, extra)
}

// FromEnv is the case of an environment that sets them: credentials
// svcKey/svcSecret, OTLP endpoint collector:4318, a retention of 10 days
// (864000s), and extra.
func FromEnv(prefix string, extra map[string]string) Case {
	return withExtra(Case{Name: "environment", Env: map[string]string{"MQ_ACCESS_KEY": "svcKey", "MQ_SECRET_KEY": "svcSecret",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318", prefix + "_CLEANUP_RETENTION": "864000s"},
		OTLP: "collector:4318", Retention: 10 * 24 * time.Hour}, prefix, extra)
}

func withExtra(c Case, prefix string, extra map[string]string) Case {
	maps.Copy(c.Env, extra)
	c.CleanupDisabled = c.Env[prefix+"_CLEANUP_DISABLED"] == "true"
	return c
}

// Config loads the shipped config at dir in each case's environment (a
// subtest per case), checks the shared sections (kit/conf's Bootstrap:
// a database source with migrate on, the OTLP endpoint, the cleanup's
// retention, hourly interval and switch), installs and flushes the
// tracing of service name with that endpoint, and hands the service's
// own Bootstrap to check for its sections.
func Config[T any, B interface {
	*T
	proto.Message
}](t *testing.T, name, dir string, cases []Case, check func(t *testing.T, c Case, own B)) {
	var vars []string
	for _, c := range cases {
		vars = append(vars, slices.Collect(maps.Keys(c.Env))...)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			for _, k := range vars {
				t.Setenv(k, c.Env[k]) // restored after the subtest
				if c.Env[k] == "" {
					os.Unsetenv(k) // the placeholder's default applies
				}
			}
			kit, own, err := boot.LoadService[T, B](dir)
			if err != nil {
				t.Fatal(err)
			}
			checkShared(t, c, kit)
			stop, err := boot.Tracing(name, "test", kit.GetObservability().GetOtlpEndpoint())
			if err != nil {
				t.Fatal(err)
			}
			stop()
			check(t, c, own)
		})
	}
}

func checkShared(t *testing.T, c Case, kit *conf.Bootstrap) {
	t.Helper()
	if db := kit.GetData().GetDatabase(); db.GetSource() == "" || !db.GetMigrate() {
		t.Errorf("database = %v", db)
	}
	if ep := kit.GetObservability().GetOtlpEndpoint(); ep != c.OTLP {
		t.Errorf("otlp_endpoint = %q, want %q", ep, c.OTLP)
	}
	if cu := kit.GetCleanup(); cu.GetRetention().AsDuration() != c.Retention || cu.GetInterval().AsDuration() != time.Hour ||
		cu.GetDisabled() != c.CleanupDisabled {
		t.Errorf("cleanup = %v, want retention %v, disabled %v", cu, c.Retention, c.CleanupDisabled)
	}
}

// Messaging checks a service's broker section m (inventory's and
// payment's messaging): name_servers is NAMESRV_ADDR where the case sets
// it, the credentials are the case's (Credentials), and no duplicate
// delivery is configured.
func Messaging(t *testing.T, c Case, m interface {
	GetNameServers() string
	GetAccessKey() string
	GetSecretKey() string
	GetDuplicateDelivery() bool
}) {
	t.Helper()
	if ns := c.Env["NAMESRV_ADDR"]; ns != "" && m.GetNameServers() != ns {
		t.Errorf("name_servers = %q, want %q", m.GetNameServers(), ns)
	}
	Credentials(t, c, m)
	if m.GetDuplicateDelivery() {
		t.Errorf("duplicate_delivery by default")
	}
}

// Credentials checks that m (a service's broker section) carries the
// case's broker credentials: MQ_ACCESS_KEY and MQ_SECRET_KEY, empty when
// unset.
func Credentials(t *testing.T, c Case, m interface {
	GetAccessKey() string
	GetSecretKey() string
}) {
	t.Helper()
	if m.GetAccessKey() != c.Env["MQ_ACCESS_KEY"] || m.GetSecretKey() != c.Env["MQ_SECRET_KEY"] {
		t.Errorf("credentials %q/%q, want %q/%q", m.GetAccessKey(), m.GetSecretKey(), c.Env["MQ_ACCESS_KEY"], c.Env["MQ_SECRET_KEY"])
	}
}
