package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestDemo runs the demo end to end: it builds the example servers, runs
// them behind the engine and goes through every step. Not parallel, so
// that no other test's child process is around when it looks for its own.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example servers")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	r := runCLI(t, nil, "demo")
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("want exit 0 and empty stderr\n%s", r)
	}
	for _, want := range []string{
		"Building the example servers",
		"1. list_servers", `mcp({"action":"list_servers"})`,
		"2. connect", `mcp({"action":"connect","server":"notes"})`, `mcp({"action":"connect","server":"clock"})`, `mcp({"action":"connect","server":"files"})`,
		"3. search", `mcp({"action":"search","query":"find notes about the launch"})`,
		"4. describe", `"action":"describe","server":"notes","tool":"search_notes"`,
		"5. call", `mcp({"action":"call","server":"notes","tool":"search_notes","arguments":{"query":"launch"}})`, "Launch retro",
		"6. call", `mcp({"action":"call","server":"notes","tool":"export_notes","arguments":{"format":"markdown"}})`, "[output cut:",
		"7. read_cache", `"pattern":"^## n[0-9]+:"`, "## n10: Ideas backlog",
		"8. status",
		"claude mcp add voltmcp -- voltmcp serve", "README.md",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the demo's output lacks %q", want)
		}
	}
	if !regexp.MustCompile(`"cacheId":"mcpout_[a-z2-7]{26}"`).MatchString(r.stdout) {
		t.Errorf("the demo's output has no read_cache input with a cacheId")
	}
	if t.Failed() {
		t.Log(r.stdout)
	}

	m := regexp.MustCompile(`Workspace: (\S+),`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("the demo's output does not name its workspace\n%s", r.stdout)
	}
	if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Errorf("the workspace %s is still there (stat: %v)", m[1], err)
		os.RemoveAll(m[1])
	}
	assertNoProcesses(t, m[1])
}

func TestDemoKeep(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example servers")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	r := runCLI(t, nil, "demo", "--keep")
	m := regexp.MustCompile(`Kept the workspace (\S+):`).FindStringSubmatch(r.stdout)
	if m != nil {
		t.Cleanup(func() { os.RemoveAll(m[1]) })
	}
	if r.code != exitOK || m == nil {
		t.Fatalf("want exit 0 and the path of the kept workspace\n%s", r)
	}
	// The metadata cache holds a file per server, named by its identity.
	if cached, _ := filepath.Glob(filepath.Join(m[1], "agent", "mcp", "cache", "*.json")); len(cached) != 3 {
		t.Errorf("the kept workspace's metadata cache holds %d files; want one per server, 3: %v", len(cached), cached)
	}
	for _, p := range []string{"bin/notes", "project/.volt/mcp.json"} {
		if runtime.GOOS == "windows" && strings.HasPrefix(p, "bin/") {
			p += ".exe"
		}
		if _, err := os.Stat(filepath.Join(m[1], filepath.FromSlash(p))); err != nil {
			t.Errorf("the kept workspace lacks %s: %v", p, err)
		}
	}
	assertNoProcesses(t, m[1])
}

// assertNoProcesses fails if a child of this process, or any process
// whose command line names dir, is still running. It reads /proc, so it
// checks on Linux only.
func assertNoProcesses(t *testing.T, dir string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil || e.Name() == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // gone, or not ours to read
		}
		cmd := string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		if strings.Contains(cmd, dir) {
			t.Errorf("process %s is still running: %s", e.Name(), cmd)
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
			if f := strings.Fields(string(stat[i+1:])); len(f) > 1 && f[1] == self {
				t.Errorf("child process %s is still running (state %s): %s", e.Name(), f[0], cmd)
			}
		}
	}
}

func TestFindModuleRoot(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "// the checkout\nmodule \"github.com/voltmcp/voltmcp\" // quoted\n\ngo 1.26\n")
	write("other/go.mod", "module github.com/voltmcp/voltmcp/other\n")
	write("other/deeper/x.txt", "")
	got, err := findModuleRoot(filepath.Join(root, "other", "deeper"))
	if err != nil || got != root {
		t.Errorf("findModuleRoot = %q, %v; want %q", got, err, root)
	}

	if _, err := findModuleRoot(filepath.Join(root, "..")); err == nil || !strings.Contains(err.Error(), "runs from a checkout") {
		t.Errorf("outside a checkout: %v", err)
	}
	if got := moduleOf([]byte("modulex foo\nmodule\tgithub.com/a/b\n")); got != "github.com/a/b" {
		t.Errorf("moduleOf = %q", got)
	}
}

func TestPrintAnswer(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	printAnswer(&b, "first\n"+strings.Repeat("line\n", 30)+"last\n")
	out := b.String()
	if n := strings.Count(out, "\n"); n != demoAnswerLines+1 {
		t.Errorf("%d lines printed, want %d and a note\n%s", n, demoAnswerLines, out)
	}
	if !strings.HasPrefix(out, "    first\n") || !strings.HasSuffix(out, "    last\n") || !strings.Contains(out, "[… 12 lines not shown here") {
		t.Errorf("want the first and last lines and a note on the 12 left out\n%s", out)
	}

	b.Reset()
	printAnswer(&b, strings.Repeat("é", 200))
	if !strings.Contains(b.String(), strings.Repeat("é", demoLineWidth)+"…\n") || !strings.Contains(b.String(), "long lines cut") {
		t.Errorf("a long line is not cut at %d characters\n%s", demoLineWidth, b.String())
	}

	b.Reset()
	long := strings.Repeat("x", demoLineWidth)
	printAnswer(&b, `{"b":1,"a":{"k":"`+long+`","n":[1,2]},"c":[{"short":true}]}`)
	want := `    {
      "b": 1,
      "a": {
        "k": "` + long[:demoLineWidth-10] + `…
        "n": [1,2]
      },
      "c": [{"short":true}]
    }
    [long lines cut here at 160 characters; the agent gets them whole]
`
	if b.String() != want {
		t.Errorf("JSON laid out as\n%s\nwant\n%s", b.String(), want)
	}
}
