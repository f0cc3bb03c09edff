//go:build !race

package mqclient_test

const raceEnabled = false
