package broker

import (
	"errors"
	"testing"

	"github.com/tidemq/tide/pkg/props"
)

// FuzzConfig parses arbitrary broker.conf text as the broker command does
// (properties, then Options.Apply, then Validate): a bad file must give
// an error wrapping ErrInvalidOptions or a parse error, never a panic,
// and a value Apply accepts must survive Validate without panicking.
func FuzzConfig(f *testing.F) {
	for _, seed := range []string{
		"brokerClusterName=DefaultCluster\nbrokerName=broker-a\nbrokerId=0\nbrokerRole=ASYNC_MASTER\nflushDiskType=ASYNC_FLUSH\n",
		"listenPort=-1\nbrokerIP1=::1\nnamesrvAddr=a;b:1;;\n",
		"mappedFileSizeCommitLog=4096\nmaxMessageSize=99999999999\nmessageDelayLevel=1s 5m 2h 1d 0s\n",
		"aclEnable=true\nplainAclFile=/nonexistent\ntlsEnable=true\nserverMaxConnections=-5\n",
		"deleteWhen=04;25\nfileReservedTime=x\nbrokerPermission=6\ndiskSpaceWarningLevelRatio=200\n",
		"autoCreateTopicEnable=maybe\n",
		"a\\\n=b\\u0041\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := props.Parse(data)
		if err != nil {
			return
		}
		kv := make(map[string]string, len(entries))
		for _, e := range entries {
			kv[e.Key] = e.Value
		}
		o := DefaultOptions()
		if _, err := o.Apply(kv); err != nil {
			if !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("Apply error %v does not wrap ErrInvalidOptions", err)
			}
			return
		}
		if err := o.Validate(); err != nil && !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("Validate error %v does not wrap ErrInvalidOptions", err)
		}
		_ = o.NameServers()
		_ = o.AclFile()
	})
}
