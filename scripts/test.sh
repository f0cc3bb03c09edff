#!/usr/bin/env bash
# Runs `go test` in every module given as an argument, then the packages
# of PLAIN_PACKAGES (import paths, if set) again with
# TIDE_BROKER_EXTENSIONS=off (their brokers behave as Apache RocketMQ 4.9),
# keeps the verbose output in bin/test.log, prints the package results
# under a "== module" line each, and ends with one summary line
# "tests: N passed, N failed, N skipped". Exits non-zero if any package
# failed.
set -uo pipefail
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$root/bin"
log="$root/bin/test.log"
: >"$log"
status=0
for m in "$@"; do
	echo "== $m"
	echo "== $m" >>"$log"
	timeout=20m
	# the e2e suite starts the whole system in containers and runs its
	# scenarios one after the other (e2e/README.md)
	[ "$(basename "$m")" = e2e ] && timeout=30m
	(cd "$m" && "$GO" test -count=1 -p 2 -timeout "$timeout" -v ./... ) >>"$log" 2>&1
	rc=$?
	[ $rc -ne 0 ] && status=1
done
if [ -d "$root/broker" ]; then
	# the broker built as the chaos campaign builds it (-tags chaosclock:
	# a wall clock the campaign can step, docs/reliability.md)
	echo "== broker with -tags chaosclock" | tee -a "$log"
	(cd "$root/broker" && "$GO" test -count=1 -tags chaosclock -timeout 5m -v -run 'TestClock|TestFake|TestReadOffset|TestWriteOffset|TestNow' ./internal/clock .) >>"$log" 2>&1 || status=1
fi
if [ -n "${PLAIN_PACKAGES:-}" ]; then
	echo "== without Tide extensions (TIDE_BROKER_EXTENSIONS=off)" | tee -a "$log"
	# shellcheck disable=SC2086 # a list of import paths
	(cd "$root" && TIDE_BROKER_EXTENSIONS=off "$GO" test -count=1 -p 2 -timeout 20m -v $PLAIN_PACKAGES) >>"$log" 2>&1 || status=1
fi
# package lines and failures, as go test prints them without -v
grep -E '^(ok|FAIL|---|==)[[:space:]]|^\?[[:space:]]|^panic:' "$log" | grep -Ev '^--- (PASS|SKIP)' || true
pass=$(grep -cE '^\s*--- PASS' "$log" || true)
fail=$(grep -cE '^\s*--- FAIL' "$log" || true)
skip=$(grep -cE '^\s*--- SKIP' "$log" || true)
if [ $status -ne 0 ] && [ "$fail" -eq 0 ]; then
	fail=1 # a build failure or panic outside a named test
	grep -E '^(#|.*\.go:[0-9]+:)' "$log" | head -50
fi
echo "tests: $pass passed, $fail failed, $skip skipped"
exit $status
