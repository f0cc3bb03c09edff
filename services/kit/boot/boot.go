// Package boot loads a Kratos service's configuration the way the
// services' main functions do.
package boot

import (
	"fmt"

	"github.com/go-kratos/kratos/v2/config"
	"github.com/go-kratos/kratos/v2/config/env"
	"github.com/go-kratos/kratos/v2/config/file"
	"google.golang.org/protobuf/proto"
)

// Load reads the configuration at path (a YAML or JSON file, or a
// directory of them) into each of dsts: a service's Bootstrap messages
// (kit/conf's, the shared sections, and the service's own), each taking
// the keys it knows and ignoring the others. The environment is a source
// too, so ${NAME:default} placeholders in the files resolve from it (the
// default when NAME is unset), and resolved values take their actual
// types ("false" fills a bool, "3s" a duration). Each call reads the
// files and the environment afresh; nothing is watched. Errors are
// "load config: ..." or "scan config: ...".
func Load(path string, dsts ...proto.Message) error {
	c := config.New(config.WithSource(env.NewSource(), file.NewSource(path)), config.WithResolveActualTypes(true))
	defer c.Close()
	if err := c.Load(); err != nil {
		return fmt.Errorf("load config: %w", err)
	}
	for _, dst := range dsts {
		if err := c.Scan(dst); err != nil {
			return fmt.Errorf("scan config: %w", err)
		}
	}
	return nil
}
