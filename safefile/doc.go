// Package safefile reads and writes the files voltmcp keeps and reads
// (config layers, the trust store, caches, pins, tokens, policies,
// plugins) without the ways a planted file can hurt a reader.
//
// [ReadFile] and [Open] open a path without blocking (O_NONBLOCK, so a
// FIFO or a terminal cannot hang the open), check with fstat that what
// was opened is a regular file, refuse anything else by name ("x: not a
// regular file (fifo)"), and read at most a size cap. [WriteFile] replaces
// a file atomically: a temporary file in the same directory, written,
// synced and renamed over the path, then the directory synced. [Update]
// is a read-modify-write that holds an exclusive lock on a lock file
// beside the path (path + ".lock"), or one named elsewhere
// ([WriteOptions.LockFile], [LockAt]), for its whole length and reads
// the file inside it, so two processes updating one file never lose
// either change.
//
// The package imports only the standard library. On platforms without
// flock (Windows and others), [Lock] and [Update] serialize nothing
// between processes; everything else behaves the same.
package safefile
