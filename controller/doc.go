// Package controller is Tide's broker-group controller (RocketMQ 5's controller mode).
package controller
