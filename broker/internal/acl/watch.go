package acl

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemq/tide/broker/internal/clock"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// DefaultReloadInterval is how often a Validator looks at its file
// (RocketMQ's watcher polls every 500 ms; a second is plenty).
const DefaultReloadInterval = time.Second

// Validator checks requests against the ACL file at a path and reloads
// it when its content changes. A file that fails to parse on reload is
// logged and ignored: the previous configuration stays in force, so a
// half-written or broken edit never opens (or closes) the broker. Safe for
// concurrent use.
type Validator struct {
	path string
	log  *slog.Logger
	cfg  atomic.Pointer[Config]

	mu      sync.Mutex // serialises reloads; guards sum and version
	sum     [sha256.Size]byte
	version protocol.DataVersion

	editMu sync.Mutex // serialises Update and Replace (read, edit, write)

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Open parses the file at path (it must exist and be valid) and, when
// interval > 0, starts a goroutine reloading it on change until Close.
func Open(path string, interval time.Duration, log *slog.Logger) (*Validator, error) {
	if log == nil {
		log = slog.Default()
	}
	v := &Validator{path: path, log: log, stop: make(chan struct{}), done: make(chan struct{})}
	if _, err := v.Reload(); err != nil {
		return nil, err
	}
	if interval > 0 {
		go v.watch(interval)
	} else {
		close(v.done)
	}
	return v, nil
}

// Path returns the file the validator reads.
func (v *Validator) Path() string { return v.path }

// Config returns the configuration in force.
func (v *Validator) Config() *Config { return v.cfg.Load() }

// Check decides r against the configuration in force.
func (v *Validator) Check(r Request) error { return v.cfg.Load().Check(r) }

// Authorize decides res for an already verified sender against the
// configuration in force (see Config.Authorize).
func (v *Validator) Authorize(id Identity, admin bool, res ...Resource) error {
	return v.cfg.Load().Authorize(id, admin, res...)
}

// Reload reads the file and swaps the configuration in if its content
// changed and parses; it reports whether it swapped. On error the
// configuration in force is kept.
func (v *Validator) Reload() (bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	data, err := os.ReadFile(v.path)
	if err != nil {
		return false, fmt.Errorf("acl: read %s: %w", v.path, err)
	}
	sum := sha256.Sum256(data)
	if sum == v.sum && v.cfg.Load() != nil {
		return false, nil
	}
	cfg, err := Parse(data)
	if err != nil {
		return false, fmt.Errorf("%s: %w", v.path, err)
	}
	v.sum = sum
	v.cfg.Store(cfg)
	v.version = protocol.DataVersion{Timestamp: clock.Now().UnixMilli(), Counter: v.version.Counter + 1}
	v.log.Info("acl configuration loaded", "file", v.path, "accounts", cfg.Accounts(), "globalWhiteRemoteAddresses", len(cfg.globalWhite))
	return true, nil
}

// Version is the data version of the configuration in force, as
// RocketMQ's plain ACL keeps it: the counter is 1 after the first load
// and grows by one with every change loaded (an edit of the file, an
// admin request, the master's document in a metadata sync); the timestamp
// is when that change was loaded (ms). A reload of identical content
// changes nothing.
func (v *Validator) Version() protocol.DataVersion {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.version
}

func (v *Validator) watch(interval time.Duration) {
	defer close(v.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	var lastErr string
	for {
		select {
		case <-v.stop:
			return
		case <-t.C:
			if _, err := v.Reload(); err != nil {
				// Log a persisting error once, not every tick.
				if err.Error() != lastErr {
					v.log.Error("acl reload failed, previous configuration kept", "err", err)
				}
				lastErr = err.Error()
			} else {
				lastErr = ""
			}
		}
	}
}

// Close stops reloading and waits for the watcher goroutine. Check keeps
// working with the last configuration.
func (v *Validator) Close() {
	v.once.Do(func() { close(v.stop) })
	<-v.done
}
