// Package turn carries the engine's one rule for work that runs on a
// connection's reader: yield the reader before you block.
//
// A connection (engine/internal/line) reads its messages on one
// goroutine at a time, the reader. To spare a goroutine switch on every
// call, the work a message starts (a call of the gateway's mcp tool, or
// the handling of a server's answer) runs on the reader itself, and
// nothing more is read until that work lets the reader go: it yields,
// and another goroutine reads on. Work that answers at once never
// yields and costs no switch; work that would wait on anything that may
// take long (a server, a disk, a lock, a plugin, a policy) must yield
// first, or pings, cancellations and other calls go unread meanwhile.
//
// The work learns its yield through its context ([WithYield], [Yield],
// [YieldFunc]); a continuation gets the yield of the goroutine that calls
// it as its first argument, and [NoYield] where there is no reader to
// let go. [Await] runs such work and waits for its result, yielding
// before it waits. A panic in work on a reader goes to the handler its
// context carries ([WithPanicHandler]), so that it answers for the call
// rather than ending the process.
//
// [Hold] runs one piece of work holding a reader and hands the reader
// over at its first yield. A [Check], given to it in tests, reports
// work that holds the reader past a time limit without yielding, with
// the stack of the goroutine that holds it: the sign of a step that
// blocks before it yields.
//
// The package must not know what the work is: it holds no policy, no
// connection and no I/O, only the yield, its context keys and the
// check. It imports only the standard library.
package turn
