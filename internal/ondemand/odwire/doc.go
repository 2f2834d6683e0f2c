// Package odwire wires on-demand capture (internal/ondemand) into the
// binary: the agent's Source (--on-demand), 'trainscope trigger', and
// what serve needs for its trigger endpoint and its automatic trigger
// (Auto). Triggers travel on core NATS (ondemand.Ask); the traces come
// back through the agent's publisher like any other, with the rank of the
// process that wrote them.
package odwire
