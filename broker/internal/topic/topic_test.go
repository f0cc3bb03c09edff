package topic

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func open(t *testing.T, auto bool) (*Table, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "topics.json")
	tb, err := Open(p, Options{ClusterName: "DefaultCluster", BrokerName: "broker-a", AutoCreateTopicEnable: auto, DefaultTopicQueueNums: 8, ClusterTopicEnable: true, BrokerTopicEnable: true})
	if err != nil {
		t.Fatal(err)
	}
	return tb, p
}

func TestValidateName(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"TopicTest", true}, {"a-b_c%d|e", true}, {"%RETRY%g", true},
		{"", false}, {"  ", false}, {"a.b", false}, {"a b", false}, {"tópico", false},
		{strings.Repeat("x", 127), true}, {strings.Repeat("x", 128), false},
	}
	for _, c := range cases {
		err := ValidateName(c.name)
		if (err == nil) != c.ok {
			t.Errorf("ValidateName(%q) = %v", c.name, err)
		}
		if err != nil && !errors.Is(err, ErrInvalidName) {
			t.Errorf("error does not wrap ErrInvalidName: %v", err)
		}
	}
}

func TestTableSystemTopicsAndAutoCreate(t *testing.T) {
	tb, p := open(t, true)
	for _, n := range []string{AutoCreateTemplate, Schedule, TransHalf, "DefaultCluster", "broker-a", "DefaultCluster_REPLY_TOPIC"} {
		if _, ok := tb.Get(n); !ok {
			t.Errorf("system topic %s missing", n)
		}
	}
	v0 := tb.DataVersion()
	tc, created, err := tb.CreateOnSend("orders", AutoCreateTemplate, 4)
	if err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	if tc.WriteQueueNums != 4 || tc.Perm != protocol.PermRead|protocol.PermWrite {
		t.Fatalf("auto-created %+v", tc)
	}
	if tb.DataVersion().Counter <= v0.Counter {
		t.Fatal("data version not bumped")
	}
	if _, created, _ := tb.CreateOnSend("orders", AutoCreateTemplate, 4); created {
		t.Fatal("second send re-created the topic")
	}
	tc, _, _ = tb.CreateOnSend("big", AutoCreateTemplate, 100)
	if tc.WriteQueueNums != 8 {
		t.Fatalf("queues not capped by the template: %d", tc.WriteQueueNums)
	}
	if _, _, err := tb.CreateOnSend("x", "NoSuchTemplate", 4); !errors.Is(err, ErrNotExist) {
		t.Fatalf("missing template: %v", err)
	}
	if tc, _, _ := tb.CreateOnSend("%RETRY%g", AutoCreateTemplate, 4); tc.WriteQueueNums != 1 {
		t.Fatalf("retry topic queues %d", tc.WriteQueueNums)
	}

	re, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := re.Get("orders"); !ok {
		t.Fatal("topic not persisted")
	}
	if re.DataVersion() != tb.DataVersion() {
		t.Fatalf("version %v != %v", re.DataVersion(), tb.DataVersion())
	}
}

func TestTableNoAutoCreate(t *testing.T) {
	tb, _ := open(t, false)
	if _, ok := tb.Get(AutoCreateTemplate); ok {
		t.Fatal("TBW102 exists with auto-create off")
	}
	if _, _, err := tb.CreateOnSend("orders", AutoCreateTemplate, 4); !errors.Is(err, ErrNotExist) {
		t.Fatalf("want ErrNotExist, got %v", err)
	}
}

func TestTablePutDelete(t *testing.T) {
	tb, _ := open(t, true)
	if err := tb.Put(protocol.TopicConfig{TopicName: Schedule, ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}, false); !errors.Is(err, ErrSystemTopic) {
		t.Fatalf("put system topic: %v", err)
	}
	if err := tb.Put(protocol.TopicConfig{TopicName: "bad name"}, false); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("put bad name: %v", err)
	}
	if err := tb.Put(protocol.TopicConfig{TopicName: "t1", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}, false); err != nil {
		t.Fatal(err)
	}
	if ok, err := tb.Delete("t1"); !ok || err != nil {
		t.Fatalf("delete %v %v", ok, err)
	}
	if ok, _ := tb.Delete("t1"); ok {
		t.Fatal("deleted twice")
	}
}
