package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tidemq/tide/controller"
	"github.com/tidemq/tide/pkg/props"
	"github.com/tidemq/tide/pkg/remoting"
)

// config holds the settings as text until options types them.
type config struct {
	listenPort               string
	bindAddress              string
	group                    string
	peers                    string // controllerDLegerPeers: n0-host:raftPort;n1-...
	rpcPeers                 string // controllerRPCPeers: n0-host:port;n1-...
	selfID                   string
	storePath                string
	scanInterval             string // ms
	heartbeatTimeout         string // ms
	enableElectUncleanMaster string
	notifyBrokerRoleChanged  string
	brokerCredentials        string // innerClientAuthenticationCredentials: {"accessKey":..,"secretKey":..}
	// TLS, with the broker's key names and meaning.
	tlsMode       string
	tlsEnable     string
	tlsCertPath   string
	tlsKeyPath    string
	tlsCAPath     string
	tlsClientAuth string
}

// Supported keys. RocketMQ's ControllerConfig names are kept
// (controllerDLeger* describe the Raft group even though Tide runs
// hashicorp/raft, not DLedger); controllerRPCPeers (each node's remoting
// address, like jRaftControllerRPCAddr) and brokerHeartbeatTimeoutMills
// (RocketMQ's broker-side controllerHeartBeatTimeoutMills default) are
// Tide's.
var keys = map[string]func(c *config) *string{
	"listenPort":                  func(c *config) *string { return &c.listenPort },
	"bindAddress":                 func(c *config) *string { return &c.bindAddress },
	"controllerDLegerGroup":       func(c *config) *string { return &c.group },
	"controllerDLegerPeers":       func(c *config) *string { return &c.peers },
	"controllerRPCPeers":          func(c *config) *string { return &c.rpcPeers },
	"controllerDLegerSelfId":      func(c *config) *string { return &c.selfID },
	"controllerStorePath":         func(c *config) *string { return &c.storePath },
	"scanNotActiveBrokerInterval": func(c *config) *string { return &c.scanInterval },
	"brokerHeartbeatTimeoutMills": func(c *config) *string { return &c.heartbeatTimeout },
	"enableElectUncleanMaster":    func(c *config) *string { return &c.enableElectUncleanMaster },
	"notifyBrokerRoleChanged":     func(c *config) *string { return &c.notifyBrokerRoleChanged },
	// The broker's key name for its own signing account (RocketMQ 5):
	// the controller signs its requests to brokers with it.
	"innerClientAuthenticationCredentials": func(c *config) *string { return &c.brokerCredentials },
	"tlsMode":                              func(c *config) *string { return &c.tlsMode },
	"tls.server.mode":                      func(c *config) *string { return &c.tlsMode },
	"tlsEnable":                            func(c *config) *string { return &c.tlsEnable },
	"tlsCertPath":                          func(c *config) *string { return &c.tlsCertPath },
	"tlsKeyPath":                           func(c *config) *string { return &c.tlsKeyPath },
	"tlsCAPath":                            func(c *config) *string { return &c.tlsCAPath },
	"tlsClientAuth":                        func(c *config) *string { return &c.tlsClientAuth },
}

func defaultConfig() config {
	d := controller.DefaultOptions()
	host, port, _ := net.SplitHostPort(d.ListenAddr)
	c := config{listenPort: port, bindAddress: host, group: d.Group,
		scanInterval:             strconv.FormatInt(d.ScanInterval.Milliseconds(), 10),
		heartbeatTimeout:         strconv.FormatInt(d.HeartbeatTimeout.Milliseconds(), 10),
		enableElectUncleanMaster: strconv.FormatBool(d.EnableElectUncleanMaster),
		notifyBrokerRoleChanged:  strconv.FormatBool(d.NotifyBrokerRoleChanged)}
	if home, err := os.UserHomeDir(); err == nil {
		c.storePath = filepath.Join(home, "controller")
	}
	return c
}

// load applies a properties file; an unknown key is an error.
func (c *config) load(path string) error {
	entries, err := props.ParseFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	for _, e := range entries {
		field, ok := keys[e.Key]
		if !ok {
			return fmt.Errorf("config %s:%d: unknown key %q", path, e.Line, e.Key)
		}
		*field(c) = e.Value
	}
	return nil
}

// options validates the settings and builds Options.
func (c *config) options(logger *slog.Logger) (controller.Options, error) {
	o := controller.DefaultOptions()
	port, err := strconv.Atoi(c.listenPort)
	if err != nil || port < 0 || port > 65535 {
		return o, fmt.Errorf("bad listenPort %q: want a number in 0..65535", c.listenPort)
	}
	o.ListenAddr = net.JoinHostPort(c.bindAddress, strconv.Itoa(port))
	o.Group, o.NodeID, o.DataDir = c.group, c.selfID, c.storePath
	if o.Peers, err = parsePeers(c.peers, c.rpcPeers); err != nil {
		return o, err
	}
	if o.ScanInterval, err = millis("scanNotActiveBrokerInterval", c.scanInterval); err != nil {
		return o, err
	}
	if o.HeartbeatTimeout, err = millis("brokerHeartbeatTimeoutMills", c.heartbeatTimeout); err != nil {
		return o, err
	}
	if o.EnableElectUncleanMaster, err = strconv.ParseBool(c.enableElectUncleanMaster); err != nil {
		return o, fmt.Errorf("bad enableElectUncleanMaster %q: want true or false", c.enableElectUncleanMaster)
	}
	if o.NotifyBrokerRoleChanged, err = strconv.ParseBool(c.notifyBrokerRoleChanged); err != nil {
		return o, fmt.Errorf("bad notifyBrokerRoleChanged %q: want true or false", c.notifyBrokerRoleChanged)
	}
	if strings.TrimSpace(c.brokerCredentials) != "" {
		if err := json.Unmarshal([]byte(c.brokerCredentials), &o.BrokerCredentials); err != nil || o.BrokerCredentials.AccessKey == "" || o.BrokerCredentials.SecretKey == "" {
			return o, fmt.Errorf(`bad innerClientAuthenticationCredentials: want {"accessKey":"...","secretKey":"..."}`)
		}
	}
	if err := c.tls(&o); err != nil {
		return o, err
	}
	o.Logger = logger
	return o, o.Validate()
}

// tls applies the TLS keys as the broker reads them: tlsMode (or
// tls.server.mode) is the remoting port's mode, else enforcing with
// tlsEnable, else permissive; tlsCertPath/tlsKeyPath are the port's
// certificate; tlsClientAuth requires client certificates signed by
// tlsCAPath (mutual TLS: how the port authenticates its clients);
// tlsEnable makes NOTIFY_BROKER_ROLE_CHANGED to brokers speak TLS,
// trusting tlsCAPath and presenting the certificate with tlsClientAuth.
func (c *config) tls(o *controller.Options) error {
	boolean := func(key, v string) (bool, error) {
		if v == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("bad %s %q: want true or false", key, v)
		}
		return b, nil
	}
	enable, err := boolean("tlsEnable", c.tlsEnable)
	if err != nil {
		return err
	}
	clientAuth, err := boolean("tlsClientAuth", c.tlsClientAuth)
	if err != nil {
		return err
	}
	switch {
	case c.tlsMode != "":
		if o.TLSMode, err = remoting.ParseTLSMode(c.tlsMode); err != nil {
			return fmt.Errorf("bad tlsMode %q: want disabled, permissive or enforcing", c.tlsMode)
		}
	case enable:
		o.TLSMode = remoting.TLSEnforcing
	default:
		o.TLSMode = remoting.TLSPermissive
	}
	if (enable || o.TLSMode == remoting.TLSEnforcing) && (c.tlsCertPath == "" || c.tlsKeyPath == "") {
		return fmt.Errorf("tlsEnable and tlsMode enforcing need tlsCertPath and tlsKeyPath")
	}
	if clientAuth && c.tlsCAPath == "" {
		return fmt.Errorf("tlsClientAuth needs tlsCAPath")
	}
	ca := ""
	if clientAuth {
		ca = c.tlsCAPath
	}
	if o.TLSMode != remoting.TLSDisabled && c.tlsCertPath != "" && c.tlsKeyPath != "" {
		if o.TLSConfig, err = remoting.ServerTLSFiles(c.tlsCertPath, c.tlsKeyPath, ca); err != nil {
			return err
		}
	}
	if enable {
		cert, key := "", ""
		if clientAuth {
			cert, key = c.tlsCertPath, c.tlsKeyPath
		}
		if o.ClientTLSConfig, err = remoting.ClientTLSFiles(c.tlsCAPath, cert, key, ""); err != nil {
			return err
		}
	}
	return nil
}

// parsePeers joins "id-raftAddr;..." and "id-addr;..." by id.
func parsePeers(raftPeers, rpcPeers string) ([]controller.Peer, error) {
	raft, err := parseIDAddrs("controllerDLegerPeers", raftPeers)
	if err != nil {
		return nil, err
	}
	rpc, err := parseIDAddrs("controllerRPCPeers", rpcPeers)
	if err != nil {
		return nil, err
	}
	if len(raft) != len(rpc) {
		return nil, fmt.Errorf("controllerDLegerPeers and controllerRPCPeers must name the same nodes")
	}
	var out []controller.Peer
	for _, p := range raft {
		addr, ok := lookup(rpc, p[0])
		if !ok {
			return nil, fmt.Errorf("controllerRPCPeers has no address for node %q", p[0])
		}
		out = append(out, controller.Peer{ID: p[0], RaftAddr: p[1], Addr: addr})
	}
	return out, nil
}

func parseIDAddrs(key, s string) ([][2]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%s is required (n0-host:port;n1-host:port;n2-host:port)", key)
	}
	var out [][2]string
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, addr, ok := strings.Cut(part, "-")
		if !ok || id == "" {
			return nil, fmt.Errorf("bad %s entry %q: want id-host:port", key, part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("bad %s entry %q: %v", key, part, err)
		}
		out = append(out, [2]string{id, addr})
	}
	return out, nil
}

func lookup(ps [][2]string, id string) (string, bool) {
	for _, p := range ps {
		if p[0] == id {
			return p[1], true
		}
	}
	return "", false
}

func millis(key, v string) (time.Duration, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > int64(24*time.Hour/time.Millisecond) {
		return 0, fmt.Errorf("bad %s %q: want milliseconds in 1..86400000", key, v)
	}
	return time.Duration(n) * time.Millisecond, nil
}
