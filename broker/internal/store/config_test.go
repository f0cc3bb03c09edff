package store

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func TestConfigSet(t *testing.T) {
	tests := []struct {
		key, val string
		check    func(c Config) bool
		wantErr  bool
	}{
		{"storePathRootDir", "/data/store", func(c Config) bool { return c.StorePathRootDir == "/data/store" }, false},
		{"mappedFileSizeCommitLog", "1048576", func(c Config) bool { return c.MappedFileSizeCommitLog == 1<<20 }, false},
		{"flushDiskType", "SYNC_FLUSH", func(c Config) bool { return c.FlushDiskType == SyncFlush }, false},
		{"messageIndexEnable", "false", func(c Config) bool { return !c.MessageIndexEnable }, false},
		{"fileReservedTime", " 48 ", func(c Config) bool { return c.FileReservedTime == 48 }, false},
		{"fileReservedTime", "two days", nil, true},
		{"commitLogPretouchAhead", "0", func(c Config) bool { return c.CommitLogPretouchAhead == 0 }, false},
		{"brokerName", "b1", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.key+"="+tc.val, func(t *testing.T) {
			c := DefaultConfig()
			err := c.Set(tc.key, tc.val)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Set: %v", err)
			}
			if tc.key == "brokerName" && !errors.Is(err, ErrUnknownKey) {
				t.Fatalf("unknown key error %v", err)
			}
			if tc.check != nil && !tc.check(c) {
				t.Fatalf("not applied: %+v", c)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(c *Config)
		want   string // substring of the error, "" for valid
	}{
		{"defaults", func(c *Config) {}, ""},
		{"flush type", func(c *Config) { c.FlushDiskType = "SOMETIMES" }, "flushDiskType"},
		{"cq size", func(c *Config) { c.MappedFileSizeConsumeQueue = 30 }, "mappedFileSizeConsumeQueue"},
		{"small segment", func(c *Config) { c.MappedFileSizeCommitLog = 100 }, "mappedFileSizeCommitLog"},
		{"message vs segment", func(c *Config) { c.MappedFileSizeCommitLog = 8192; c.MaxMessageSize = 8192 }, "maxMessageSize"},
		{"delete when", func(c *Config) { c.DeleteWhen = "25" }, "deleteWhen"},
		{"ratio", func(c *Config) { c.DiskMaxUsedSpaceRatio = 0 }, "diskMaxUsedSpaceRatio"},
		{"delay levels", func(c *Config) { c.MessageDelayLevel = "1s 5x" }, "messageDelayLevel"},
		{"pretouch negative", func(c *Config) { c.CommitLogPretouchAhead = -1 }, "commitLogPretouchAhead"},
		{"pretouch off", func(c *Config) { c.CommitLogPretouchAhead = 0 }, ""},
		{"pretouch larger than a segment", func(c *Config) { c.MappedFileSizeCommitLog = 1 << 20; c.MaxMessageSize = 1 << 19 }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.modify(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want mention of %s", err, tc.want)
			}
		})
	}
}

func TestParseDelayLevels(t *testing.T) {
	d, err := ParseDelayLevels(DefaultConfig().MessageDelayLevel)
	if err != nil || len(d) != 18 || d[0] != time.Second || d[2] != 10*time.Second || d[17] != 2*time.Hour {
		t.Fatalf("default levels: %v %v", d, err)
	}
	if d, err := ParseDelayLevels("1d 0s"); err != nil || d[0] != 24*time.Hour || d[1] != 0 {
		t.Fatalf("1d 0s: %v %v", d, err)
	}
	if d, err := ParseDelayLevels("100ms 2s"); err != nil || d[0] != 100*time.Millisecond || d[1] != 2*time.Second {
		t.Fatalf("100ms 2s: %v %v", d, err)
	}
	for _, bad := range []string{"", "s", "1", "-1s", "1w", "ms", "-5ms", "1.5s"} {
		if _, err := ParseDelayLevels(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestTagsHashMatchesProtocol(t *testing.T) {
	for _, tag := range []string{"", "TagA", "a b c", "très", "标签", "x||y"} {
		if got, want := tagsHash([]byte(tag)), protocol.TagsHashCode(tag); got != want {
			t.Errorf("tagsHash(%q) = %d, want %d", tag, got, want)
		}
	}
	props := []byte(protocol.EncodeProperties(map[string]string{"TAGS": "a", "KEYS": "k1 k2", "TAGSX": "no"}))
	for _, tc := range []struct{ key, want string }{{"TAGS", "a"}, {"KEYS", "k1 k2"}, {"TAG", ""}, {"TAGSX", "no"}} {
		got, _ := protocol.PropertyBytes(props, tc.key)
		if string(got) != tc.want {
			t.Errorf("property(%s) = %q, want %q", tc.key, got, tc.want)
		}
	}
}
