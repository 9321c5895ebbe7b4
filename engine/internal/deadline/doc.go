// Package deadline gives calls contexts that end at their deadline, with
// one timer for all of them rather than one per call ([Timer]).
//
// A context from [Timer.WithTimeout] behaves as one from
// [context.WithTimeout] does: it ends with its parent, on cancel, or at
// its deadline, when its Err is [context.DeadlineExceeded], and its Done
// channel is that of a plain cancelable context, so that
// [context.AfterFunc] and child contexts need no goroutine to watch it.
//
// The package knows nothing of what the calls are: it holds no policy,
// no connection and no I/O, and imports only the standard library.
package deadline
