# mode.sh: sourced by up.sh and scripts/demo.sh. What the demo stack's
# broker group broker-a looks like from the host, through the metrics the
# brokers and controllers publish on 127.0.0.1 (docker-compose.yaml):
#
#   stack_mode          controller or masterslave, from the containers
#   metric URL NAME     the value of a Prometheus sample (first match)
#   group_master        the compose service (broker-a or broker-a-s) that is
#                       broker-a's master now, empty when none is
#   ctl_leader_url      the metrics URL of the controller leader
#   sync_state_set      "size epoch" of broker-a's SyncStateSet and master
#                       epoch on the controller leader ("" when no leader)
#
# The ports are the ones up.sh and the compose file use (overridable with
# the same variables).
BROKER_METRICS=("broker-a=http://127.0.0.1:${BROKER_A_METRICS_PORT:-5557}/metrics"
	"broker-a-s=http://127.0.0.1:${BROKER_A_S_METRICS_PORT:-5559}/metrics")
CONTROLLER_METRICS=("http://127.0.0.1:${CONTROLLER1_METRICS_PORT:-5561}/metrics"
	"http://127.0.0.1:${CONTROLLER2_METRICS_PORT:-5562}/metrics"
	"http://127.0.0.1:${CONTROLLER3_METRICS_PORT:-5563}/metrics")

stack_mode() {
	if [ -n "$(docker ps -aq --filter label=com.docker.compose.project=tide --filter label=com.docker.compose.service=controller1 2>/dev/null)" ]; then
		echo controller
	else
		echo masterslave
	fi
}

metric() {
	curl -fsS -m 3 "$1" 2>/dev/null | awk -v n="$2" '$1 == n { print $2; exit }'
}

group_master() {
	local e svc url
	if [ "$(stack_mode)" = masterslave ]; then
		# 4.x: broker-a is the master whenever it runs
		curl -fsS -m 3 -o /dev/null "${BROKER_METRICS[0]#*=}" 2>/dev/null && echo broker-a
		return 0
	fi
	for e in "${BROKER_METRICS[@]}"; do
		svc=${e%%=*} url=${e#*=}
		[ "$(metric "$url" tide_broker_controller_mode_master)" = 1 ] && { echo "$svc"; return 0; }
	done
	return 0
}

ctl_leader_url() {
	local u
	for u in "${CONTROLLER_METRICS[@]}"; do
		[ "$(metric "$u" tide_controller_is_leader)" = 1 ] && { echo "$u"; return 0; }
	done
	return 0
}

sync_state_set() {
	local u size epoch
	u=$(ctl_leader_url)
	[ -n "$u" ] || return 0
	size=$(metric "$u" 'tide_controller_sync_state_set_size{broker_name="broker-a"}')
	epoch=$(metric "$u" 'tide_controller_master_epoch{broker_name="broker-a"}')
	echo "${size:-0} ${epoch:-0}"
}
