// Package pollio gives a process's standard input and output, when they
// are pipes or sockets in blocking mode (as an agent starts an MCP
// server), non-blocking duplicates whose reads and writes wait in Go's
// poller instead of in the kernel.
//
// Two costs of a goroutine blocked in a read or write system call are
// avoided. First, the runtime hands the thread's processor away and back
// on every message, which shows in each message's latency on a small
// machine (docs/benchmarks.md). Second, with Go 1.26 and 1.27 a goroutine that
// enters a blocking system call just as the garbage collector stops the
// world can hold the stop for as long as the call blocks, up to about a
// minute, with every other goroutine of the process stopped: a server
// waiting on stdin for the next request then answers nothing, and its
// client sends nothing until it answers. A read that waits in the poller
// holds no processor, so the stop never waits for it
// (docs/benchmarks.md, "A stop-the-world stall").
//
// The duplicate shares its open file with the original, and non-blocking
// mode belongs to the open file: the restore function each call returns
// puts the mode back, and must run when the reading or writing ends.
//
// The package imports the standard library only, so that small servers
// (examples/servers) can use it without the engine.
package pollio
