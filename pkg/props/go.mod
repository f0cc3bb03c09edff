module github.com/tidemq/tide/pkg/props

go 1.26
