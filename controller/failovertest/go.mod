module github.com/tidemq/tide/controller/failovertest

go 1.26.0

require (
	github.com/apache/rocketmq-client-go/v2 v2.1.2
	github.com/tidemq/tide/broker v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/mqclient v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/remoting v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/tidetest v0.0.0-00010101000000-000000000000
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/emirpasic/gods v1.12.0 // indirect
	github.com/golang/mock v1.3.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/konsorten/go-windows-terminal-sequences v1.0.1 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.2 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/patrickmn/go-cache v2.1.0+incompatible // indirect
	github.com/pkg/errors v0.8.1 // indirect
	github.com/prometheus/client_golang v1.23.2 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	github.com/prometheus/common v0.66.1 // indirect
	github.com/prometheus/procfs v0.16.1 // indirect
	github.com/sirupsen/logrus v1.4.0 // indirect
	github.com/tidemq/tide/nameserver v0.0.0-00010101000000-000000000000 // indirect
	github.com/tidwall/gjson v1.13.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	golang.org/x/crypto v0.41.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/term v0.34.0 // indirect
	google.golang.org/protobuf v1.36.8 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	stathat.com/c/consistent v1.0.0 // indirect
)

replace (
	github.com/tidemq/tide/broker => ../../broker
	github.com/tidemq/tide/nameserver => ../../nameserver
	github.com/tidemq/tide/pkg/mqclient => ../../pkg/mqclient
	github.com/tidemq/tide/pkg/remoting => ../../pkg/remoting
)

replace github.com/tidemq/tide/pkg/props => ../../pkg/props

replace github.com/tidemq/tide/pkg/tidetest => ../../pkg/tidetest

require github.com/tidemq/tide/pkg/testenv v0.0.0-00010101000000-000000000000 // indirect

replace github.com/tidemq/tide/pkg/testenv => ../../pkg/testenv
