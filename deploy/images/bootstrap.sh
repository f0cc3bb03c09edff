#!/usr/bin/env bash
# Builds the container images Tide's demo and e2e tests need, with no
# registry: a Debian bookworm base rootfs made with mmdebstrap and loaded with
# `docker import`, and thin MariaDB and Redis images on top of it.
#
#   deploy/images/bootstrap.sh [-f]
#
#   local/bookworm-db:1                   base rootfs (mariadb-server, redis-server, tzdata, ca-certificates)
#   local/mariadb:10.11 + mariadb:10.11   mariadb.Dockerfile + mariadb-entrypoint.sh
#   local/redis:7.0     + redis:7.0       redis.Dockerfile   + redis-entrypoint.sh
#
# The public names let an unchanged compose file or test find the images
# locally on a machine without a registry, while a machine with internet that
# never ran this script pulls the official ones. A public tag that already
# names a foreign image (say, a pulled official one) is left alone unless -f.
#
# Idempotent: an image that exists is kept; -f rebuilds everything. Nothing is
# ever pulled. Run as root (mmdebstrap needs it, and installs from Debian when
# missing). BOOTSTRAP_MIRROR, when set, is passed to mmdebstrap as its mirror;
# otherwise mmdebstrap uses its own default. See README.md and
# docs/docker-offline.md.
set -euo pipefail

usage() { echo "usage: $0 [-f]   (-f: rebuild images that already exist)" >&2; exit 2; }
force=
while getopts fh opt; do
	case $opt in
		f) force=1 ;;
		*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage

here=$(cd "$(dirname "$0")" && pwd)
BASE=local/bookworm-db:1
LABEL_KEY=org.tidemq.offline-substitute
SUITE=bookworm
PACKAGES=mariadb-server,redis-server,tzdata,ca-certificates

log() { printf '[images] %s\n' "$*"; }
die() { printf '[images] error: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

start=$(now)
declare -a did=()

[ "$(id -u)" = 0 ] || die "run as root (mmdebstrap and the Docker socket need it)"
command -v docker >/dev/null || die "docker client not found"
docker info >/dev/null 2>&1 || die "the Docker Engine does not answer (docker info failed)"

# The Docker 28 client defaults to buildx; without the plugin it cannot build.
# The classic builder resolves FROM local/... from the local store.
if ! docker buildx version >/dev/null 2>&1; then
	export DOCKER_BUILDKIT=0
fi

# One run at a time: two concurrent imports or builds would race on the tags.
lockdir=/run/lock
[ -d "$lockdir" ] && [ -w "$lockdir" ] || lockdir=/tmp
exec 9>"$lockdir/tide-images.lock"
flock 9

exists() { docker image inspect "$1" >/dev/null 2>&1; }
ours() { [ "$(docker image inspect -f "{{ index .Config.Labels \"$LABEL_KEY\" }}" "$1" 2>/dev/null)" = true ]; }

work=
cleanup() { if [ -n "$work" ]; then rm -rf "$work"; fi; }
trap cleanup EXIT

# --- 1. base rootfs ------------------------------------------------------
base_built=
built_any=
if [ -z "$force" ] && exists "$BASE"; then
	log "$BASE exists: skipped"
	did+=("$BASE: kept")
else
	if ! command -v mmdebstrap >/dev/null; then
		t=$(now)
		log "installing mmdebstrap from Debian"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
		did+=("mmdebstrap: installed ($(since "$t"))")
	fi
	work=$(mktemp -d "${TMPDIR:-/var/tmp}/tide-images.XXXXXX")
	t=$(now)
	log "mmdebstrap $SUITE with $PACKAGES (about a minute)"
	# mariadb-server's postinst initialises /var/lib/mysql at bootstrap time;
	# if that stays, the entrypoint skips initialisation and no MARIADB_*
	# variable applies, so the hook wipes it.
	mirror=()
	if [ -n "${BOOTSTRAP_MIRROR:-}" ]; then mirror=("$BOOTSTRAP_MIRROR"); fi
	mmdebstrap --quiet --variant=minbase --include="$PACKAGES" \
		--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
		--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
		--customize-hook='rm -rf "$1"/var/lib/mysql/*' \
		--customize-hook='chroot "$1" dpkg-query -W -f "\${Package} \${Version}\n" mariadb-server redis-server >"'"$work"'/versions"' \
		"$SUITE" "$work/rootfs.tar" "${mirror[@]}" </dev/null
	did+=("rootfs: mmdebstrap $SUITE ($(since "$t"), $(du -m "$work/rootfs.tar" | cut -f1) MiB tar)")
	while read -r pkg ver; do log "  $pkg $ver"; done <"$work/versions"

	t=$(now)
	docker import \
		--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		--change 'ENV LANG=C.UTF-8' \
		--change "LABEL $LABEL_KEY=true" \
		--message "tide bootstrap: mmdebstrap $SUITE $PACKAGES" \
		"$work/rootfs.tar" "$BASE" >/dev/null
	rm -rf "$work"
	work=
	did+=("$BASE: imported ($(since "$t"))")
	base_built=1
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

# --- 2. thin images ------------------------------------------------------
# thin LOCAL PUBLIC DOCKERFILE
thin() {
	local localname=$1 public=$2 dockerfile=$3 t
	if [ -z "$force" ] && [ -z "$base_built" ] && exists "$localname"; then
		log "$localname exists: skipped"
		did+=("$localname: kept")
	else
		t=$(now)
		log "building $localname from $dockerfile"
		build -f "$here/$dockerfile" -t "$localname" "$here"
		built_any=1
		did+=("$localname: built ($(since "$t"))")
	fi
	if exists "$public" && ! ours "$public" && [ -z "$force" ]; then
		log "$public names an image this script did not build (an official one?): left alone"
		did+=("$public: left alone (foreign image; -f replaces it)")
	elif [ "$(docker image inspect -f '{{.Id}}' "$public" 2>/dev/null)" != "$(docker image inspect -f '{{.Id}}' "$localname")" ]; then
		docker tag "$localname" "$public"
		did+=("$public: tagged")
	fi
}
thin local/mariadb:10.11 mariadb:10.11 mariadb.Dockerfile
thin local/redis:7.0 redis:7.0 redis.Dockerfile

# Images this script built earlier and just replaced are now untagged; drop
# them (dangling ones with our label only; images in use by a container stay).
reclaimed=
if [ -n "$built_any" ]; then
	reclaimed=$(docker image prune -f --filter "label=$LABEL_KEY=true" 2>/dev/null | sed -n 's/^Total reclaimed space: //p')
fi
case $reclaimed in "" | 0B) ;; *) did+=("superseded images removed ($reclaimed)") ;; esac

# --- summary -------------------------------------------------------------
log "done in $(since "$start")"
for d in "${did[@]}"; do log "  $d"; done
docker image ls --format '{{.Repository}}:{{.Tag}}\t{{.ID}}\t{{.Size}}' |
	grep -E '^(local/bookworm-db:1|(local/)?mariadb:10\.11|(local/)?redis:7\.0)\s' | sed 's/^/[images]   /' || true
