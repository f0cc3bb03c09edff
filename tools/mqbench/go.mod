module github.com/tidemq/tide/tools/mqbench

go 1.26.0

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0
	github.com/nats-io/nats.go v1.55.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/tidemq/tide/broker v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/nameserver v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/mqclient v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/remoting v0.0.0-00010101000000-000000000000
	golang.org/x/sys v0.50.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/klauspost/compress v1.20.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	github.com/prometheus/client_golang v1.23.2 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	github.com/prometheus/common v0.66.1 // indirect
	github.com/prometheus/procfs v0.16.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	google.golang.org/protobuf v1.36.8 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace (
	github.com/tidemq/tide/broker => ../../broker
	github.com/tidemq/tide/nameserver => ../../nameserver
	github.com/tidemq/tide/pkg/mqclient => ../../pkg/mqclient
	github.com/tidemq/tide/pkg/remoting => ../../pkg/remoting
)

replace github.com/tidemq/tide/pkg/props => ../../pkg/props

replace github.com/tidemq/tide/pkg/tidetest => ../../pkg/tidetest
