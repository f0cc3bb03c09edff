#!/usr/bin/env bash
# Runs every Fuzz* target found in *_fuzz_test.go files (codec, header
# decoders, properties and config parsers, store records, SQL92 filters,
# ACL file, HA protocol, ...) for the given time each (default 30s). Seed
# corpora (f.Add and testdata/fuzz) already run in `make test`.
set -euo pipefail
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
t=${1:-30s}
root=$(cd "$(dirname "$0")/.." && pwd)
for dir in $(grep -rl --include='*_fuzz_test.go' '^func Fuzz' "$root" | xargs -n1 dirname | sort -u); do
	for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_fuzz_test.go | sed 's/func //'); do
		echo "== $dir $f ($t)"
		(cd "$dir" && "$GO" test -run '^$' -fuzz "^$f\$" -fuzztime "$t" .)
	done
done
