package transport

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voltmcp/voltmcp/engine/internal/rawio"
)

// DefaultGrace is the grace a stdio server usually gets ([Command.Grace]):
// how long it has to exit after its stdin closes, and again after
// SIGTERM. The engine's stop grace is this unless its options name one.
const DefaultGrace = 2 * time.Second

// stderrDrain bounds how long a server's stderr is read after it exited
// (exec.Cmd.WaitDelay).
const stderrDrain = 500 * time.Millisecond

// Command is a stdio server to start: its program, resolved (see
// [ResolveCommand]), and how it runs.
type Command struct {
	Path string   // the program, resolved
	Args []string // its arguments, without the program's name
	Dir  string   // its working directory
	Env  []string // its whole environment (see [ChildEnv])
	// Stderr receives the child's stderr (a bounded [Ring], say); nil
	// discards it.
	Stderr io.Writer
	// Grace is how long the child gets to exit after its stdin closes,
	// and again after SIGTERM, when it is stopped; zero gives it no time
	// (the engine gives it [DefaultGrace] or its options' stop grace).
	Grace time.Duration
	// Mark is the child's run mark, given to it as [RunEnv] in place of
	// one the environment holds (see [Runs]); "" gives none.
	Mark string
}

// Start starts the process of c in a process group of its own, with
// pipes for its stdin and stdout whose other ends the returned
// [Process] reads and writes. Unlike the SDK's CommandTransport, a stop
// (Close) stops every process the child started: its group, and on Linux
// every process that carries its run mark, in whatever session or group,
// so a server started through npx, uvx or a shell script leaves no
// grandchild behind, not even one that called setsid.
func Start(c Command) (*Process, error) {
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	if c.Mark != "" {
		// The child's mark is this one, not one it would inherit from a
		// gateway above this one.
		cmd.Env = make([]string, 0, len(c.Env)+1)
		for _, kv := range c.Env {
			if !strings.HasPrefix(kv, RunEnv+"=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, RunEnv+"="+c.Mark)
	}
	cmd.Stderr = c.Stderr
	// Once the child has exited, its stderr (copied into the ring) is
	// read for at most this long: a grandchild that holds the pipe open
	// never keeps Wait, and so a stop, waiting.
	cmd.WaitDelay = stderrDrain
	setProcessGroup(cmd)
	// The pipes are made here rather than by StdinPipe and StdoutPipe,
	// so that the engine's ends can be read and written with raw system
	// calls (rawio: on a small machine, each message is then one thread
	// wake-up cheaper).
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	// The child has its ends (or failed to start): close ours of them.
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start %s: %w", filepath.Base(c.Path), err)
	}
	p := &Process{cmd: cmd, stdin: rawio.Wrap(inW), stdout: rawio.Wrap(outR), grace: c.Grace, mark: c.Mark, done: make(chan struct{})}
	go p.wait()
	return p, nil
}

// Process is a running stdio server, made by [Start]. Closing it runs
// the shutdown the MCP spec describes: close stdin, wait, SIGTERM, wait,
// SIGKILL, sent to the whole process group and to the rest of its tree.
// Its methods are safe for concurrent use, but for Write, which one
// writer at a time calls.
type Process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	grace  time.Duration
	mark   string // the run mark of the child and what it starts

	done     chan struct{} // closed when the child has exited
	waitErr  error
	once     sync.Once
	closeErr error
}

func (p *Process) wait() {
	// In the poller first: Wait alone blocks in a system call for the
	// child's whole life (see waitExit).
	waitExit(p.cmd.Process.Pid)
	p.waitErr = p.cmd.Wait()
	// As Wait does for a StdoutPipe: the read ends, even when a
	// grandchild still holds the pipe open.
	_ = p.stdout.Close()
	close(p.done)
}

// Reader is the child's stdout. Closing it does nothing: the connection
// closes by closing stdin ([Process.Close]), and the pipe closes when
// the child exits.
func (p *Process) Reader() io.ReadCloser { return io.NopCloser(p.stdout) }

// Write writes b to the child's stdin.
func (p *Process) Write(b []byte) (int, error) { return p.stdin.Write(b) }

// Close stops the child and every process of its group and tree, once;
// later calls return what the first did.
func (p *Process) Close() error {
	p.once.Do(func() { p.closeErr = p.stop() })
	return p.closeErr
}

func (p *Process) stop() error {
	pid := p.cmd.Process.Pid
	// What the child started, while it still runs: once it exits, its
	// children's parent is no longer it.
	tree := descendants(pid)
	_ = p.stdin.Close()
	exited := func(d time.Duration) bool {
		select {
		case <-p.done:
			return true
		case <-time.After(d):
			return false
		}
	}
	if !exited(p.grace) {
		_ = signalGroup(pid, sigTerm)
		if !exited(p.grace) {
			_ = signalGroup(pid, sigKill)
			if !exited(5 * time.Second) {
				killTree(pid, p.mark, tree)
				return errors.New("process did not exit after SIGKILL")
			}
		}
	}
	// The leader is gone; what it started may not be, in its group or
	// out of it.
	killTree(pid, p.mark, tree)
	// An exit status, by a signal or not, is the server's business, not
	// a close error.
	return nil
}

// ExitStatus waits up to wait for the child to exit and says how it
// did: "exit status 3", "signal SIGSEGV". ok is false when it still
// runs.
func (p *Process) ExitStatus(wait time.Duration) (how string, ok bool) {
	select {
	case <-p.done:
	case <-time.After(wait):
		return "", false
	}
	// ProcessState, not waitErr: Wait reports ErrWaitDelay when a
	// grandchild held stderr, whatever the status.
	return describeExit(p.cmd.ProcessState), true
}

// ResolveCommand finds the program of a stdio server. A bare name is
// looked up in the child's PATH (the last PATH entry of env); a relative
// path resolves against the server's working directory dir. No shell is
// involved.
func ResolveCommand(command, dir string, env []string) (string, error) {
	if strings.ContainsRune(command, filepath.Separator) || strings.ContainsRune(command, '/') {
		if !filepath.IsAbs(command) {
			command = filepath.Join(dir, command)
		}
		return command, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue // never run a program from the working directory by accident
		}
		p := filepath.Join(d, command)
		if isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found in PATH", command)
}

// RunEnv names the variable that marks each stdio server an engine
// starts, and, by inheritance, what that server starts in turn, even in
// another session: its value, the run mark, is
// "<gateway pid>.<gateway start time>.<engine nonce>.<n>". A stop kills
// the processes with the server's mark, and the reaper those with the
// engine's prefix (reaper_linux.go).
const RunEnv = "VOLTMCP_RUN"

// Runs gives an engine's stdio servers their run marks and, for the
// first one, starts the engine's reaper: a process that outlives the
// engine and, when the engine stops or dies (even by SIGKILL), kills
// every process that carries one of its marks. The zero value is ready
// to use; Close it once the servers have stopped.
type Runs struct {
	once   sync.Once
	prefix string
	n      atomic.Uint64
	reaper reaper
}

// Mark returns a new run mark, for [Command.Mark].
func (r *Runs) Mark() string {
	r.once.Do(func() {
		var nonce [6]byte
		_, _ = rand.Read(nonce[:])
		r.prefix = selfID() + "." + hex.EncodeToString(nonce[:])
		r.reaper.start(r.prefix)
	})
	return r.prefix + "." + strconv.FormatUint(r.n.Add(1), 10)
}

// Close stops the reaper, once the servers have stopped.
func (r *Runs) Close() { r.reaper.stop() }
