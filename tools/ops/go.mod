module github.com/tidemq/tide/tools/ops

go 1.26.0

require (
	github.com/tidemq/tide/pkg/mqclient v0.0.0-00010101000000-000000000000
	github.com/tidemq/tide/pkg/remoting v0.0.0-00010101000000-000000000000
)

replace (
	github.com/tidemq/tide/broker => ../../broker
	github.com/tidemq/tide/nameserver => ../../nameserver
	github.com/tidemq/tide/pkg/mqclient => ../../pkg/mqclient
	github.com/tidemq/tide/pkg/remoting => ../../pkg/remoting
)

replace github.com/tidemq/tide/pkg/tidetest => ../../pkg/tidetest
