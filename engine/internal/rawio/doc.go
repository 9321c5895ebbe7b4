// Package rawio reads and writes non-blocking pipes and sockets with
// system calls the Go runtime is not told about, waiting for readiness
// in its poller as os.File does.
//
// An os.File read or write enters the system call through the runtime,
// which on the way in wakes its monitor thread when that sleeps, so that
// a call blocked in the kernel does not hold a processor: on a machine
// whose thread switches are dear (a small VM), that wake-up is a cost of
// every message a process like `voltmcp serve` relays. On a descriptor
// in non-blocking mode a read or write never blocks, so there is nothing
// for the monitor to do, and rawio skips it.
package rawio
