#!/usr/bin/env bash
# `make down`: stops the compose stack. VOLUMES=1 also removes its data.
set -euo pipefail
cd "$(dirname "$0")"
compose() {
	if docker compose version >/dev/null 2>&1; then docker compose -p tide "$@"; else docker-compose -p tide "$@"; fi
}
args=(down --remove-orphans)
[ -n "${VOLUMES:-}" ] && args+=(-v)
compose --profile controller --profile 2m2s "${args[@]}"
