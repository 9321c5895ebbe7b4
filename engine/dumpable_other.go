//go:build !linux

package engine

// hardenProcess does nothing here: other systems have no
// PR_SET_DUMPABLE. On macOS and the BSDs another process of the same
// user cannot read a process's environment through a file, but can see
// it with ps -E / sysctl KERN_PROCARGS2 (macOS) or debug it; on Windows
// any process of the same user can read it. docs/architecture.md says so.
func hardenProcess() error { return nil }
