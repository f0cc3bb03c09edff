module github.com/tidemq/tide/services/payment

go 1.26.0

require (
	github.com/go-kratos/kratos/v2 v2.9.2
	github.com/go-sql-driver/mysql v1.10.1
	github.com/google/wire v0.7.0
	github.com/prometheus/client_golang v1.23.2
	github.com/redis/go-redis/v9 v9.23.0
	github.com/tidemq/tide/api v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/broker v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/nameserver v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/mqclient v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/mqclient/idempotent v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/mqclient/kratosmq v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/mqclient/ordered v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/mqclient/tracing v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/mqclient/txmsg v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/remoting v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/testenv v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/services/kit v0.0.0-00010101000000-000000000000
	go.opentelemetry.io/otel v1.38.0
	go.opentelemetry.io/otel/sdk v1.38.0
	go.opentelemetry.io/otel/trace v1.38.0
	google.golang.org/grpc v1.75.0
	google.golang.org/protobuf v1.36.11
	gorm.io/gorm v1.31.2
)

require (
	dario.cat/mergo v1.0.0 // indirect
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cenkalti/backoff/v5 v5.0.3 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/fsnotify/fsnotify v1.6.0 // indirect
	github.com/go-kratos/aegis v0.2.0 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/go-playground/form/v4 v4.2.0 // indirect
	github.com/golang-migrate/migrate/v4 v4.18.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/gorilla/mux v1.8.1 // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.27.2 // indirect
	github.com/hashicorp/errwrap v1.1.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/jinzhu/now v1.1.5 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	github.com/prometheus/common v0.66.1 // indirect
	github.com/prometheus/procfs v0.16.1 // indirect
	go.opentelemetry.io/auto/sdk v1.1.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlptrace v1.38.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp v1.38.0 // indirect
	go.opentelemetry.io/otel/metric v1.38.0 // indirect
	go.opentelemetry.io/proto/otlp v1.7.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	golang.org/x/net v0.43.0 // indirect
	golang.org/x/sync v0.21.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.38.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20250825161204-c5933d9347a5 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260630182238-925bb5da69e7 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	gorm.io/driver/mysql v1.6.0 // indirect
)

replace (
	github.com/tidemq/tide/broker => ../../broker
	github.com/tidemq/tide/nameserver => ../../nameserver
	github.com/tidemq/tide/pkg/mqclient => ../../pkg/mqclient
	github.com/tidemq/tide/pkg/remoting => ../../pkg/remoting
	github.com/tidemq/tide/pkg/testenv => ../../pkg/testenv
	github.com/tidemq/tide/services/kit => ../kit
)

replace github.com/tidemq/tide/api => ../../api

replace github.com/tidemq/tide/pkg/props => ../../pkg/props

replace github.com/tidemq/tide/pkg/mqclient/idempotent => ../../pkg/mqclient/idempotent

replace github.com/tidemq/tide/pkg/mqclient/kratosmq => ../../pkg/mqclient/kratosmq

replace github.com/tidemq/tide/pkg/mqclient/ordered => ../../pkg/mqclient/ordered

replace github.com/tidemq/tide/pkg/mqclient/tracing => ../../pkg/mqclient/tracing

replace github.com/tidemq/tide/pkg/mqclient/txmsg => ../../pkg/mqclient/txmsg

replace github.com/tidemq/tide/pkg/tidetest => ../../pkg/tidetest
