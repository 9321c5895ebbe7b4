//go:build unix

package npmpeers

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is a server-everything process serving MCP over HTTP on
// 127.0.0.1, started by [StartEverything]. It runs in a process group
// of its own.
type Server struct {
	// Port is the loopback port it listens on.
	Port int

	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	out  *tail
	once sync.Once
}

// StartEverything starts server-everything in mode "sse" (legacy SSE:
// GET /sse, POST /message) or "streamableHttp" (Streamable HTTP at /mcp)
// on a free loopback port, with loopback.cjs preloaded, and waits until
// it accepts connections. The test fails if the server listens on any
// address but the loopback. Stop ends it; so does the end of the test.
func StartEverything(t testing.TB, mode string) *Server {
	t.Helper()
	node := Node(t)
	entry := Path(t, EverythingEntry)
	preload := LoopbackPreload(t)
	home := t.TempDir()
	var errs []error
	for range 3 { // a port picked free may be taken before node binds it
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		env := []string{
			"PATH=" + os.Getenv("PATH"),
			"HOME=" + home,
			"PORT=" + strconv.Itoa(port),
			`NODE_OPTIONS=--require "` + preload + `"`,
		}
		s, err := start(node, []string{entry, mode}, env, port)
		if err == nil {
			t.Cleanup(s.Stop)
			return s
		}
		errs = append(errs, err)
	}
	t.Fatalf("start server-everything %s: %v", mode, errors.Join(errs...))
	return nil
}

// URL returns http://127.0.0.1:<port><path>.
func (s *Server) URL(path string) string {
	return "http://127.0.0.1:" + strconv.Itoa(s.Port) + path
}

// PID returns the process id of the server.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Output returns the end of what the server wrote to stdout and stderr.
func (s *Server) Output() string { return s.out.String() }

// Stop ends the server's process group, SIGTERM first and SIGKILL after
// 5 s, and waits for the server to exit. It is safe to call more than
// once.
func (s *Server) Stop() {
	s.once.Do(func() {
		pid := s.cmd.Process.Pid
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-s.done
		}
		// The leader is gone; anything left in its group goes too.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	})
}

func start(node string, args, env []string, port int) (*Server, error) {
	cmd := exec.Command(node, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &tail{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{Port: port, cmd: cmd, done: make(chan struct{}), out: out}
	go func() { _ = cmd.Wait(); close(s.done) }()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-s.done:
			return nil, fmt.Errorf("exited before listening on port %d: %s", port, lastLines(s.Output(), 5))
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("not listening on %s after 30 s: %s", addr, lastLines(s.Output(), 5))
		}
		time.Sleep(25 * time.Millisecond)
	}
	if bad, err := nonLoopbackListeners(port); err != nil || len(bad) > 0 {
		s.Stop()
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("listens on %v, not only on the loopback: is loopback.cjs preloaded?", bad)
	}
	return s, nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// nonLoopbackListeners lists the listening sockets on port whose local
// address is not a loopback address, from /proc/net/tcp and tcp6. Where
// there is no /proc (not Linux), it finds nothing.
func nonLoopbackListeners(port int) ([]string, error) {
	var bad []string
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 4 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			hexIP, hexPort, ok := strings.Cut(fields[1], ":")
			if !ok {
				continue
			}
			if p, err := strconv.ParseUint(hexPort, 16, 32); err != nil || int(p) != port {
				continue
			}
			if !loopbackHex(hexIP) {
				bad = append(bad, fields[1])
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return bad, nil
}

// loopbackHex reports whether an address as /proc/net/tcp{,6} shows it
// (each 32-bit word of the address in hex, in host byte order) is a
// loopback address.
func loopbackHex(h string) bool {
	if len(h) != 8 && len(h) != 32 {
		return false
	}
	ip := make(net.IP, 0, len(h)/2)
	for i := 0; i < len(h); i += 8 {
		w, err := strconv.ParseUint(h[i:i+8], 16, 32)
		if err != nil {
			return false
		}
		ip = binary.NativeEndian.AppendUint32(ip, uint32(w))
	}
	return ip.IsLoopback()
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (w *tail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

func (w *tail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
