//go:build unix

package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/voltmcp/voltmcp/safefile"
)

// Start starts a daemon in the background, as `gopls -remote=auto`
// does: exe with args (which run the daemon of agentDir), in a session
// of its own (setsid), so that the end of the agent session that
// started it does not end it, with stdin and stdout /dev/null and
// stderr appended to [LogPath] (0600). It returns once the daemon
// answers on its socket. When the child ends first, as it does when
// another daemon won the race to start, Start still returns nil if a
// daemon answers; otherwise its error names the log.
func Start(ctx context.Context, agentDir, exe string, args, env []string) error {
	if err := privateDir(Dir(agentDir)); err != nil {
		return err
	}
	logPath := LogPath(agentDir)
	logf, _, err := safefile.OpenAppend(logPath, 0o600)
	if err != nil {
		return fmt.Errorf("daemon log %s: %w", logPath, err)
	}
	defer logf.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer null.Close()
	cmd := exec.Command(exe, args...)
	cmd.Env = env
	cmd.Dir = Dir(agentDir)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the voltmcp daemon: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	delay := 5 * time.Millisecond
	for {
		if c, err := Dial(ctx, agentDir); err == nil {
			c.Close()
			return nil
		} else if !errors.Is(err, ErrNotRunning) {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("start the voltmcp daemon: %w (its log: %s)", ctx.Err(), logPath)
		case werr := <-exited:
			t.Stop()
			exited = nil
			// Another daemon that won the race holds the lock and
			// is about to listen: wait for it instead.
			if !Running(agentDir) {
				if c, err := Dial(ctx, agentDir); err == nil {
					c.Close()
					return nil
				}
				return fmt.Errorf("the voltmcp daemon exited at its start (%v); its log: %s", werr, logPath)
			}
		case <-t.C:
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
}
