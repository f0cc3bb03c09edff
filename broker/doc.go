// Package broker is Tide's message broker: a RocketMQ 4.x compatible broker
// as a library. A program builds Options (DefaultOptions, then broker.conf
// keys through Options.Apply), calls New, Start and, on exit, Shutdown.
//
// The store (internal/store) owns every byte on disk; the broker's other
// packages own the metadata tables (topic, offset, clientmgr, queuelock),
// held pulls (longpoll) and the request processors.
package broker
