package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The suite shares one stack: starting the whole system takes tens of
// seconds on 2 cores, and every scenario ends with a check of the global
// invariants, which must hold whatever ran before.
var (
	sys        *stack
	skipReason string // set when Docker is unavailable and CI is not set
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// docker-offline.md, MUST 2 and 3: no Ryuk (it cannot be pulled; we
	// clean up ourselves), and mapped ports on loopback (the CI machine has
	// /.dockerenv, which would make testcontainers dial the gateway).
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") != "true" {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	if os.Getenv("TESTCONTAINERS_HOST_OVERRIDE") == "" {
		os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
	}
	if os.Getenv("E2E_SKIP") != "" {
		skipReason = "E2E_SKIP is set"
		return m.Run()
	}
	root, err := filepath.Abs("..")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			fmt.Fprintf(os.Stderr, "e2e: FAIL: CI=true and the Docker Engine does not answer (docker info: %v)\n", err)
			return 1
		}
		skipReason = fmt.Sprintf("no Docker Engine (docker info: %v); the e2e suite needs one (CI=true makes this a failure)", err)
		return m.Run()
	}
	if err := ensureImages(root); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: images:", err)
		return 1
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t0 := time.Now()
	s, err := startStack(ctx, root, os.Stdout)
	cancel()
	sys = s
	logDir := envOr("E2E_LOG_DIR", filepath.Join(root, "bin", "e2e-logs"))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := s.teardown(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: teardown:", err)
		}
	}()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: the stack did not come up: %v\n", err)
		s.dumpLogs(context.Background(), logDir, 80, os.Stderr)
		return 1
	}
	fmt.Printf("e2e: stack ready in %.1fs\n", time.Since(t0).Seconds())
	if err := sys.snapshotInitial(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: initial snapshot:", err)
		s.dumpLogs(context.Background(), logDir, 80, os.Stderr)
		return 1
	}
	code := m.Run()
	if code != 0 {
		fmt.Println("e2e: a scenario failed: container logs follow")
		s.dumpLogs(context.Background(), logDir, 150, os.Stdout)
	}
	return code
}

// need returns the shared stack or skips (no Docker, not in CI).
func need(t *testing.T) *stack {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	if sys == nil {
		t.Fatal("stack not started")
	}
	return sys
}

// ensureImages builds our images from the current source every run (the
// Go and Docker build caches make that quick) and bootstraps the MariaDB
// and Redis images only when they are missing. E2E_SKIP_BUILD=1 uses the
// app images as they are.
func ensureImages(root string) error {
	img := imageNames()
	if !imageExists(img.mariadb) || !imageExists(img.redis) {
		if img.mariadb != "local/mariadb:10.11" || img.redis != "local/redis:7.0" {
			return fmt.Errorf("%s or %s is missing and is not one deploy/images/bootstrap.sh builds", img.mariadb, img.redis)
		}
		fmt.Println("e2e: MariaDB/Redis images missing: running deploy/images/bootstrap.sh (a few minutes, once)")
		if err := runLogged(root, filepath.Join(root, "deploy/images/bootstrap.sh")); err != nil {
			return err
		}
	}
	if os.Getenv("E2E_SKIP_BUILD") == "1" {
		return nil
	}
	t := time.Now()
	if err := runLogged(root, filepath.Join(root, "deploy/images/build-apps.sh"), "nameserver", "controller", "broker", "order", "payment", "inventory", "console"); err != nil {
		return err
	}
	fmt.Printf("e2e: app images built from the current source (%.1fs)\n", time.Since(t).Seconds())
	return nil
}

func imageExists(ref string) bool {
	return exec.Command("docker", "image", "inspect", ref).Run() == nil
}

func runLogged(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	cmd.Env = append(os.Environ(), "TAG="+envOr("E2E_APP_TAG", "dev"))
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", filepath.Base(name), strings.Join(args, " "), err)
	}
	return nil
}
