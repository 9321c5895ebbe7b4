//go:build race

package cue

// raceBuild is true when the tests run under the race detector, which
// allocates more for the same work (sync.Pool drops what it holds at
// random, among others).
const raceBuild = true
