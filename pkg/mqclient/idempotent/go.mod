module github.com/tidemq/tide/pkg/mqclient/idempotent

go 1.26.0

require (
	github.com/go-sql-driver/mysql v1.10.1
	github.com/prometheus/client_golang v1.23.2
	github.com/redis/go-redis/v9 v9.23.0
	github.com/tidemq/tide/broker v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/mqclient v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/testenv v0.0.0-00010101000000-000000000000
	gorm.io/driver/mysql v1.6.0
	gorm.io/gorm v1.31.2
)

require github.com/tidemq/tide/nameserver v0.0.0-00010101000000-000000000000 // indirect

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/jinzhu/now v1.1.5 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	github.com/prometheus/common v0.66.1 // indirect
	github.com/prometheus/procfs v0.16.1 // indirect
	github.com/tidemq/tide/pkg/remoting v0.0.0-00010101000000-000000000000 // indirect
	github.com/tidemq/tide/pkg/tidetest v0.0.0-00010101000000-000000000000
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.28.0 // indirect
	google.golang.org/protobuf v1.36.8 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace github.com/tidemq/tide/pkg/mqclient => ..

replace github.com/tidemq/tide/pkg/remoting => ../../remoting

replace github.com/tidemq/tide/broker => ../../../broker

replace github.com/tidemq/tide/nameserver => ../../../nameserver

replace github.com/tidemq/tide/pkg/testenv => ../../testenv

replace github.com/tidemq/tide/pkg/props => ../../props

replace github.com/tidemq/tide/pkg/tidetest => ../../tidetest
