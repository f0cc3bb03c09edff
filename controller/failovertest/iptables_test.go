//go:build cluster

package failovertest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// ipChain is an iptables chain of the test's own (<prefix>-<pid>), jumped
// to from hook (OUTPUT, INPUT) and removed when the test ends. Tests that
// need it are skipped without root or iptables.
type ipChain struct {
	t    *testing.T
	name string
}

func newIPChain(t *testing.T, prefix, hook string) *ipChain {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root (iptables rules)")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("SKIPPED: needs iptables")
	}
	c := &ipChain{t: t, name: prefix + "-" + strconv.Itoa(os.Getpid())}
	if out, err := c.run("-N", c.name); err != nil {
		t.Skipf("SKIPPED: iptables cannot create a chain: %v %s", err, out)
	}
	if out, err := c.run("-I", hook, "-j", c.name); err != nil {
		c.run("-X", c.name)
		t.Fatalf("iptables: %v %s", err, out)
	}
	t.Cleanup(func() {
		c.run("-D", hook, "-j", c.name)
		c.run("-F", c.name)
		c.run("-X", c.name)
	})
	return c
}

func (c *ipChain) run(args ...string) (string, error) {
	out, err := exec.Command("iptables", append([]string{"-w"}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// add appends a rule to the chain.
func (c *ipChain) add(rule ...string) {
	c.t.Helper()
	if out, err := c.run(append([]string{"-A", c.name}, rule...)...); err != nil {
		c.t.Fatalf("iptables %v: %v %s", rule, err, out)
	}
}

// flush removes every rule of the chain.
func (c *ipChain) flush() {
	c.t.Helper()
	if out, err := c.run("-F", c.name); err != nil {
		c.t.Fatalf("iptables -F: %v %s", err, out)
	}
}
