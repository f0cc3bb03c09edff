module github.com/tidemq/tide/pkg/remoting

go 1.26
