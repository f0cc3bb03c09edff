module github.com/tidemq/tide/nameserver

go 1.26

require github.com/tidemq/tide/pkg/remoting v0.0.0-00010101000000-000000000000

replace github.com/tidemq/tide/pkg/remoting => ../pkg/remoting
