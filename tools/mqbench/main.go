package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err := runMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "mqbench: %v\n", err)
		os.Exit(1)
	}
}

func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "probe":
			return runProbe(ctx, args[1:], stdout, stderr)
		case "idle":
			return runIdle(ctx, args[1:], stdout, stderr)
		case "report":
			return runReport(args[1:], stdout, stderr)
		}
	}
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		return err
	}
	text := stdout
	if cfg.JSONOut == "-" {
		text = stderr
	}
	var progress io.Writer = text
	if cfg.Quiet {
		progress = nil
	}
	drv, err := openDriver(ctx, cfg)
	if err != nil {
		return err
	}
	defer drv.Close()
	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	res, err := Execute(ctx, cfg, drv, progress)
	if cfg.MemProfile != "" {
		if perr := writeMemProfile(cfg.MemProfile); perr != nil && err == nil {
			err = perr
		}
	}
	if res != nil {
		res.writeText(text)
		if cfg.JSONOut != "" {
			if werr := writeResultJSON(cfg.JSONOut, stdout, res); werr != nil && err == nil {
				err = werr
			}
		}
	}
	return err
}

// writeMemProfile writes the allocs profile of the process to path.
func writeMemProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("-memprofile: %w", err)
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("-memprofile: %w", err)
	}
	return f.Close()
}

func writeResultJSON(path string, stdout io.Writer, res *Result) error {
	if path == "-" {
		return res.writeJSON(stdout)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := res.writeJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
