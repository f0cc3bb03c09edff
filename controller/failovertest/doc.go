// Package failovertest runs automatic failover with real processes (the
// tests need -tags cluster; make cluster-test): three controllers, a
// NameServer and a broker group of two in controller mode, the master
// killed with SIGKILL while the official client v2.1.2 and pkg/mqclient
// send. It is its own module so that the controller module does not
// depend on the clients.
package failovertest
