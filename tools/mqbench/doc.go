// Command mqbench is a load generator for Tide and the brokers users would
// pick instead (NATS JetStream, Redis Streams), in the spirit of RocketMQ's
// benchmark tools: producers (sync, async with an in-flight window, oneway,
// batch) at a target or maximum rate, consumers alongside (end-to-end
// latency) or draining a backlog, a progress line every second and a
// summary with msgs/s, MB/s and HdrHistogram latency percentiles, as text
// and JSON. Each peer is driven with its own official Go client; Tide
// also with the official RocketMQ Go client (-target tide-official,
// rocketmq-client-go v2.1.2), so a report shows the broker's cost with a
// client Tide does not control.
//
//	mqbench -target tide -addr 127.0.0.1:9876 -mode produce -send async -inflight 64 -duration 10s
//	mqbench -target tide-official -addr 127.0.0.1:9876 -mode produce -send async -inflight 256
//	mqbench -target nats -addr nats://127.0.0.1:4222 -mode backlog -count 1000000
//	mqbench -target redis -addr 127.0.0.1:6379 -mode e2e -rate 20000
//	mqbench probe -dir /var/tmp          # disk bandwidth, fsync rate, loopback TCP
//	mqbench report -in results/ -out docs/benchmarks/
//
// Modes: produce (send only), consume (drain what a topic holds), backlog
// (preload -count messages with batched sends, then drain them and time
// only the drain), e2e (producer and consumer together; the consumer
// measures send -> consume latency from a timestamp in the body).
//
// Send and end-to-end latency start when a send starts. A paced run
// (-rate) also reports how late the sends started against the schedule
// ("lag behind the -rate schedule", schedule_lag in the JSON): senders
// that fall behind, after a stall of the process or a loaded CPU, hold a
// queue there that the two latencies do not see, and a change that lets
// them catch up faster moves that queue into the broker and the consumer,
// where the end-to-end latency does see it (docs/benchmarks/analysis.md).
package main
