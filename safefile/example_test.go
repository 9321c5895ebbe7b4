package safefile_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/voltmcp/voltmcp/safefile"
)

// ExampleUpdate adds a line to a file that other processes may be
// changing too: the read and the write happen under one lock.
func ExampleUpdate() {
	dir, _ := os.MkdirTemp("", "safefile")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "list.txt")
	for _, item := range []string{"a", "b"} {
		err := safefile.Update(context.Background(), path, nil, func(old []byte) ([]byte, error) {
			return append(old, item+"\n"...), nil
		})
		if err != nil {
			fmt.Println(err)
		}
	}
	data, _ := safefile.ReadFile(path, nil)
	fmt.Print(string(data))
	// Output:
	// a
	// b
}
