package broker_test

import (
	"testing"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// The controller-mode start-up of real brokers against a real controller
// is tested in the controller module (controller/broker_test.go), so the
// broker module does not depend on the controller's.

func TestControllerModeOptions(t *testing.T) {
	for name, f := range map[string]func(*broker.Options){
		"no controllerAddr": func(o *broker.Options) { o.EnableControllerMode = true },
		"bad controllerAddr": func(o *broker.Options) {
			o.EnableControllerMode, o.ControllerAddr = true, "nohostport"
		},
		"slave role": func(o *broker.Options) {
			o.EnableControllerMode, o.ControllerAddr, o.BrokerRole, o.BrokerID = true, "127.0.0.1:1", "SLAVE", 1
		},
	} {
		o := broker.DefaultOptions()
		o.BrokerIP1 = "127.0.0.1"
		f(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("%s: Validate passed", name)
		}
	}
	o := broker.DefaultOptions()
	o.BrokerIP1 = "127.0.0.1"
	o.EnableControllerMode, o.ControllerAddr, o.BrokerID = true, "127.0.0.1:1;127.0.0.1:2", 5 // brokerId is ignored
	if err := o.Validate(); err != nil {
		t.Fatalf("valid controller mode options: %v", err)
	}
}

func TestControllerCodesOutsideControllerMode(t *testing.T) {
	e := newEnv(t)
	for _, code := range []int16{protocol.GetBrokerEpochCache, protocol.NotifyBrokerRoleChanged} {
		resp := e.invoke(protocol.NewRequest(code, nil, nil))
		if resp.Code != protocol.RequestCodeNotSupported || resp.Remark == "" {
			t.Errorf("code %d: %d %q", code, resp.Code, resp.Remark)
		}
	}
	if _, _, _, ok := e.b.ControllerRole(); ok {
		t.Error("ControllerRole ok outside controller mode")
	}
}
