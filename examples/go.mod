module github.com/tidemq/tide/examples

go 1.26.0

require (
	github.com/go-sql-driver/mysql v1.10.1
	github.com/golang-migrate/migrate/v4 v4.18.3
	github.com/redis/go-redis/v9 v9.23.0
	github.com/tidemq/tide/broker v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/nameserver v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/mqclient v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/mqclient/delay v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/mqclient/idempotent v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/mqclient/ordered v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/mqclient/txmsg v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/testenv v0.0.0-00010101000000-000000000000
	gorm.io/driver/mysql v1.6.0
	gorm.io/gorm v1.31.2
)

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/hashicorp/errwrap v1.1.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/jinzhu/now v1.1.5 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_golang v1.23.2 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	github.com/prometheus/common v0.66.1 // indirect
	github.com/prometheus/procfs v0.16.1 // indirect
	github.com/tidemq/tide/pkg/remoting v0.0.0-00010101000000-000000000000 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.38.0 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace (
	github.com/tidemq/tide/broker => ../broker
	github.com/tidemq/tide/nameserver => ../nameserver
	github.com/tidemq/tide/pkg/mqclient => ../pkg/mqclient
	github.com/tidemq/tide/pkg/remoting => ../pkg/remoting
	github.com/tidemq/tide/pkg/testenv => ../pkg/testenv
)

replace github.com/tidemq/tide/pkg/props => ../pkg/props

replace github.com/tidemq/tide/pkg/tidetest => ../pkg/tidetest

replace github.com/tidemq/tide/pkg/mqclient/delay => ../pkg/mqclient/delay

replace github.com/tidemq/tide/pkg/mqclient/idempotent => ../pkg/mqclient/idempotent

replace github.com/tidemq/tide/pkg/mqclient/ordered => ../pkg/mqclient/ordered

replace github.com/tidemq/tide/pkg/mqclient/txmsg => ../pkg/mqclient/txmsg
