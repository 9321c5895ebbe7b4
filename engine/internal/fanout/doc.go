// Package fanout hands values to every subscriber without waiting for
// any: a [Bus] is the engine's event bus, with the engine's event type
// as its type parameter. Every value published gets the next sequence
// number and a place in a ring of the last ones, whether anyone
// subscribes or not, so that a subscriber can come back and ask for what
// it missed ([Bus.SubscribeSince]). A subscriber that does not keep up
// never slows the publisher: it is handed what it has not taken from the
// ring when it has room again, and what fell out of the ring meanwhile
// is one gap value that counts it.
//
// The package knows nothing of what it carries: the engine stamps and
// scrubs its events before it publishes them, and says how a sequence
// number is set on one and how a gap is told ([Options]). It must not
// import the engine, cue, policies or wasm.
package fanout
