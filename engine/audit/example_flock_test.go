//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package audit_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
)

// Append on a goroutine others depend on, handing its work over only if
// the append has to wait: here another writer of the log (as another
// process would be) keeps the lock, so the hook runs, and the append
// gives up when its context ends.
func ExampleWithBeforeWait() {
	agentDir, _ := os.MkdirTemp("", "voltmcp-audit")
	defer os.RemoveAll(agentDir)
	path := audit.DefaultPath(agentDir)

	log, err := audit.Open(path, nil)
	if err != nil {
		panic(err)
	}
	defer log.Close()
	other, err := audit.Open(path, &audit.Options{HoldLock: time.Hour})
	if err != nil {
		panic(err)
	}
	defer other.Close()
	if err := other.Append(context.Background(), audit.Record{Kind: audit.KindCall, Tool: "other"}); err != nil {
		panic(err)
	}

	// testwait: the deadline under test, which must end the wait
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	ctx = audit.WithBeforeWait(ctx, func() { fmt.Println("about to wait: hand the work over") })
	err = log.Append(ctx, audit.Record{Kind: audit.KindCall, Tool: "mine"})
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output:
	// about to wait: hand the work over
	// true
}
