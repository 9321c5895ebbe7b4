// Package fanout hands values to every subscriber without waiting for
// any: a [Bus] is the engine's event bus, with the engine's event type
// as its type parameter. A subscriber that does not keep up loses
// values rather than slowing the publisher, and publishing to no one
// takes no lock.
//
// The package knows nothing of what it carries: the engine stamps and
// scrubs its events before it publishes them. It must not import the
// engine, cue, policies or wasm.
package fanout
