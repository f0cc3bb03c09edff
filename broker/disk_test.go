package broker_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// smallFS mounts a tmpfs of size bytes for the test, or skips it when
// mounting is not allowed (not root, no CAP_SYS_ADMIN).
func smallFS(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs (%v: %s): disk-full test needs root", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// TestDiskFullRefusesAndRecovers: on a nearly full file system the broker
// refuses sends with SERVICE_NOT_AVAILABLE and says why, stores nothing,
// and takes sends again once space returns; what was stored before is
// intact.
func TestDiskFullRefusesAndRecovers(t *testing.T) {
	t.Parallel()
	fs := smallFS(t, "64m")
	e := newEnv(t, func(o *broker.Options) {
		o.Store.StorePathRootDir = filepath.Join(fs, "store")
		o.Store.MappedFileSizeCommitLog = 4 << 20
		o.Store.MaxMessageSize = 1 << 20
		o.Store.CleanResourceInterval = 50
	})
	topic := uniq("DiskTopic")
	if err := createTopic(e.addr, topic, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := sendRaw(e.raw, e.addr, topic); err != nil {
		t.Fatalf("first send: %v", err)
	}
	before := e.maxOffset(topic, 0)

	// Fill the file system past diskSpaceWarningLevelRatio (90%).
	ballast := filepath.Join(fs, "ballast")
	f, err := os.Create(ballast)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for {
		var st syscall.Statfs_t
		syscall.Statfs(fs, &st)
		if float64(st.Bavail)/float64(st.Blocks) < 0.05 {
			break
		}
		if _, err := f.Write(chunk); err != nil {
			break // ENOSPC: as full as it gets
		}
	}
	f.Close()
	var refusal *protocol.Command
	eventually(t, 10*time.Second, "sends refused on a full disk", func() bool {
		resp, _ := sendRaw(e.raw, e.addr, topic)
		if resp != nil && resp.Code == protocol.ServiceNotAvailable {
			refusal = resp
			return true
		}
		return false
	})
	t.Logf("full disk: code %d remark %q", refusal.Code, refusal.Remark)
	if !strings.Contains(refusal.Remark, "disk") {
		t.Errorf("refusal remark %q does not say the disk is full", refusal.Remark)
	}
	stored := e.maxOffset(topic, 0)

	// Space returns: sends are taken again, nothing stored before is lost.
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "sends accepted again", func() bool {
		_, err := sendRaw(e.raw, e.addr, topic)
		return err == nil
	})
	if stored < before {
		t.Errorf("max offset went back from %d to %d", before, stored)
	}
	// Every message acknowledged (the first, and the one after recovery)
	// is readable, in one piece; consume queues are dispatched
	// asynchronously.
	eventually(t, 5*time.Second, "every stored message readable", func() bool {
		n := int64(len(e.pullAll("disk_cg", topic, 0)))
		return n >= 2 && n == e.maxOffset(topic, 0)
	})
}

// TestPermissionDeniedRefusesAndRecovers: when the commit log directory
// refuses new files (made immutable: root ignores permission bits), sends
// that need a new segment fail with a clear error instead of hanging or
// corrupting anything, and succeed again once the directory is writable.
func TestPermissionDeniedRefusesAndRecovers(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("chattr"); err != nil {
		t.Skip("chattr not installed")
	}
	root := t.TempDir()
	e := newEnv(t, func(o *broker.Options) {
		o.Store.StorePathRootDir = root
		o.Store.MappedFileSizeCommitLog = 256 << 10
		o.Store.MaxMessageSize = 64 << 10
	})
	topic := uniq("PermTopic")
	if err := createTopic(e.addr, topic, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := sendRaw(e.raw, e.addr, topic); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "commitlog")
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("chattr +i %s: %v %s", dir, err, out)
	}
	unlock := func() { exec.Command("chattr", "-i", dir).Run() }
	t.Cleanup(unlock)

	body := make([]byte, 32<<10)
	acked := int64(1)
	var failure *protocol.Command
	for i := 0; i < 64 && failure == nil; i++ { // 2 MiB: several segments
		resp := e.sendBody(topic, body)
		if resp.Code == protocol.Success {
			acked++
		} else {
			failure = resp
		}
	}
	if failure == nil {
		t.Fatal("sends needing new segments in an immutable directory all succeeded")
	}
	t.Logf("immutable commit log directory: code %d remark %q", failure.Code, failure.Remark)
	if !strings.Contains(failure.Remark, "segment") || !strings.Contains(failure.Remark, "not permitted") {
		t.Errorf("refusal %d %q does not say a segment could not be created", failure.Code, failure.Remark)
	}
	unlock()
	eventually(t, 10*time.Second, "sends accepted again", func() bool {
		return e.sendBody(topic, body).Code == protocol.Success
	})
	acked++
	eventually(t, 5*time.Second, "every acknowledged message readable", func() bool {
		return int64(len(e.pullAll("perm_cg", topic, 0))) >= acked
	})
}

// sendBody sends one message with body on queue 0 and returns the response.
func (e *env) sendBody(topic string, body []byte) *protocol.Command {
	e.t.Helper()
	h := protocol.SendMessageRequestHeader{ProducerGroup: "raw", Topic: topic, DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		QueueID: 0, BornTimestamp: time.Now().UnixMilli(), MaxReconsumeTimes: -1}
	return e.invoke(protocol.NewRequest(protocol.SendMessage, h.Encode(), body))
}
