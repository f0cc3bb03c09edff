package cleanup

import "github.com/prometheus/client_golang/prometheus"

// Deleted returns c's counter of deleted rows, for the external tests
// (package cleanup_test, which may import cleanuptest: cleanuptest imports
// this package).
func Deleted(c *Cleaner) *prometheus.CounterVec { return c.deleted }
