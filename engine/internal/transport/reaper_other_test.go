//go:build unix && !linux

package transport

// reaperPID is 0: outside Linux there is no reaper.
func reaperPID(*Runs) int { return 0 }
