#!/usr/bin/env python3
"""Writes tide-dashboard.json, the Grafana dashboard for Tide's metrics.

The JSON is generated so that panel ids and grid positions stay
consistent; edit this file and run `python3 deploy/grafana/gen.py`.
"""
import json, os

DS = {"type": "prometheus", "uid": "${datasource}"}
panels, pid, y = [], [0], [0]
x = [0]

def nid():
    pid[0] += 1
    return pid[0]

def row(title):
    if x[0]:
        y[0] += 8
        x[0] = 0
    panels.append({"type": "row", "title": title, "id": nid(), "collapsed": False,
                   "gridPos": {"h": 1, "w": 24, "x": 0, "y": y[0]}, "panels": []})
    y[0] += 1

def ts(title, exprs, unit="short", desc="", w=8, stack=False):
    if x[0] + w > 24:
        x[0] = 0
        y[0] += 8
    targets = [{"datasource": DS, "expr": e, "legendFormat": l, "refId": chr(65 + i)} for i, (e, l) in enumerate(exprs)]
    panels.append({
        "type": "timeseries", "title": title, "description": desc, "id": nid(), "datasource": DS,
        "gridPos": {"h": 8, "w": w, "x": x[0], "y": y[0]},
        "fieldConfig": {"defaults": {"unit": unit, "custom": {"lineWidth": 1, "fillOpacity": 10,
                                                             "stacking": {"mode": "normal" if stack else "none"}}},
                        "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                    "tooltip": {"mode": "multi", "sort": "desc"}},
        "targets": targets,
    })
    x[0] += w

def stat(title, expr, unit="short", desc="", w=4, thresholds=None):
    if x[0] + w > 24:
        x[0] = 0
        y[0] += 8
    steps = thresholds or [{"color": "green", "value": None}]
    panels.append({
        "type": "stat", "title": title, "description": desc, "id": nid(), "datasource": DS,
        "gridPos": {"h": 4, "w": w, "x": x[0], "y": y[0]},
        "fieldConfig": {"defaults": {"unit": unit, "thresholds": {"mode": "absolute", "steps": steps}}, "overrides": []},
        "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}, "colorMode": "value",
                    "graphMode": "area", "textMode": "auto"},
        "targets": [{"datasource": DS, "expr": expr, "refId": "A"}],
    })
    x[0] += w

R = "[$__rate_interval]"
B = '{instance=~"$broker"}'
Bm = 'instance=~"$broker"'

def q(p, metric, by):
    return f"histogram_quantile({p}, sum by (le, {by}) (rate({metric}{R})))" if by else \
        f"histogram_quantile({p}, sum by (le) (rate({metric}{R})))"

# ---- Overview
row("Overview")
stat("Brokers registered", "sum(tide_nameserver_brokers)", desc="Broker processes the NameServers know (max over NameServers).")
stat("Messages in / s", f"sum(rate(tide_broker_messages_in_total{B}{R}))", "ops")
stat("Messages out / s", f"sum(rate(tide_broker_messages_out_total{B}{R}))", "ops")
stat("Total consumer lag", f"sum(tide_broker_consumer_lag_messages{B})", thresholds=[
    {"color": "green", "value": None}, {"color": "orange", "value": 1000}, {"color": "red", "value": 100000}])
stat("Dead letters", f"sum(tide_broker_dlq_messages{B})", thresholds=[{"color": "green", "value": None}, {"color": "red", "value": 1}])
stat("Disk used (max)", f"max(tide_broker_disk_used_ratio{B})", "percentunit", thresholds=[
    {"color": "green", "value": None}, {"color": "orange", "value": 0.75}, {"color": "red", "value": 0.9}])
y[0] += 4
x[0] = 0

# ---- Broker traffic
row("Broker: traffic and latency")
ts("Messages in / s by topic", [(f'sum by (topic) (rate(tide_broker_messages_in_total{B}{R}))', "{{topic}}")], "ops")
ts("Messages out / s by topic", [(f'sum by (topic) (rate(tide_broker_messages_out_total{B}{R}))', "{{topic}}")], "ops")
ts("Bytes in / s by topic", [(f'sum by (topic) (rate(tide_broker_bytes_in_total{B}{R}))', "{{topic}}")], "Bps")
ts("Request p99 by request", [(f'histogram_quantile(0.99, sum by (le, request) (rate(tide_broker_request_duration_seconds_bucket{{{Bm},response!="HELD"}}{R})))', "{{request}}")], "s",
   "Time to answer, by request code. Held pulls are excluded (measured until parked).")
ts("Requests / s by request and response", [(f'sum by (request, response) (rate(tide_broker_request_duration_seconds_count{B}{R}))', "{{request}} {{response}}")], "reqps")
ts("Error responses / s", [(f'sum by (request, response) (rate(tide_broker_request_duration_seconds_count{{{Bm},response!~"SUCCESS|HELD|PULL_NOT_FOUND|PULL_RETRY_IMMEDIATELY|QUERY_NOT_FOUND"}}{R}))', "{{request}} {{response}}")], "reqps")

row("Broker: store")
ts("Store append p50 / p99 by topic", [(f'histogram_quantile(0.99, sum by (le, topic) (rate(tide_broker_store_append_seconds_bucket{B}{R})))', "p99 {{topic}}"),
                                       (f'histogram_quantile(0.5, sum by (le) (rate(tide_broker_store_append_seconds_bucket{B}{R})))', "p50 all")], "s",
   "Commit log append plus, with SYNC_FLUSH, the wait for the flush.")
ts("Flush: mean fdatasync time and rate", [(f'rate(tide_broker_store_flush_seconds_total{B}{R}) / rate(tide_broker_store_flushes_total{B}{R})', "mean flush {{instance}}")], "s")
ts("Flushes / s and appends / s", [(f'rate(tide_broker_store_flushes_total{B}{R})', "flushes {{instance}}"), (f'rate(tide_broker_store_appends_total{B}{R})', "appends {{instance}}")], "ops",
   "Appends per flush shows group commit at work.")
ts("Disk used", [(f'tide_broker_disk_used_ratio{B}', "{{instance}}")], "percentunit", "Writes are refused above diskMaxUsedSpaceRatio (store_disk_full = 1).")
ts("Disk free", [(f'tide_broker_disk_free_bytes{B}', "{{instance}}")], "bytes")
ts("Commit log size on disk", [(f'tide_broker_store_commitlog_max_offset_bytes{B} - tide_broker_store_commitlog_min_offset_bytes{B}', "{{instance}}")], "bytes")
ts("Corrupt records skipped / s", [(f'rate(tide_broker_store_corrupt_records_total{B}{R})', "{{instance}}")], "ops")
ts("Disk full flag", [(f'tide_broker_store_disk_full{B}', "{{instance}}")])

row("Broker: consumers")
ts("Consumer lag by group and topic", [(f'sum by (group, topic) (tide_broker_consumer_lag_messages{B})', "{{group}} / {{topic}}")], w=12)
ts("Dead letter queue size by group", [(f'sum by (group) (tide_broker_dlq_messages{B})', "{{group}}")], w=12)
ts("Long-poll held pull requests", [(f'tide_broker_longpoll_held_requests{B}', "{{instance}}")])
ts("Client connections", [(f'tide_broker_connections{B}', "{{instance}}")])

row("Broker: transactions, timers, delay levels")
ts("Half messages by age", [(f'sum by (age) (tide_broker_transaction_half_by_age{B})', "{{age}}")], stack=True,
   desc="Pending half messages; anything in gt_1h needs an operator (console: Half messages).")
ts("Oldest half message age / parked", [(f'max(tide_broker_transaction_half_oldest_age_seconds{B})', "oldest age (s)"), (f'sum(tide_broker_transaction_half_parked{B})', "parked")])
ts("Check-backs sent and decisions / s", [(f'sum(rate(tide_broker_transaction_checks_sent_total{B}{R}))', "checks sent"),
                                         (f'sum by (outcome) (rate(tide_broker_transaction_decisions_total{B}{R}))', "{{outcome}}")], "ops")
ts("Timers pending", [(f'sum(tide_broker_timers_pending{B})', "pending"), (f'sum(rate(tide_broker_timers_delivered_total{B}{R}))', "delivered / s")])
ts("Timer lateness p50 / p99", [(f'histogram_quantile(0.5, sum by (le) (rate(tide_broker_timer_lateness_seconds_bucket{B}{R})))', "p50"),
                               (f'histogram_quantile(0.99, sum by (le) (rate(tide_broker_timer_lateness_seconds_bucket{B}{R})))', "p99")], "s",
   "Timers never fire early; lateness is delivery time minus the requested time.")
ts("Delay levels: pending and max lateness", [(f'sum by (level) (tide_broker_delay_level_pending{B})', "pending L{{level}}"),
                                              (f'max by (level) (tide_broker_delay_level_max_lateness_seconds{B})', "max lateness L{{level}} (s)")])

row("Broker: replication")
ts("Replication lag (bytes)", [(f'tide_broker_replication_lag_bytes{B}', "{{instance}} → {{slave}}")], "bytes", w=12)
ts("Replication lag (time)", [(f'tide_broker_replication_lag_seconds{B}', "{{instance}} → {{slave}}")], "s", w=12)

row("NameServer")
ts("Brokers by cluster and role", [('max by (cluster, role) (tide_nameserver_brokers)', "{{cluster}} {{role}}")])
ts("Topics and connections", [('max(tide_nameserver_topics)', "topics"), ('sum(tide_nameserver_connections)', "connections")])
ts("Seconds since last broker registration (max)", [('max by (addr) (tide_nameserver_broker_last_register_age_seconds)', "{{addr}}")], "s",
   "Brokers register every 30 s; a broker silent for brokerChannelExpiredTime (120 s) is dropped.")
ts("Requests / s", [(f'sum by (request) (rate(tide_nameserver_request_duration_seconds_count{R}))', "{{request}}")], "reqps")
ts("Request p99", [(f'histogram_quantile(0.99, sum by (le, request) (rate(tide_nameserver_request_duration_seconds_bucket{R})))', "{{request}}")], "s")
ts("Brokers expired / replica sets without master", [(f'sum(increase(tide_nameserver_brokers_expired_total{R}))', "expired"),
                                                     ('max(tide_nameserver_broker_names_without_master)', "without master")])

row("Services: clients")
ts("Sent / s by topic and result", [(f'sum by (topic, result) (rate(mqclient_sent_total{R}))', "{{topic}} {{result}}")], "ops")
ts("Send p99 by topic", [(f'histogram_quantile(0.99, sum by (le, topic) (rate(mqclient_send_seconds_bucket{R})))', "{{topic}}")], "s")
ts("Consumed / s by group and result", [(f'sum by (group, result) (rate(mqclient_consumed_total{R}))', "{{group}} {{result}}")], "ops")
ts("Handler p99 by group", [(f'histogram_quantile(0.99, sum by (le, group) (rate(mqclient_handle_seconds_bucket{R})))', "{{group}}")], "s")
ts("Redeliveries / s by group", [(f'sum by (group, topic) (rate(mqclient_redelivered_total{R}))', "{{group}} {{topic}}")], "ops")
ts("Transactional sends and check-backs / s", [(f'sum by (outcome) (rate(tide_txmsg_sends_total{R}))', "send {{outcome}}"),
                                               (f'sum by (outcome) (rate(tide_txmsg_checks_total{R}))', "check {{outcome}}")], "ops")

row("Services: patterns")
ts("Dedup hits / s by source", [(f'sum by (group, source) (rate(idempotent_dedup_hits_total{R}))', "{{group}} {{source}}")], "ops",
   "Duplicates acknowledged without effect, detected in Redis or in the database.")
ts("Redis fallbacks / s by policy", [(f'sum by (group, policy) (rate(idempotent_redis_fallbacks_total{R}))', "{{group}} {{policy}}")], "ops")
ts("Payload mismatches, lost claims / s", [(f'sum by (group) (rate(idempotent_payload_mismatches_total{R}))', "mismatch {{group}}"),
                                           (f'sum by (group, reason) (rate(idempotent_claims_lost_total{R}))', "claim lost {{group}} {{reason}}")], "ops")
ts("Ordered: per-key blocked time p99", [(f'histogram_quantile(0.99, sum by (le) (rate(tide_ordered_blocked_seconds_bucket{R})))', "p99"),
                                         ('sum(tide_ordered_blocked_keys)', "keys blocked now")], "s")
ts("Ordered: messages and gaps / s", [(f'sum by (outcome) (rate(tide_ordered_messages_total{R}))', "{{outcome}}"),
                                      (f'sum by (policy) (rate(tide_ordered_gaps_total{R}))', "gap {{policy}}")], "ops")
ts("Delay (client timers): fired / s and lateness p99", [(f'sum by (result) (rate(tide_delay_fired_total{R}))', "fired {{result}}"),
                                                         (f'histogram_quantile(0.99, sum by (le) (rate(tide_delay_lateness_seconds_bucket{R})))', "lateness p99 (s)")])
ts("Reconciliation discrepancies by class", [(f'sum by (job, class) (increase(mqclient_reconcile_discrepancies_total{R}))', "{{job}} {{class}}")], w=12,
   desc="in_flight counts items inside the grace window; anything else is a real discrepancy.")
ts("Reconciliation runs and repairs", [(f'sum by (job, result) (increase(mqclient_reconcile_runs_total{R}))', "run {{job}} {{result}}"),
                                       (f'sum by (job, result) (increase(mqclient_reconcile_repairs_total{R}))', "repair {{job}} {{result}}")], w=12)

dash = {
    "__requires": [{"type": "grafana", "id": "grafana", "name": "Grafana", "version": "9.0.0"},
                   {"type": "datasource", "id": "prometheus", "name": "Prometheus", "version": "1.0.0"},
                   {"type": "panel", "id": "timeseries", "name": "Time series", "version": ""},
                   {"type": "panel", "id": "stat", "name": "Stat", "version": ""}],
    "title": "Tide", "uid": "tide-overview", "description": "Tide brokers, NameServers and the demo services (see docs/operations.md).",
    "tags": ["tide", "rocketmq", "messaging"], "timezone": "browser", "editable": True, "graphTooltip": 1,
    "schemaVersion": 39, "version": 1, "refresh": "10s", "time": {"from": "now-1h", "to": "now"},
    "templating": {"list": [
        {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source", "current": {}, "hide": 0},
        {"name": "broker", "label": "Broker", "type": "query", "datasource": DS, "refresh": 2, "includeAll": True, "multi": True,
         "allValue": ".*", "current": {"text": "All", "value": "$__all"},
         "definition": "label_values(tide_broker_store_messages_total, instance)",
         "query": {"query": "label_values(tide_broker_store_messages_total, instance)", "refId": "broker"}},
    ]},
    "annotations": {"list": []},
    "panels": panels,
}
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tide-dashboard.json")
with open(out, "w") as f:
    json.dump(dash, f, indent=2, ensure_ascii=False)
    f.write("\n")
print(f"wrote {out}: {len(panels)} panels")
