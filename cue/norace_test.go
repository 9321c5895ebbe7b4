//go:build !race

package cue

// raceBuild is true when the tests run under the race detector.
const raceBuild = false
