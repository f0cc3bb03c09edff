#!/usr/bin/env bash
# `make up`: builds what is missing (offline images for MariaDB and Redis
# when no registry is reachable, our daemons' FROM scratch images), starts
# the compose stack, waits until every container is healthy and prints the
# endpoints. By default broker-a runs in controller mode (three controller
# nodes elect its master; it waits until broker-a has a master and an
# in-sync slave); PROFILE=2m2s runs RocketMQ 4.x master/slave instead, with
# a second pair broker-b. BUILD=0 reuses the images of the last build.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
compose() {
	if docker compose version >/dev/null 2>&1; then docker compose -p tide "$@"; else docker-compose -p tide "$@"; fi
}
docker info >/dev/null 2>&1 || { echo "up: the Docker Engine does not answer (docker info failed)" >&2; exit 1; }
. ./mode.sh
case "${PROFILE:-controller}" in
	controller) export BROKER_MODE=controller; profile=(--profile controller) ;;
	2m2s) export BROKER_MODE=masterslave CONSOLE_CONTROLLER_ADDR=; profile=(--profile 2m2s) ;;
	*) echo "up: unknown PROFILE=$PROFILE (controller, the default, or 2m2s)" >&2; exit 1 ;;
esac
# One mode at a time: the other mode's containers would keep running and
# compose would reconfigure broker-a under them.
other=$(docker ps -aq --filter label=com.docker.compose.project=tide \
	--filter label=com.docker.compose.service=$([ "$BROKER_MODE" = controller ] && echo broker-b || echo controller1))
if [ -n "$other" ]; then
	echo "up: the stack runs in the other mode ($(stack_mode)); run make down first" >&2
	exit 1
fi
docker buildx version >/dev/null 2>&1 || export DOCKER_BUILDKIT=0

if ! docker image inspect "${MARIADB_IMAGE:-mariadb:10.11}" "${REDIS_IMAGE:-redis:7.0}" >/dev/null 2>&1; then
	if ! docker pull -q "${MARIADB_IMAGE:-mariadb:10.11}" >/dev/null 2>&1 || ! docker pull -q "${REDIS_IMAGE:-redis:7.0}" >/dev/null 2>&1; then
		echo "up: no registry reachable: building local MariaDB and Redis images (a few minutes, once)"
		../images/bootstrap.sh
	fi
fi
apps=(nameserver broker controller order payment inventory console)
if [ "${BUILD:-1}" = 0 ]; then
	# BUILD=0: reuse the tide/*:dev images already built (no Go build, no
	# image build); fails if one is missing.
	for a in "${apps[@]}"; do
		docker image inspect "tide/$a:dev" >/dev/null 2>&1 || { echo "up: BUILD=0 but tide/$a:dev is missing" >&2; exit 1; }
	done
else
	../images/build-apps.sh "${apps[@]}"
fi

t_up=$SECONDS
compose "${profile[@]}" up -d

echo "up: waiting for every container to be healthy"
deadline=$((SECONDS + ${UP_TIMEOUT:-240}))
while :; do
	ids=$(compose "${profile[@]}" ps -q)
	pending=0
	for id in $ids; do
		st=$(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}' "$id")
		case "$st" in healthy|running) ;; *) pending=$((pending + 1)) ;; esac
	done
	[ "$pending" -eq 0 ] && [ -n "$ids" ] && break
	if [ $SECONDS -ge $deadline ]; then
		compose "${profile[@]}" ps
		echo "up: not healthy after ${UP_TIMEOUT:-240}s; logs: make logs (or make logs SERVICE=<name>)" >&2
		exit 1
	fi
	sleep 2
done
compose "${profile[@]}" ps
for svc in "order ${ORDER_HTTP_PORT:-8000}" "inventory ${INVENTORY_HTTP_PORT:-8002}" "payment ${PAYMENT_HTTP_PORT:-8003}"; do
	set -- $svc
	until curl -fsS "http://127.0.0.1:$2/readyz" >/dev/null 2>&1; do
		if [ $SECONDS -ge $deadline ]; then
			echo "up: $1 not ready on :$2; logs: make logs SERVICE=$1" >&2
			exit 1
		fi
		sleep 1
	done
done
if [ "$BROKER_MODE" = controller ]; then
	# controller mode: broker-a has a master and an in-sync slave (the
	# SyncStateSet has 2 members on the controller leader)
	echo "up: waiting for broker-a's slave to join the SyncStateSet"
	until set -- $(sync_state_set) && [ "${1:-0}" -ge 2 ] && [ -n "$(group_master)" ]; do
		if [ $SECONDS -ge $deadline ]; then
			echo "up: broker-a has no master with an in-sync slave after ${UP_TIMEOUT:-240}s (SyncStateSet size ${1:-unknown}," \
				"master: $(group_master)); logs: make logs SERVICE=broker-a-s (or controller1)" >&2
			exit 1
		fi
		sleep 2
	done
	brokers="broker-a      group broker-a in controller mode: master $(group_master) (of broker-a 172.28.0.21, broker-a-s 172.28.0.22; port 10911), SyncStateSet of $1, master epoch $2
  controllers   172.28.0.61-63:9878 (Raft); metrics http://127.0.0.1:${CONTROLLER1_METRICS_PORT:-5561}/metrics (and :5562, :5563)"
else
	brokers="broker-a      172.28.0.21:10911 (master, SYNC_MASTER), slave 172.28.0.22:10911 (4.x master/slave)
  broker-b      172.28.0.23:10911 (master), slave 172.28.0.24:10911"
fi
echo "up: ready $((SECONDS - t_up)) s after compose up ($SECONDS s in all)"
cat <<MSG

Tide is up:
  NameServers   127.0.0.1:${NAMESRV1_PORT:-9876} and 127.0.0.1:${NAMESRV2_PORT:-9877} (in the network: 172.28.0.11:9876;172.28.0.12:9876)
  $brokers
  metrics       http://127.0.0.1:${BROKER_A_METRICS_PORT:-5557}/metrics (broker-a), :${BROKER_A_S_METRICS_PORT:-5559} (broker-a-s)
  MariaDB       127.0.0.1:${MARIADB_PORT:-3306} (user tide)   Redis  127.0.0.1:${REDIS_PORT:-6379}
  order         http://127.0.0.1:${ORDER_HTTP_PORT:-8000}/v1/orders
  inventory     http://127.0.0.1:${INVENTORY_HTTP_PORT:-8002}/v1/products
  payment       http://127.0.0.1:${PAYMENT_HTTP_PORT:-8003}/v1/payments
  faults        /v1/faults on each service (FAULT_ADMIN=${FAULT_ADMIN:-true})
  console       http://127.0.0.1:${CONSOLE_PORT:-8080}/  (sign in as viewer/tide-viewer, operator/tide-operator or admin/tide-admin; recent orders: /orders)
  ACL           on: services are whitelisted; from the host sign as tideAdmin, e.g.
                make mqadmin && bin/mqadmin clusterList -n 127.0.0.1:9876 --access-key tideAdmin --secret-key tide-admin-secret
See it work: make demo    Containers: make ps    Logs: make logs SERVICE=order    Stop: make down (VOLUMES=1 deletes the data)
MSG
