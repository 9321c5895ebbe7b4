package engine

import (
	"context"
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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/internal/line"
	"github.com/voltmcp/voltmcp/engine/internal/rawio"
	"github.com/voltmcp/voltmcp/engine/internal/turn"
)

// stdioTransport starts a server as a child process and speaks MCP over
// its stdin and stdout. Unlike the SDK's CommandTransport, it runs the
// child in a process group of its own and, when it stops, stops every
// process the child started: its group, and on Linux every process that
// carries its run mark (runEnv), in whatever session or group, so a
// server started through npx, uvx or a shell script leaves no grandchild
// behind, not even one that called setsid.
type stdioTransport struct {
	path    string   // the program, resolved
	args    []string // its arguments
	dir     string
	env     []string
	stderr  io.Writer // receives the child's stderr (a bounded ring)
	grace   time.Duration
	maxLine int
	// mark is the child's run mark, given to it as runEnv; "" gives none.
	mark string
	// check, when set, checks the work on the connection's reader
	// (Engine.readerCheck).
	check *turn.Check

	mu   sync.Mutex
	proc *process   // the running child, for Close and tests
	conn *line.Conn // its connection, for the engine's own calls
}

// Connect starts the process.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	cmd := exec.Command(t.path, t.args...)
	cmd.Dir = t.dir
	cmd.Env = t.env
	if t.mark != "" {
		// The child's mark is this one, not one it would inherit from a
		// gateway above this one.
		cmd.Env = make([]string, 0, len(t.env)+1)
		for _, kv := range t.env {
			if !strings.HasPrefix(kv, runEnv+"=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, runEnv+"="+t.mark)
	}
	cmd.Stderr = t.stderr
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
		return nil, fmt.Errorf("start %s: %w", filepath.Base(t.path), err)
	}
	p := &process{cmd: cmd, stdin: rawio.Wrap(inW), stdout: rawio.Wrap(outR), grace: t.grace, mark: t.mark, done: make(chan struct{})}
	go p.wait()
	t.mu.Lock()
	t.proc = p
	t.mu.Unlock()
	conn, err := (&line.Transport{Reader: p.reader(), Writer: p, MaxMessage: t.maxLine, Client: true, Check: t.check}).Connect(ctx)
	if err != nil {
		p.Close()
		return nil, err
	}
	t.mu.Lock()
	t.conn, _ = conn.(*line.Conn)
	t.mu.Unlock()
	return conn, nil
}

// stderrDrain bounds how long a server's stderr is read after it exited
// (exec.Cmd.WaitDelay).
const stderrDrain = 500 * time.Millisecond

// process is a running stdio server. Closing it runs the shutdown the
// MCP spec describes: close stdin, wait, SIGTERM, wait, SIGKILL, sent to
// the whole process group and to the rest of its tree (killTree).
type process struct {
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

func (p *process) wait() {
	// In the poller first: Wait alone blocks in a system call for the
	// child's whole life (see waitExit).
	waitExit(p.cmd.Process.Pid)
	p.waitErr = p.cmd.Wait()
	// As Wait does for a StdoutPipe: the read ends, even when a
	// grandchild still holds the pipe open.
	_ = p.stdout.Close()
	close(p.done)
}

// reader is the child's stdout. Closing it does nothing: the connection
// closes by closing stdin (Close below), and the pipe closes when the
// child exits.
func (p *process) reader() io.ReadCloser { return io.NopCloser(p.stdout) }

func (p *process) Write(b []byte) (int, error) { return p.stdin.Write(b) }

// Close stops the child and every process of its group.
func (p *process) Close() error {
	p.once.Do(func() { p.closeErr = p.stop() })
	return p.closeErr
}

func (p *process) stop() error {
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
	if p.waitErr != nil && !isSignalExit(p.waitErr) {
		return nil // an exit status is the server's business, not a close error
	}
	return nil
}

// exitStatus waits up to wait for the child to exit and says how it
// did: "exit status 3", "signal SIGSEGV". ok is false when it still
// runs.
func (p *process) exitStatus(wait time.Duration) (how string, ok bool) {
	select {
	case <-p.done:
	case <-time.After(wait):
		return "", false
	}
	// ProcessState, not waitErr: Wait reports ErrWaitDelay when a
	// grandchild held stderr, whatever the status.
	return describeExit(p.cmd.ProcessState), true
}

// exited reports whether the child has exited, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// resolveCommand finds the program of a stdio server. A bare name is
// looked up in the child's PATH; a relative path resolves against the
// server's working directory. No shell is involved.
func resolveCommand(command, dir string, env []string) (string, error) {
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

// lineConn is the connection Connect made, or nil before it.
func (t *stdioTransport) lineConn() *line.Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conn
}

// runEnv names the variable that marks each stdio server an engine
// starts, and, by inheritance, what that server starts in turn, even in
// another session: its value, the run mark, is
// "<gateway pid>.<gateway start time>.<engine nonce>.<n>". A stop kills
// the processes with the server's mark, and the reaper those with the
// engine's prefix (reaper_linux.go).
const runEnv = "VOLTMCP_RUN"

// runs gives an engine's stdio servers their run marks and, for the
// first one, starts the engine's reaper.
type runs struct {
	once   sync.Once
	prefix string
	n      atomic.Uint64
	reaper reaper
}

// mark returns a new run mark.
func (r *runs) mark() string {
	r.once.Do(func() {
		var nonce [6]byte
		_, _ = rand.Read(nonce[:])
		r.prefix = selfID() + "." + hex.EncodeToString(nonce[:])
		r.reaper.start(r.prefix)
	})
	return r.prefix + "." + strconv.FormatUint(r.n.Add(1), 10)
}

// close stops the reaper, once the servers have stopped.
func (r *runs) close() { r.reaper.stop() }
