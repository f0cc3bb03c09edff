#!/usr/bin/env bash
# compose.sh ARGS...: docker compose (v2) or docker-compose (1.x) on the demo
# stack (project tide, this directory's compose file), from any directory.
# `make ps` and `make logs` use it.
set -euo pipefail
cd "$(dirname "$0")"
if docker compose version >/dev/null 2>&1; then exec docker compose -p tide --profile controller --profile 2m2s "$@"; fi
exec docker-compose -p tide --profile controller --profile 2m2s "$@"
