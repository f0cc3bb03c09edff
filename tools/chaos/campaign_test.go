package chaos

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// SliceSeed is the campaign slice `go test` runs: in its first minute the
// schedule pauses the slave, kills the master, fills the master's disk,
// isolates the master, splits the hosts in a bridge partition and drops
// the master's packets to the clients (chaos -schedule -seed 44 -duration 1m).
const SliceSeed = 44

// TestCampaignSlice runs a one-minute campaign with a fixed seed against
// real processes on a private network and fails on any violation. It
// needs root for network namespaces: without them it is SKIPPED with the
// reason, never passed.
func TestCampaignSlice(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED: -short (the slice runs for about two minutes)")
	}
	if err := CheckNetns(); err != nil {
		t.Skipf("SKIPPED: %v", err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var out bytes.Buffer
	o := DefaultOptions()
	o.Seed, o.Duration, o.Drain, o.Dir, o.Root, o.Out = SliceSeed, 60*time.Second, 150*time.Second, dir, root, &out
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	rep, err := Run(ctx, o)
	t.Log("\n" + out.String())
	if errors.Is(err, ErrNoNetns) {
		t.Skipf("SKIPPED: %v", err)
	}
	if err != nil {
		logTails(t, dir)
		t.Fatal(err)
	}
	var b bytes.Buffer
	rep.Print(&b, 20)
	t.Log("\n" + b.String())
	if !rep.OK() {
		logTails(t, dir)
		t.Fatalf("%d violations (seed %d; the report above shows each with its events)", len(rep.Violations), SliceSeed)
	}
	total := 0
	for _, n := range rep.Faults {
		total += n
	}
	if total < 4 || rep.Messages[OpSend] == 0 || rep.Deliveries[GroupOrdered] == 0 {
		t.Fatalf("the slice did too little to check anything: %d faults, %d sends acked, %d ordered deliveries",
			total, rep.Messages[OpSend], rep.Deliveries[GroupOrdered])
	}
}

func logTails(t *testing.T, dir string) {
	for _, name := range []string{"ns1/nameserver.log", "ns2/nameserver.log", "master/broker.log", "slave/broker.log", "clients.log"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		if len(data) > 6<<10 {
			data = data[len(data)-6<<10:]
		}
		t.Logf("===== %s (tail)\n%s", name, data)
	}
}
