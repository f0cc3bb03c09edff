package api

import (
	"io"

	"github.com/go-kratos/kratos/v2/log"
)

func testLogger(w io.Writer) log.Logger { return log.NewStdLogger(w) }
