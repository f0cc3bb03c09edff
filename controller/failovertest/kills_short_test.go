//go:build cluster && !long

package failovertest

// kills is how many times TestFailoverSIGKILL kills the master.
const kills = 2
