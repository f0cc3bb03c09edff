module github.com/tidemq/tide/pkg/mqclient/tracing

go 1.26.0

require (
	github.com/tidemq/tide/pkg/mqclient v0.0.0-00010101000000-000000000000
	go.opentelemetry.io/otel v1.38.0
	go.opentelemetry.io/otel/trace v1.38.0
)

require (
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/tidemq/tide/pkg/remoting v0.0.0-00010101000000-000000000000 // indirect
	go.opentelemetry.io/auto/sdk v1.1.0 // indirect
	go.opentelemetry.io/otel/metric v1.38.0 // indirect
)

replace github.com/tidemq/tide/pkg/mqclient => ..

replace github.com/tidemq/tide/pkg/remoting => ../../remoting

replace github.com/tidemq/tide/broker => ../../../broker

replace github.com/tidemq/tide/nameserver => ../../../nameserver

replace github.com/tidemq/tide/pkg/tidetest => ../../tidetest
