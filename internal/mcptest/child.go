package mcptest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/pollio"
)

// childArg is the one argument Command gives the test binary. It matches
// no test, so that a child whose mode somehow got lost runs nothing (it then
// prints the test framework's summary, which is not MCP either).
const childArg = "-test.run=^$"

// floodChunk and floodTotal shape the stderr of mode flood-stderr.
const (
	floodChunk = 64 << 10
	floodTotal = 50 << 20
)

// garbageLine is what mode garbage writes to stdout, again and again.
const garbageLine = "this is not json\n"

// sleeperReady is what mode sleeper writes to stdout once it ignores
// SIGTERM.
const sleeperReady = "ready\n"

// RunIfChild runs the test server of the mode named in the environment
// variable VOLTMCP_TESTSERVER, over stdin and stdout, and then exits the
// process: when the variable is set, it never returns. When it is not set,
// it returns at once. Call it first thing in TestMain.
func RunIfChild() {
	mode, ok := os.LookupEnv(EnvMode)
	if !ok {
		return
	}
	os.Exit(runChild(mode))
}

// Command returns what a test puts in a stdio server config to run the test
// server of mode: the test binary's absolute path, the arguments
// ["-test.run=^$"] (which match no test), and an environment holding
// VOLTMCP_TESTSERVER=mode, GORACE=atexit_sleep_ms=0 and every extraEnv entry
// (each KEY=VALUE, which may replace GORACE). The mode travels only in that
// environment, never in an argument. GORACE spares each child built with
// -race the second the race detector otherwise sleeps before it exits.
// Command panics on an unknown mode, on an extraEnv entry without "=", and
// on an entry that sets VOLTMCP_TESTSERVER itself.
func Command(mode string, extraEnv ...string) (command string, args []string, env map[string]string) {
	if !knownMode(mode) {
		panic(fmt.Sprintf("mcptest: unknown mode %q", mode))
	}
	command, err := testBinary()
	if err != nil {
		panic(fmt.Sprintf("mcptest: locating the test binary: %v", err))
	}
	env = map[string]string{EnvMode: mode, "GORACE": "atexit_sleep_ms=0"}
	for _, kv := range extraEnv {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			panic(fmt.Sprintf("mcptest: extra environment entry %q is not KEY=VALUE", kv))
		}
		if k == EnvMode {
			panic("mcptest: set the mode with Command's mode argument, not in extraEnv")
		}
		env[k] = v
	}
	return command, []string{childArg}, env
}

// testBinary returns the absolute path of the running executable.
func testBinary() (string, error) {
	if exe, err := os.Executable(); err == nil {
		return exe, nil
	}
	return filepath.Abs(os.Args[0])
}

// runChild runs mode over stdin and stdout and returns the exit status.
func runChild(mode string) int {
	if status, ok := runProcsChild(mode); ok {
		return status
	}
	switch mode {
	case ModeHangInit:
		// Read everything, answer nothing.
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case ModeGarbage:
		return runGarbage()
	case ModeSleeper:
		signal.Ignore(syscall.SIGTERM, syscall.SIGPIPE)
		// Tell a waiting parent that SIGTERM is ignored from now on.
		_, _ = io.WriteString(os.Stdout, sleeperReady)
		sleepForever()
	case ModeEndlessLine:
		return runEndlessLineChild()
	}
	// Stdin and stdout are read and written through Go's poller: a
	// goroutine blocked reading a pipe can stall the runtime for up to a
	// minute (package pollio), and a test with it.
	in, out, restore := pollio.Stdio()
	defer restore()
	if isRawMode(mode) {
		if err := serveRaw(mode, in, out); err != nil {
			fmt.Fprintln(os.Stderr, "mcptest:", err)
			return 1
		}
		return 0
	}
	if !isSDKMode(mode) {
		fmt.Fprintf(os.Stderr, "mcptest: unknown mode %q\n", mode)
		return 2
	}

	var cfg serverConfig
	if s := os.Getenv(EnvExtraTools); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > maxExtraTools {
			fmt.Fprintf(os.Stderr, "mcptest: %s=%q: want a number from 0 to %d\n", EnvExtraTools, s, maxExtraTools)
			return 2
		}
		cfg.extraTools = n
	}
	pidFile := os.Getenv(EnvPIDFile)

	switch mode {
	case ModeGrandchild:
		if err := startGrandchild(pidFile); err != nil {
			fmt.Fprintln(os.Stderr, "mcptest:", err)
			return 1
		}
	case ModeIgnoreSIGTERM:
		signal.Ignore(syscall.SIGTERM)
		if pidFile != "" {
			if err := writePID(pidFile, os.Getpid()); err != nil {
				fmt.Fprintln(os.Stderr, "mcptest:", err)
				return 1
			}
		}
	case ModeFloodStderr:
		go floodStderr()
	case ModeSetsidGrandchild:
		if err := startSetsidGrandchildren(pidFile); err != nil {
			fmt.Fprintln(os.Stderr, "mcptest:", err)
			return 1
		}
	}

	if os.Getenv(EnvListen) == "http" {
		if err := serveHTTPChild(newServer(mode, cfg), in, out); err != nil {
			fmt.Fprintln(os.Stderr, "mcptest:", err)
			return 1
		}
		return 0
	}
	err := newServer(mode, cfg).Run(context.Background(), &mcp.IOTransport{Reader: in, Writer: out})
	if mode == ModeIgnoreSIGTERM {
		sleepForever()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		return 1
	}
	return 0
}

// sleepForever blocks the calling goroutine for good. It sleeps rather
// than blocks on a channel, so that the runtime never mistakes a child with
// nothing else to do for a deadlock.
func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// runGarbage writes garbageLine to stdout until stdin closes or stdout
// breaks.
func runGarbage() int {
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	for {
		select {
		case <-done:
			return 0
		default:
		}
		if _, err := io.WriteString(os.Stdout, garbageLine); err != nil {
			return 1
		}
		time.Sleep(time.Millisecond)
	}
}

// startGrandchild starts the test binary in mode sleeper, in this process's
// process group, waits until it ignores SIGTERM, and then writes its PID to
// pidFile and this process's PID to pidFile+".parent". The grandchild
// shares this process's stderr; its stdin is the null device, and its
// stdout a pipe that only carries its readiness.
func startGrandchild(pidFile string) error {
	if pidFile == "" {
		return fmt.Errorf("mode %s needs %s", ModeGrandchild, EnvPIDFile)
	}
	exe, err := testBinary()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, childArg)
	cmd.Env = append(os.Environ(), EnvMode+"="+ModeSleeper) // the last entry wins
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the grandchild: %w", err)
	}
	ready := make([]byte, len(sleeperReady))
	if _, err := io.ReadFull(stdout, ready); err != nil || string(ready) != sleeperReady {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("the grandchild did not get ready: %q, %v", ready, err)
	}
	go func() { _ = cmd.Wait() }() // reap it should it die while this process lives
	if err := writePID(pidFile+".parent", os.Getpid()); err != nil {
		return err
	}
	return writePID(pidFile, cmd.Process.Pid)
}

// writePID writes pid to path, atomically: a reader sees the whole number
// or no file.
func writePID(path string, pid int) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// floodStderr writes floodTotal bytes to stderr in chunks of floodChunk, as
// fast as the reader takes them.
func floodStderr() {
	line := []byte("mcptest: flooding stderr on purpose .............................\n")
	chunk := bytes.Repeat(line, floodChunk/len(line)+1)[:floodChunk]
	for written := 0; written < floodTotal; written += len(chunk) {
		if _, err := os.Stderr.Write(chunk); err != nil {
			return
		}
	}
}
