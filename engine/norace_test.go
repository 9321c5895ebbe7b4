//go:build !race

package engine

// raceBuild is true when the tests run under the race detector, which
// makes the same work several times slower.
const raceBuild = false
