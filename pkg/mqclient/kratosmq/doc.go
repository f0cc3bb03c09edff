// Package kratosmq runs Tide consumers, relays and background jobs as
// Kratos transport servers, so they start and stop with a kratos.App.
//
//	srv := kratosmq.NewServer(kratosmq.WithClientOptions(mqclient.WithNameServers(ns)))
//	srv.Subscribe("order-svc", "PaymentSucceeded", "*", onPaid)
//	app := kratos.New(kratos.Name("order"), kratos.Server(httpSrv, srv,
//		kratosmq.Runner("reconcile", recon.Start, recon.Shutdown)))
//
// # Guarantee
//
// Server.Stop shuts every consumer down with the stop context Kratos gives
// it (kratos.StopTimeout, 10 s by default): pulling stops, in-flight
// handlers run to completion, their offsets are committed, ordered queue
// locks are released and the consumer unregisters, so the rest of the group
// rebalances at once. Nothing is lost if the timeout expires first: the
// handlers' contexts are cancelled and their messages are redelivered (at
// least once, as everywhere in mqclient). kratos.App.Stop only cancels the
// app; App.Run returns after every server's Stop has returned, so a
// service's main observes the drain by waiting for Run.
//
// # Lifecycle and failure model
//
// Start starts the consumers one group at a time and returns once they
// run (it does not block until Stop, which Kratos allows). If one fails to
// start, those already started are shut down and Start returns the error,
// which makes Kratos stop the whole app. Stop may come before or during
// Start (Kratos calls Stop as soon as any server fails): a Server that was
// stopped never starts afterwards (Start returns ErrStopped). Stop is
// idempotent. Servers are single-use, like Kratos' own.
//
// One consumer group is one mqclient.PushConsumer: every Subscribe call
// for a group adds a topic to the same consumer, because RocketMQ requires
// every member of a group to subscribe to the same topics (a member that
// lacks a topic would be assigned its queues and never consume them).
//
// Server does not implement transport.Endpointer: a consumer has no
// address peers could call, and an endpoint would only pollute service
// discovery.
package kratosmq
