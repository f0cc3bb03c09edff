package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// CPU accounting: on a shared machine, CPU time per message is the figure
// that does not drift with what else runs; throughput does.

// selfCPU returns this process's user + system CPU seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return tv(ru.Utime) + tv(ru.Stime)
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// procCPU returns the user + system CPU seconds of the given processes
// (from /proc/<pid>/stat, clock ticks of 1/100 s).
func procCPU(pids []int) (float64, error) {
	var sum float64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, err
		}
		// Fields after the command name, which is in parentheses and may
		// contain spaces: state is field 3, utime 14, stime 15.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 13 {
			return 0, fmt.Errorf("/proc/%d/stat: short", pid)
		}
		u, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		sum += (u + st) / 100
	}
	return sum, nil
}

func parsePids(s string) ([]int, error) {
	var pids []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		p, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("-server-pids: %q: %w", f, err)
		}
		pids = append(pids, p)
	}
	return pids, nil
}
