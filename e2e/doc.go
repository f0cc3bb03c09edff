// Package e2e holds Tide's end-to-end suite: the whole system (MariaDB,
// Redis, two NameServers, a SYNC_MASTER broker pair and the order, payment
// and inventory services) started as containers from local images with
// testcontainers-go, driven only through public APIs. See README.md.
package e2e
