#!/usr/bin/env bash
# Builds Tide's Go daemons as static binaries (`make build` -> bin/) and wraps
# each in a FROM scratch image (go-app.Dockerfile): tide/<name>:$TAG.
#
#   deploy/images/build-apps.sh [name...]
#
# With no names it takes every <module>/cmd/<name>/main.go in the repository
# (e2e excluded), so new services are picked up without editing this script,
# and runs `make build`; with names it builds only those binaries.
# Environment: TAG (default dev), IMAGE_PREFIX (default tide/), GO (the go
# binary), SKIP_GO_BUILD=1 to package the binaries already in bin/.
# Nothing is pulled: FROM scratch needs no base image.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
TAG=${TAG:-dev}
IMAGE_PREFIX=${IMAGE_PREFIX:-tide/}
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}

log() { printf '[apps] %s\n' "$*"; }
die() { printf '[apps] error: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

start=$(now)
command -v docker >/dev/null || die "docker client not found"
docker info >/dev/null 2>&1 || die "the Docker Engine does not answer (docker info failed)"
[ -x "$GO" ] || die "go not found (set GO)"
[ -r "$CA_BUNDLE" ] || die "CA bundle $CA_BUNDLE not readable (set CA_BUNDLE)"
if ! docker buildx version >/dev/null 2>&1; then
	export DOCKER_BUILDKIT=0 # the Docker 28 client cannot build without buildx
fi

if [ $# -gt 0 ]; then
	names=("$@")
else
	mapfile -t names < <(cd "$root" && find . -path ./e2e -prune -o -path '*/cmd/*' -name main.go -print |
		xargs -r -n1 dirname | xargs -r -n1 basename | sort -u)
fi
[ ${#names[@]} -gt 0 ] || die "no cmd/<name>/main.go found under $root"

version=$(git -C "$root" describe --always --dirty 2>/dev/null || echo dev)
if [ "${SKIP_GO_BUILD:-}" != 1 ]; then
	t=$(now)
	if [ $# -gt 0 ]; then
		# only the named daemons (what `make build` does for each): on a
		# busy 2-core machine building every tool too costs minutes
		mkdir -p "$root/bin"
		for n in "${names[@]}"; do
			d=$(cd "$root" && find . -path ./e2e -prune -o -path "*/cmd/$n/main.go" -print | head -n1)
			[ -n "$d" ] || die "no cmd/$n/main.go under $root"
			log "go build ${d%/main.go}"
			(cd "$root/$(dirname "$d")" && CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-s -w -X main.Version=$version" -o "$root/bin/$n" .) ||
				die "go build ${d%/main.go} failed"
		done
	else
		log "make build"
		make -C "$root" --no-print-directory build GO="$GO"
	fi
	log "binaries built ($(since "$t"))"
fi

# build ARGS...: docker build, quiet on success, the whole log on failure.
# No --pull, ever: the classic builder takes FROM local/... from the store.
build() {
	local out
	if ! out=$(docker build "$@" 2>&1); then
		printf '%s\n' "$out" >&2
		die "docker build $* failed"
	fi
}

ctx=$(mktemp -d "${TMPDIR:-/tmp}/tide-apps.XXXXXX")
trap 'rm -rf "$ctx"' EXIT
cp "$CA_BUNDLE" "$ctx/ca-certificates.crt"
cp "$("$GO" env GOROOT)/lib/time/zoneinfo.zip" "$ctx/zoneinfo.zip"
mkdir "$ctx/data"

for n in "${names[@]}"; do
	bin="$root/bin/$n"
	[ -x "$bin" ] || die "$bin missing: run make build (or drop SKIP_GO_BUILD)"
	# A cgo binary would need a libc that scratch does not have.
	"$GO" version -m "$bin" | grep -q 'CGO_ENABLED=0' ||
		die "$bin is not a static build (want CGO_ENABLED=0)"
	t=$(now)
	cp "$bin" "$ctx/$n"
	image="${IMAGE_PREFIX}${n}:${TAG}"
	build -f "$here/go-app.Dockerfile" --build-arg BIN="$n" --build-arg VERSION="$version" -t "$image" "$ctx"
	rm -f "$ctx/$n"
	log "$image built ($(since "$t"), $(docker image inspect -f '{{.Size}}' "$image" | awk '{ printf "%.1f MB", $1 / 1e6 }'))"
done
# Earlier builds of these images are now untagged: drop them (dangling
# images with our label only; one in use by a container stays).
docker image prune -f --filter label=org.tidemq.app >/dev/null 2>&1 || true
log "done in $(since "$start")"
