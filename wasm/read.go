package wasm

import "github.com/voltmcp/voltmcp/safefile"

// MaxModuleSize bounds a plugin module read from a file by [ReadModule].
const MaxModuleSize = 64 << 20

// ReadModule reads the plugin module at path for [Host.Load]: without
// blocking, only a regular file (a FIFO or device is refused by name, as
// safefile.ReadFile does), and at most [MaxModuleSize] bytes.
func ReadModule(path string) ([]byte, error) {
	return safefile.ReadFile(path, &safefile.ReadOptions{MaxSize: MaxModuleSize})
}
