//go:build linux

package pollio_test

import (
	"bufio"
	"fmt"
	"os"
	"syscall"

	"github.com/voltmcp/voltmcp/engine/pollio"
)

// A server reads its stdin through Reader. Here a blocking pipe stands
// in for the one an agent gives a server it starts.
func ExampleReader() {
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		fmt.Println(err)
		return
	}
	stdin, agent := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "agent")
	defer stdin.Close()
	defer agent.Close()

	in, restore := pollio.Reader(stdin)
	defer restore() // puts the pipe back in blocking mode
	defer in.Close()

	_, _ = agent.WriteString(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil {
		fmt.Println(err)
		return
	}
	_, polled := in.(*os.File) // a non-blocking duplicate, not stdin itself
	fmt.Printf("through the poller: %v\nread: %s", polled, line)
	// Output:
	// through the poller: true
	// read: {"jsonrpc":"2.0","id":1,"method":"ping"}
}
