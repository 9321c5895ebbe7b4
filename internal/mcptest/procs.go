package mcptest

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The modes that attack how a client stops and reports on its servers;
// doc.go describes each one.
const (
	ModeSetsidGrandchild = "setsid-grandchild"
	ModeSegvCall         = "segv-call"
	ModeDeepAnswer       = "deep-answer"
)

// Internal modes: processes the modes above start, never a server.
const (
	// modeSetsidSleeper ignores SIGTERM, SIGHUP and SIGPIPE, says
	// sleeperReady on descriptor 3 and sleeps forever.
	modeSetsidSleeper = "setsid-sleeper"
	// modeSetsidSpawn starts a setsid-sleeper in a session of its own,
	// writes its PID to the file named by EnvPIDFile and exits.
	modeSetsidSpawn = "setsid-spawn"
)

// Mode setsid-grandchild: what the files next to EnvPIDFile hold.
const (
	// OrphanSuffix is added to EnvPIDFile for the file holding the PID of
	// the orphaned grandchild (its parent exited at once).
	OrphanSuffix = ".orphan"
	// ParentSuffix is added to EnvPIDFile for the file holding the
	// server's own PID.
	ParentSuffix = ".parent"
)

// Mode segv-call.
const (
	// ToolSegv writes SegvStderr, and the value of EnvSecret when it is
	// set, to stderr, and then kills its server with SIGSEGV before it
	// answers.
	ToolSegv = "segv"
	// SegvStderr is the line ToolSegv writes to stderr first.
	SegvStderr = "mcptest: segfaulting on purpose"
	// EnvSecret names a variable whose value ToolSegv writes to stderr,
	// as a careless server prints its token before it crashes.
	EnvSecret = "VOLTMCP_TESTSERVER_SECRET"
)

// Mode deep-answer.
const (
	// EnvDeep chooses which answer of mode deep-answer nests too deep:
	// "list" (the default), every tools/list, or "call", every
	// tools/call (tools/list then lists ToolDeepAnswer).
	EnvDeep = "VOLTMCP_TESTSERVER_DEEP"
	// ToolDeepAnswer is the one tool mode deep-answer lists when EnvDeep
	// is "call".
	ToolDeepAnswer = "deep_answer"
	// DeepAnswerDepth is how many levels of JSON arrays the deep answer
	// nests: twice the 10,000 that encoding/json decodes.
	DeepAnswerDepth = 20_000
)

// runProcsChild runs the internal modes; ok is false for any other mode.
func runProcsChild(mode string) (status int, ok bool) {
	switch mode {
	case modeSetsidSleeper:
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
		ready := os.NewFile(3, "ready")
		_, _ = io.WriteString(ready, sleeperReady)
		_ = ready.Close()
		sleepForever()
	case modeSetsidSpawn:
		pid, err := startSetsidSleeper(nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mcptest:", err)
			return 1, true
		}
		if err := writePID(os.Getenv(EnvPIDFile), pid); err != nil {
			fmt.Fprintln(os.Stderr, "mcptest:", err)
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// startSetsidGrandchildren starts the two grandchildren of mode
// setsid-grandchild, each in a session of its own, ignoring SIGTERM and
// SIGHUP: one a child of this server that holds its stdout and stderr
// open, and one whose parent exits at once (an orphan from the start).
// It writes their PIDs to pidFile and pidFile+OrphanSuffix, and this
// process's to pidFile+ParentSuffix.
func startSetsidGrandchildren(pidFile string) error {
	if pidFile == "" {
		return fmt.Errorf("mode %s needs %s", ModeSetsidGrandchild, EnvPIDFile)
	}
	pid, err := startSetsidSleeper(os.Stdout)
	if err != nil {
		return err
	}
	exe, err := testBinary()
	if err != nil {
		return err
	}
	spawn := exec.Command(exe, childArg)
	spawn.Env = append(os.Environ(), EnvMode+"="+modeSetsidSpawn, EnvPIDFile+"="+pidFile+OrphanSuffix)
	spawn.Stderr = os.Stderr
	if out, err := spawn.Output(); err != nil {
		return fmt.Errorf("starting the orphan: %v %s", err, out)
	}
	if err := writePID(pidFile+ParentSuffix, os.Getpid()); err != nil {
		return err
	}
	return writePID(pidFile, pid)
}

// startSetsidSleeper starts a setsid-sleeper in a new session, with
// stdout as its stdout (the null device when nil) and this process's
// stderr, waits until it is ready and returns its PID. It is reaped
// should it die while this process lives.
func startSetsidSleeper(stdout *os.File) (int, error) {
	exe, err := testBinary()
	if err != nil {
		return 0, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	cmd := exec.Command(exe, childArg)
	cmd.Env = append(os.Environ(), EnvMode+"="+modeSetsidSleeper)
	cmd.Stderr = os.Stderr
	if stdout != nil {
		cmd.Stdout = stdout
	}
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return 0, fmt.Errorf("starting a setsid grandchild: %w", err)
	}
	ready := make([]byte, len(sleeperReady))
	if _, err := io.ReadFull(r, ready); err != nil || string(ready) != sleeperReady {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return 0, fmt.Errorf("the setsid grandchild did not get ready: %q, %v", ready, err)
	}
	go func() { _ = cmd.Wait() }()
	return cmd.Process.Pid, nil
}

// addProcs adds the tools of this file's SDK modes.
func addProcs(s *mcp.Server, mode string) {
	if mode != ModeSegvCall {
		return
	}
	s.AddTool(&mcp.Tool{
		Name:        ToolSegv,
		Description: "Makes the server die of SIGSEGV before it answers.",
		InputSchema: map[string]any{"type": "object"},
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		line := SegvStderr
		if v := os.Getenv(EnvSecret); v != "" {
			line += " (token " + v + ")"
		}
		fmt.Fprintln(os.Stderr, line)
		// Go's runtime turns a SIGSEGV it is sent into a panic's exit
		// status: the shell this process becomes dies of it for real,
		// with this process's PID and pipes.
		err := syscall.Exec("/bin/sh", []string{"sh", "-c", "kill -SEGV $$"}, os.Environ())
		return nil, fmt.Errorf("mcptest: exec: %w", err)
	})
}

// deepAnswer returns a verbatim result nested DeepAnswerDepth levels.
func deepAnswer() verbatim {
	return verbatim(`{"content":[{"type":"text","text":"deep"}],"structuredContent":{"deep":` +
		strings.Repeat("[", DeepAnswerDepth) + strings.Repeat("]", DeepAnswerDepth) + `}}`)
}

// deepAnswerList returns the tools/list result of mode deep-answer.
func deepAnswerList() any {
	if os.Getenv(EnvDeep) == "call" {
		return map[string]any{"tools": []any{rawTool(ToolDeepAnswer, "Answers a result nested too deep.", objectSchema())}}
	}
	return verbatim(`{"tools":[{"name":"deep","inputSchema":{"type":"object","default":` +
		strings.Repeat("[", DeepAnswerDepth) + strings.Repeat("]", DeepAnswerDepth) + `}}]}`)
}
