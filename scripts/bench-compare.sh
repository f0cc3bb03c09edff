#!/usr/bin/env bash
# bench-compare: Tide (ASYNC_FLUSH and SYNC_FLUSH) against NATS JetStream
# (file storage) and Redis Streams on loopback, same workloads, same
# machine, same run; plus the machine's disk and loopback limits. Writes
# docs/benchmarks/README.md (+ chart.png, results/*.json).
#
#   scripts/bench-compare.sh            # full run (~12-15 min)
#   scripts/bench-compare.sh --quick    # development run (~4 min, noisier)
#
# Options: --quick, --out DIR (default docs/benchmarks), --targets "LIST"
# (default: tide-async tide-official-async nats-async redis-async tide-sync
# tide-official-sync nats-sync redis-sync; tide-official is the same broker
# driven by the official Go client rocketmq-client-go v2.1.2),
# --no-install (fail instead of apt-get/go install), --no-scale (skip the
# 8 -> 1000 topics and 1 -> 10,000 idle connections runs). Needs: Go, root or
# the Debian packages nats-server redis-server gnuplot-nox already
# installed. NATS with sync_interval (for nats-sync) is built with
# `go install github.com/nats-io/nats-server/v2@$NATS_VERSION` into bin/bench/.
# Not run by CI: benchmarks never run in make test.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export PATH=/usr/local/go/bin:$PATH GOFLAGS=-buildvcs=false
GO=${GO:-go}
NATS_VERSION=${NATS_VERSION:-v2.15.3}

QUICK=0
SCALE=1
OUT=docs/benchmarks
TARGETS="tide-async tide-official-async nats-async redis-async tide-sync tide-official-sync nats-sync redis-sync"
INSTALL=1
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--out) OUT=$2; shift ;;
	--targets) TARGETS=$2; shift ;;
	--no-install) INSTALL=0 ;;
	--no-scale) SCALE=0 ;;
	-h|--help) sed -n '2,19p' "$0"; exit 0 ;;
	*) echo "bench-compare: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done

if [ $QUICK = 1 ]; then
	DUR=3s; BACKLOG=200000; PROBE_MB=256; PROBE_DUR=1s; IDLE=2000; TOPICS=200
else
	DUR=10s; BACKLOG=1000000; PROBE_MB=1024; PROBE_DUR=3s; IDLE=10000; TOPICS=1000
fi
# 10,000 idle connections need as many descriptors in the broker and in mqbench.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# Ports well away from the defaults so a developer's own servers are untouched.
NS_PORT=19876 BROKER_PORT=20911 HA_PORT=20912 NATS_PORT=14222 REDIS_PORT=16379

START=$(date +%s)
WORK=$(mktemp -d /var/tmp/bench-compare.XXXXXX) # on the disk, never tmpfs
RES=$WORK/results
mkdir -p "$RES"
PIDS=()
log() { printf '[bench-compare %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

stop_all() { # newest first: load generators before the broker, the broker before its NameServer
	local i p
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
		p=${PIDS[$i]}
		[ -n "$p" ] || continue
		kill "$p" 2>/dev/null || true
		for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		if kill -0 "$p" 2>/dev/null; then
			log "pid $p did not stop within 10 s: SIGKILL"
			kill -9 "$p" 2>/dev/null || true
		fi
	done
	PIDS=()
}
cleanup() { stop_all; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_port() { # host port name
	for _ in $(seq 300); do
		if (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	log "$3 did not listen on $1:$2 within 30 s"; return 1
}

# ---- dependencies -----------------------------------------------------------
need_pkgs=()
command -v nats-server >/dev/null || need_pkgs+=(nats-server)
command -v redis-server >/dev/null || need_pkgs+=(redis-server)
command -v gnuplot >/dev/null || need_pkgs+=(gnuplot-nox)
if [ ${#need_pkgs[@]} -gt 0 ]; then
	if [ $INSTALL = 1 ] && [ "$(id -u)" = 0 ]; then
		log "apt-get install ${need_pkgs[*]}"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 "${need_pkgs[@]}" >/dev/null
	else
		echo "bench-compare: missing ${need_pkgs[*]}: apt-get install ${need_pkgs[*]}" >&2; exit 1
	fi
fi
# The NATS servers the report may name, like the Debian redis-server, must not
# keep running as system services during the benchmark.
for svc in redis-server nats-server; do
	if command -v systemctl >/dev/null && systemctl is-active --quiet "$svc" 2>/dev/null; then
		log "note: system service $svc is running (left alone; ports differ)"
	fi
done

mkdir -p bin/bench
NATS_SYNC_BIN=$ROOT/bin/bench/nats-server-$NATS_VERSION
if [[ " $TARGETS " == *" nats-sync "* ]] && [ ! -x "$NATS_SYNC_BIN" ]; then
	if [ $INSTALL = 1 ]; then
		log "go install github.com/nats-io/nats-server/v2@$NATS_VERSION (sync_interval needs >= 2.10.x; Debian has 2.9)"
		tmpbin=$WORK/gobin
		GOBIN=$tmpbin GOWORK=off $GO install "github.com/nats-io/nats-server/v2@$NATS_VERSION"
		mv "$tmpbin/nats-server" "$NATS_SYNC_BIN"
	else
		echo "bench-compare: $NATS_SYNC_BIN missing" >&2; exit 1
	fi
fi

# Only what the benchmark runs, built as `make build` builds it (the rest of
# the repository does not matter here and need not compile).
TIDE_VERSION=$(git describe --always --dirty 2>/dev/null || echo dev)
log "build bin/broker bin/nameserver bin/mqbench ($TIDE_VERSION)"
for d in broker/cmd/broker nameserver/cmd/nameserver tools/mqbench; do
	(cd $d && CGO_ENABLED=0 $GO build -trimpath -ldflags "-s -w -X main.Version=$TIDE_VERSION" -o "$ROOT/bin/$(basename $d)" .)
done
MQB=$ROOT/bin/mqbench

# ---- run metadata -----------------------------------------------------------
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
mem=$(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)
disk=$(df -hT "$WORK" | awk 'NR==2 {print $2" on "$1", "$3}')
MACHINE="$(nproc) vCPU $cpu, $mem RAM, $disk ($(. /etc/os-release; echo "$PRETTY_NAME"))"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- machine limits -----------------------------------------------------------
log "probe: disk and loopback"
"$MQB" probe -dir "$WORK" -mb $PROBE_MB -duration $PROBE_DUR -json "$RES/limits.json"

# ---- servers ------------------------------------------------------------------
start_tide() { # ASYNC_FLUSH|SYNC_FLUSH
	local d=$WORK/tide
	rm -rf "$d"; mkdir -p "$d/store"
	cat >"$d/broker.conf" <<EOF
brokerClusterName=BenchCluster
brokerName=bench-a
brokerId=0
listenPort=$BROKER_PORT
listenAddr=127.0.0.1
haListenPort=$HA_PORT
brokerIP1=127.0.0.1
namesrvAddr=127.0.0.1:$NS_PORT
storePathRootDir=$d/store
flushDiskType=$1
# pull batches comparable to the peers' fetch of 256 (RocketMQ default 32)
maxTransferCountOnMessageInMemory=256
maxTransferBytesOnMessageInMemory=1048576
autoCreateTopicEnable=true
serverMaxConnections=$((IDLE + 2000))
EOF
	"$ROOT/bin/nameserver" -p $NS_PORT -b 127.0.0.1 >"$d/nameserver.log" 2>&1 &
	PIDS+=($!)
	wait_port 127.0.0.1 $NS_PORT nameserver
	"$ROOT/bin/broker" -c "$d/broker.conf" -loglevel warn >"$d/broker.log" 2>&1 &
	PIDS+=($!)
	wait_port 127.0.0.1 $BROKER_PORT broker
	ADDR=127.0.0.1:$NS_PORT
}

start_nats() { # async|sync
	local d=$WORK/nats bin=nats-server
	rm -rf "$d"; mkdir -p "$d"
	{
		echo "listen: 127.0.0.1:$NATS_PORT"
		echo "jetstream { store_dir: \"$d/js\""
		if [ "$1" = sync ]; then echo "  sync_interval: always"; fi
		echo "}"
	} >"$d/nats.conf"
	if [ "$1" = sync ]; then bin=$NATS_SYNC_BIN; fi
	"$bin" -c "$d/nats.conf" >"$d/nats.log" 2>&1 &
	PIDS+=($!)
	wait_port 127.0.0.1 $NATS_PORT nats-server
	ADDR=nats://127.0.0.1:$NATS_PORT
}

start_redis() { # async|sync
	local d=$WORK/redis fsync=everysec
	rm -rf "$d"; mkdir -p "$d"
	[ "$1" = sync ] && fsync=always
	redis-server --port $REDIS_PORT --bind 127.0.0.1 --dir "$d" --save '' --appendonly yes \
		--appendfsync $fsync --daemonize no --protected-mode yes >"$d/redis.log" 2>&1 &
	PIDS+=($!)
	wait_port 127.0.0.1 $REDIS_PORT redis-server
	ADDR=127.0.0.1:$REDIS_PORT
}

# bench NAME ARGS...: one mqbench run, JSON into results/NAME.json
bench() {
	local name=$1; shift
	log "$name: mqbench $*"
	local pids
	pids=$(IFS=,; echo "${PIDS[*]}")
	if ! "$MQB" -target "$KIND" -addr "$ADDR" -server-version "$TIDE_VERSION" -label "$LABEL" -prefix "b$name" -server-pids "$pids" \
		-json "$RES/$name.json" -timeout 5m "$@" >"$RES/$name.log" 2>&1; then
		log "$name FAILED (see below); continuing"
		tail -5 "$RES/$name.log" >&2
		rm -f "$RES/$name.json"
	else
		grep -E '^(produce|preload|consume|e2e|cpu|  )' "$RES/$name.log" | sed 's/^/    /' >&2 || true
	fi
}

for t in $TARGETS; do
	KIND=${t%-*} CLASS=${t##*-}
	case $t in
	tide-async | tide-official-async) start_tide ASYNC_FLUSH; LABEL=ASYNC_FLUSH ;;
	tide-sync | tide-official-sync) start_tide SYNC_FLUSH; LABEL=SYNC_FLUSH ;;
	nats-async) start_nats async; LABEL="file storage, default sync (2 min)" ;;
	nats-sync) start_nats sync; LABEL="file storage, sync_interval: always" ;;
	redis-async) start_redis async; LABEL="appendfsync everysec" ;;
	redis-sync) start_redis sync; LABEL="appendfsync always" ;;
	*) echo "bench-compare: unknown target $t" >&2; exit 2 ;;
	esac
	common=(-size 1024 -duration $DUR -q)
	bench "$t-a" -mode produce -send sync -inflight 1 "${common[@]}"
	bench "$t-b" -mode produce -send async -inflight 64 "${common[@]}"
	bench "$t-c" -mode produce -send batch -batch 64 -inflight 4 "${common[@]}"
	if [ "$CLASS" = async ]; then
		# Reading does not depend on the flush policy: one backlog run per peer.
		bench "$t-d" -mode backlog -count $BACKLOG -batch 64 -inflight 4 -pull 256 -size 1024 -q
	fi
	if [ -f "$RES/$t-b.json" ]; then
		bench "$t-e" -mode e2e -send sync -inflight 64 -rate-of "$RES/$t-b.json" -rate-factor 0.5 "${common[@]}"
	fi
	stop_all
done

# ---- scale: topics and idle connections (Tide ASYNC_FLUSH) ----------------------
if [ $SCALE = 1 ]; then
	start_tide ASYNC_FLUSH
	KIND=tide LABEL=ASYNC_FLUSH
	BROKER_PID=${PIDS[${#PIDS[@]}-1]}
	# RssAnon (heap, stacks), KiB: VmRSS also counts the pages of the mapped
	# commit log and consume queues the run touched, which grow with the
	# bytes written, not with topics or connections.
	rss() { awk '/RssAnon/ {print $2}' "/proc/$BROKER_PID/status"; }
	rss0=$(rss)
	scale=(-mode produce -send async -inflight 64 -size 1024 -duration $DUR -q)
	bench scale-topics-8 -topics 8 "${scale[@]}" -keep
	rss8=$(rss)
	# Steady state, as with 8 topics: a first pass writes every queue of the
	# 1000 topics once, so the timed run does not include creating their
	# 8,000 consume queue files (a one-time cost, timed here on its own).
	# The files are created by the broker's dispatcher, after the sends are
	# acknowledged: wait until all of them exist, or the timed run pays for
	# most of them (when the priming's sends ended, a few hundred of 8,000 existed;
	# docs/benchmarks/analysis.md, Levers, "The 1,000-topic scale row").
	prime_start=$(date +%s%N)
	"$MQB" -target tide -addr "$ADDR" -prefix "bscale-topics-$TOPICS" -topics $TOPICS -mode produce -send async \
		-inflight 64 -size 1024 -count $((TOPICS * 8 * 2)) -warmup 0 -q -keep >"$RES/scale-prime.log" 2>&1 ||
		log "priming the $TOPICS topics failed: $(tail -2 "$RES/scale-prime.log")"
	cqfiles() { find "$WORK/tide/store/consumequeue" -mindepth 3 -maxdepth 3 -type f ! -name "*.tmp" -path "*/bscale-topics-$TOPICS-*" 2>/dev/null | wc -l; }
	for _ in $(seq 1200); do
		[ "$(cqfiles)" -ge $((TOPICS * 8)) ] && break
		sleep 0.1
	done
	[ "$(cqfiles)" -ge $((TOPICS * 8)) ] || log "after 120 s only $(cqfiles) of $((TOPICS * 8)) consume queue files exist"
	prime_ms=$((($(date +%s%N) - prime_start) / 1000000))
	log "first write to all $((TOPICS * 8)) queues: ${prime_ms} ms"
	bench scale-topics-$TOPICS -topics $TOPICS "${scale[@]}" -keep
	rssT=$(rss)
	log "opening $IDLE idle client connections"
	"$MQB" idle -broker 127.0.0.1:$BROKER_PORT -n $IDLE -hold 30m >"$WORK/idle.out" 2>&1 &
	IDLE_PID=$!
	PIDS+=($IDLE_PID)
	for _ in $(seq 1200); do
		grep -q '^ready' "$WORK/idle.out" 2>/dev/null && break
		kill -0 $IDLE_PID 2>/dev/null || break
		sleep 0.1
	done
	if grep -q '^ready' "$WORK/idle.out"; then
		rssI=$(rss)
		bench scale-conns-$IDLE -topics 8 "${scale[@]}" -keep
		cat >"$RES/scale.json" <<EOF
{"topics_small": 8, "topics_large": $TOPICS, "queues_per_topic": 8, "idle_conns": $IDLE,
 "prime_ms": ${prime_ms:-0},
 "rss_kib_start": $rss0, "rss_kib_after_small": $rss8, "rss_kib_after_large": $rssT, "rss_kib_with_idle": $rssI,
 "idle_open": "$(head -1 "$WORK/idle.out")"}
EOF
	else
		log "idle connections failed: $(tail -2 "$WORK/idle.out")"
	fi
	stop_all
fi

LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
END=$(date +%s)
cmd="make bench-compare"
[ $QUICK = 1 ] && cmd="make bench-compare QUICK=1"
cat >"$RES/meta.json" <<EOF
{"date": "$(date -u +'%Y-%m-%d %H:%M UTC')", "command": "$cmd", "quick": $([ $QUICK = 1 ] && echo true || echo false),
 "machine": "$MACHINE", "kernel": "$(uname -r)", "go": "$($GO env GOVERSION)", "commit": "$TIDE_VERSION",
 "load_before": "$LOAD_BEFORE", "load_after": "$LOAD_AFTER", "seconds": $((END - START)),
 "note": "${BENCH_NOTE:-}"}
EOF
mkdir -p "$OUT/results"
rm -f "$OUT"/results/*.json
cp "$RES"/*.json "$OUT/results/"
"$MQB" report -in "$OUT/results" -out "$OUT"
log "wrote $OUT/README.md in $((END - START)) s"
