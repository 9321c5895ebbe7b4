// Command callcost counts the user-space instructions that voltmcp serve
// spends on one call of the mcp tool, with valgrind's cachegrind, which
// counts instructions whatever else the machine is doing: a measure of
// CPU cost that a loaded machine does not blur, for comparing two builds.
// It runs serve under cachegrind over the same stdio server, once
// answering one call and once answering one plus -calls, and prints the
// difference per call; startup cancels out. What it does not count: the
// kernel's work (system calls, page faults), waits, and the upstream
// server, which runs outside valgrind.
//
//	go build -o voltmcp ./cmd/voltmcp
//	go build -o notes ./examples/servers/notes
//	go run ./internal/callcost -voltmcp ./voltmcp -server ./notes -tool add_note -arguments '{"title":"t","body":"b"}'
//
// Each run gets a home of its own, with the one server "up" in its user
// config. XDG_CACHE_HOME is shared by the runs, so that the built-in
// plugin compiles once, in a first run that is not counted.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

func main() {
	voltmcp := flag.String("voltmcp", "", "the voltmcp binary (required)")
	server := flag.String("server", "", "the stdio MCP server behind it (required)")
	tool := flag.String("tool", "", "the server's tool to call (required)")
	arguments := flag.String("arguments", "{}", "the tool's arguments, a JSON object")
	calls := flag.Int("calls", 1000, "calls in the counted run beyond the first")
	extra := flag.String("serve-flags", "", "more flags for voltmcp serve, split at spaces")
	flag.Parse()
	if *voltmcp == "" || *server == "" || *tool == "" || *calls < 1 {
		flag.Usage()
		os.Exit(2)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(*arguments), &args); err != nil {
		fail(fmt.Errorf("-arguments: %w", err))
	}
	work, err := os.MkdirTemp("", "callcost-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(work)
	// The first run, not counted, fills the plugin cache that the
	// counted runs share.
	var refs [3]int64
	for i, n := range []int{1, 1, 1 + *calls} {
		if refs[i], err = count(work, i, *voltmcp, *server, *tool, args, n, strings.Fields(*extra)); err != nil {
			fail(err)
		}
	}
	refs[0], refs[1] = refs[1], refs[2]
	per := float64(refs[1]-refs[0]) / float64(*calls)
	fmt.Printf("instructions: %d with 1 call, %d with %d; per call: %.0f\n", refs[0], refs[1], 1+*calls, per)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "callcost:", err)
	os.Exit(1)
}

// refsLine is cachegrind's total of instructions.
var refsLine = regexp.MustCompile(`I\s+refs:\s+([\d,]+)`)

// count runs serve under cachegrind in a home of its own, makes n calls
// of tool and returns the instructions counted.
func count(work string, run int, voltmcp, server, tool string, args map[string]any, n int, extra []string) (int64, error) {
	home := filepath.Join(work, "home"+strconv.Itoa(run))
	cfgDir := filepath.Join(home, ".volt", "agent")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		return 0, err
	}
	abs, err := filepath.Abs(server)
	if err != nil {
		return 0, err
	}
	cfg, _ := json.Marshal(map[string]any{"version": 1, "servers": map[string]any{"up": map[string]any{"command": abs}}})
	if err := os.WriteFile(filepath.Join(cfgDir, "mcp.json"), cfg, 0o600); err != nil {
		return 0, err
	}
	report := filepath.Join(work, "cachegrind"+strconv.Itoa(run))
	cmdArgs := append([]string{"--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=" + report + ".out", voltmcp,
		"serve", "--home", home}, extra...)
	cmd := exec.Command("valgrind", cmdArgs...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(work, "cache"),
		// Go's asynchronous preemption signals are no part of a call's cost.
		"GODEBUG=asyncpreemptoff=1")
	log, err := os.Create(report + ".log")
	if err != nil {
		return 0, err
	}
	defer log.Close()
	cmd.Stderr = log
	in, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start valgrind (Debian's package valgrind): %w", err)
	}
	r := bufio.NewReader(out)
	err = converse(in, r, tool, args, n)
	in.Close()
	_, _ = io.Copy(io.Discard, r)
	if werr := cmd.Wait(); err == nil && werr != nil {
		err = fmt.Errorf("voltmcp serve under valgrind: %w (its output: %s)", werr, log.Name())
	}
	if err != nil {
		return 0, err
	}
	text, err := os.ReadFile(report + ".log")
	if err != nil {
		return 0, err
	}
	m := refsLine.FindSubmatch(text)
	if m == nil {
		return 0, fmt.Errorf("no instruction count in %s", log.Name())
	}
	return strconv.ParseInt(strings.ReplaceAll(string(m[1]), ",", ""), 10, 64)
}

// converse initializes an MCP session over in and r and makes n calls of
// the mcp tool, each after the last one's answer.
func converse(in io.Writer, r *bufio.Reader, tool string, args map[string]any, n int) error {
	send := func(m map[string]any) error {
		b, _ := json.Marshal(m)
		_, err := in.Write(append(b, '\n'))
		return err
	}
	await := func(id int) error {
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return fmt.Errorf("serve ended before answering request %d: %w", id, err)
			}
			var m struct {
				ID     *int            `json:"id"`
				Error  json.RawMessage `json:"error"`
				Result struct {
					IsError bool `json:"isError"`
				} `json:"result"`
			}
			if json.Unmarshal(line, &m) != nil || m.ID == nil || *m.ID != id {
				continue
			}
			if m.Error != nil || m.Result.IsError {
				return fmt.Errorf("request %d failed: %s", id, line)
			}
			return nil
		}
	}
	if err := send(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "callcost", "version": "1"}}}); err != nil {
		return err
	}
	if err := await(0); err != nil {
		return err
	}
	if err := send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		return err
	}
	for id := 1; id <= n; id++ {
		if err := send(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{
			"name": "mcp", "arguments": map[string]any{"action": "call", "server": "up", "tool": tool, "arguments": args}}}); err != nil {
			return err
		}
		if err := await(id); err != nil {
			return err
		}
	}
	return nil
}
