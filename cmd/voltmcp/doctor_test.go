package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/internal/mcptest"
)

// deadServer is an address on 127.0.0.1 that accepts connections and
// closes them at once: an HTTP server that never answers. It counts the
// connections it took.
func deadServer(t *testing.T) (addr string, conns *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	conns = new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().String(), conns
}

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	data, _ := json.Marshal(v)
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDoctor checks each finding doctor reports, one line each with its
// fix, and exit 1: a command missing from PATH, an unset ${env:}
// variable (by name; a set one's value never shows), an HTTP server on
// 127.0.0.1 that does not answer, and a stale cache; and that a clean
// config exits 0, and an untrusted project's servers are named and not
// contacted.
func TestDoctor(t *testing.T) {
	t.Parallel()
	const canary = "doctor-canary-value-0123456789"
	dead, deadConns := deadServer(t)
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusMethodNotAllowed)
	}))
	defer live.Close()
	cmd, args, cenv := mcptest.Command("behave")
	home := t.TempDir()
	writeJSONFile(t, filepath.Join(home, ".volt", "agent", "mcp.json"), map[string]any{"version": 1, "servers": map[string]any{
		"gone":  map[string]any{"command": "no-such-mcp-server-xyz"},
		"keyed": map[string]any{"command": cmd, "args": args, "env": map[string]any{"API_KEY": "${env:DOCTOR_UNSET_KEY}", "SET": "${env:DOCTOR_SET}"}},
		"dead":  map[string]any{"url": "http://" + dead + "/mcp", "headers": map[string]any{"Authorization": "Bearer ${env:DOCTOR_SET}"}},
		"live":  map[string]any{"url": live.URL + "/mcp", "lifecycle": "lazy"},
		"stale": map[string]any{"command": cmd, "args": args, "env": cenv, "metadataRefreshMs": 1},
	}})
	fenv := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH"), "DOCTOR_SET": canary})
	cli := func(args ...string) cliResult {
		return runCLI(t, fenv, append(args, "--home", home, "--project", t.TempDir())...)
	}
	if r := cli("refresh", "stale"); r.code != exitOK {
		t.Fatalf("refresh:\n%s", r)
	}
	r := cli("doctor")
	if r.code != exitFindings {
		t.Fatalf("doctor: want exit 1\n%s", r)
	}
	if strings.Contains(r.stdout+r.stderr, canary) {
		t.Errorf("doctor prints the value of a variable:\n%s", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	for _, want := range []struct{ server, code, what, fix string }{
		{"gone", string(codeCommandMissing), `command "no-such-mcp-server-xyz" is not in PATH`, "fix: install no-such-mcp-server-xyz"},
		{"keyed", string(codeEnvUnset), "DOCTOR_UNSET_KEY is not set", "fix: export DOCTOR_UNSET_KEY=…"},
		{"dead", string(codeNoAnswer), "http://" + dead + "/mcp does not answer", "fix: start the server"},
		{"stale", string(codeCacheStale), "older than metadataRefreshMs", "fix: voltmcp refresh stale"},
	} {
		found := false
		for _, l := range lines {
			if strings.Contains(l, "servers."+want.server) && strings.Contains(l, "["+want.code+"]") {
				found = true
				if !strings.Contains(l, want.what) || !strings.Contains(l, want.fix) {
					t.Errorf("doctor's %s line lacks %q or %q:\n%s", want.code, want.what, want.fix, l)
				}
			}
		}
		if !found {
			t.Errorf("doctor does not report %s of %s:\n%s", want.code, want.server, r.stdout)
		}
	}
	if deadConns.Load() == 0 {
		t.Errorf("doctor did not contact the dead server")
	}
	for _, l := range lines {
		if strings.Contains(l, "servers.live.url") {
			t.Errorf("doctor reports the live server's url, which answers:\n%s", l)
		}
	}
	if !strings.HasSuffix(r.stdout, "in 5 enabled server(s)\n") {
		t.Errorf("doctor's summary:\n%s", r.stdout)
	}
	var ds cue.Diagnostics
	if r := cli("doctor", "--json"); r.code != exitFindings || json.Unmarshal([]byte(r.stdout), &ds) != nil || len(ds) != len(lines)-1 {
		t.Errorf("doctor --json: %d findings, want %d\n%s", len(ds), len(lines)-1, r)
	}

	// A clean config: exit 0.
	home2 := t.TempDir()
	writeJSONFile(t, filepath.Join(home2, ".volt", "agent", "mcp.json"), map[string]any{"version": 1, "servers": map[string]any{
		"ok": map[string]any{"command": cmd, "args": args, "env": cenv},
	}})
	env2 := fakeEnv(t, map[string]string{"HOME": home2, "PATH": os.Getenv("PATH")})
	if r := runCLI(t, env2, "refresh", "--home", home2, "--project", t.TempDir()); r.code != exitOK {
		t.Fatalf("refresh:\n%s", r)
	}
	if r := runCLI(t, env2, "doctor", "--home", home2, "--project", t.TempDir()); r.code != exitOK || r.stdout != "no findings: 1 enabled server(s) checked\n" {
		t.Errorf("doctor of a clean config:\n%s", r)
	}

	// An untrusted project: its servers are named, not contacted.
	project := t.TempDir()
	untrusted, conns := deadServer(t)
	writeJSONFile(t, filepath.Join(project, ".mcp.json"), map[string]any{"mcpServers": map[string]any{
		"proj": map[string]any{"url": "http://" + untrusted + "/mcp"},
	}})
	r = runCLI(t, env2, "doctor", "--home", home2, "--project", project)
	if r.code != exitFindings || !strings.Contains(r.stdout, "servers.proj: untrusted") || !strings.Contains(r.stdout, "fix: voltmcp trust") {
		t.Errorf("doctor of an untrusted project:\n%s", r)
	}
	if conns.Load() != 0 {
		t.Errorf("doctor contacted a server of an untrusted project")
	}
	if r := runCLI(t, env2, "doctor", "extra"); r.code != exitUsage {
		t.Errorf("doctor with an argument:\n%s", r)
	}
}

// TestCompletionScripts checks that each shell's script names every
// visible command and every flag of each, offers server ids where an
// argument is a SERVER, and parses (bash -n, zsh -n, fish -n; a shell
// that is not installed is skipped, loudly).
func TestCompletionScripts(t *testing.T) {
	t.Parallel()
	for _, sh := range []string{"bash", "zsh", "fish"} {
		t.Run(sh, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, nil, "completion", sh)
			if r.code != exitOK || r.stderr != "" {
				t.Fatalf("completion %s:\n%s", sh, r)
			}
			for _, c := range commands() {
				if c.hidden {
					continue
				}
				if !strings.Contains(r.stdout, c.name) {
					t.Errorf("the %s script lacks command %s", sh, c.name)
				}
				for _, f := range ownFlags(c) {
					want := "--" + f
					if sh == "fish" {
						want = "-l " + f
					}
					if !strings.Contains(r.stdout, want) {
						t.Errorf("the %s script lacks %s of %s", sh, want, c.name)
					}
				}
			}
			for _, want := range []string{"__complete servers", "verify", "tail", "query", "show"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("the %s script lacks %q", sh, want)
				}
			}
			path, err := exec.LookPath(sh)
			if err != nil {
				t.Skipf("SKIPPED: %s is not installed, so its completion script's syntax is not checked; install %s to check it", sh, sh)
			}
			file := filepath.Join(t.TempDir(), "voltmcp."+sh)
			os.WriteFile(file, []byte(r.stdout), 0o644)
			if out, err := exec.Command(path, "-n", file).CombinedOutput(); err != nil {
				t.Errorf("%s -n: %v\n%s\n%s", sh, err, out, r.stdout)
			}
		})
	}
	byName := map[string]complCommand{}
	for _, c := range complCommands() {
		byName[c.name] = c
	}
	for name, server := range map[string]bool{"status": true, "describe": true, "tools": true, "refresh": true, "pins": true, "search": false, "vet": false, "completion": false} {
		if byName[name].server != server {
			t.Errorf("command %s: server completion %v, want %v", name, byName[name].server, server)
		}
	}
	if got := strings.Join(byName["completion"].words, " "); got != "bash zsh fish" {
		t.Errorf("completion's words = %q", got)
	}
	if r := runCLI(t, nil, "completion", "tcsh"); r.code != exitUsage {
		t.Errorf("completion tcsh:\n%s", r)
	}
}

// TestCompleteServers: the hidden __complete lists the server ids, and
// is in neither the usage nor the scripts' command lists.
func TestCompleteServers(t *testing.T) {
	t.Parallel()
	project := serverProject(t)
	home := t.TempDir()
	r := runCLI(t, nil, "__complete", "servers", "--home", home, "--project", project, "--approve")
	if r.code != exitOK || r.stdout != "demo\n" {
		t.Errorf("__complete servers:\n%s", r)
	}
	r = runCLI(t, nil, "completion", "bash")
	if strings.Contains(r.stdout, "__complete)") {
		t.Errorf("the bash script completes the hidden command:\n%s", r.stdout)
	}
}

// TestBashCompletionCompletes runs the bash script's function on a few
// command lines.
func TestBashCompletionCompletes(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("SKIPPED: bash is not installed")
	}
	script := runCLI(t, nil, "completion", "bash").stdout
	for line, want := range map[string]string{
		"voltmcp se":           "servers serve setup search",
		"voltmcp audit ":       "verify tail query",
		"voltmcp completion z": "zsh",
		"voltmcp tools --j":    "--json",
		"voltmcp --home x doc": "doctor",
		"voltmcp search --lim": "--limit",
		"voltmcp vet --fo":     "--format",
		"voltmcp --vers":       "--version",
	} {
		words := strings.Fields(line)
		if strings.HasSuffix(line, " ") {
			words = append(words, "")
		}
		var q []string
		for _, w := range words {
			q = append(q, shellQuote(w))
		}
		prog := script + "\nCOMP_WORDS=(" + strings.Join(q, " ") + ")\nCOMP_CWORD=" + strconv.Itoa(len(words)-1) + "\n_voltmcp\necho \"${COMPREPLY[*]}\"\n"
		out, err := exec.Command(bash, "-c", prog).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != want {
			t.Errorf("completing %q: %q (%v), want %q", line, out, err, want)
		}
	}
}

// TestDoctorUnsetVariableOfAnExistingCommand: a server whose command is
// there but whose env reads an unset variable gets one finding, the
// unset variable, not a command-not-found too; set, the server refreshes
// and doctor has no findings. A command that is really missing is still
// reported beside its unset variable, as a path and as a bare name.
func TestDoctorUnsetVariableOfAnExistingCommand(t *testing.T) {
	cmd, args, cenv := mcptest.Command("behave")
	cenv["API_KEY"] = "${env:DOCTOR_API_KEY}"
	home := t.TempDir()
	writeJSONFile(t, filepath.Join(home, ".volt", "agent", "mcp.json"), map[string]any{"version": 1, "servers": map[string]any{
		"everything": map[string]any{"command": cmd, "args": args, "env": cenv},
	}})
	doctor := func(vars map[string]string, args ...string) cliResult {
		vars["HOME"], vars["PATH"] = home, os.Getenv("PATH")
		return runCLI(t, fakeEnv(t, vars), append(args, "--home", home, "--project", t.TempDir())...)
	}
	r := doctor(map[string]string{}, "doctor")
	want := "error[env-unset]: servers.everything.env.API_KEY: environment variable DOCTOR_API_KEY is not set"
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != exitFindings || len(lines) != 2 || !strings.Contains(lines[0], want) || lines[1] != "1 finding(s) in 1 enabled server(s)" {
		t.Errorf("doctor with DOCTOR_API_KEY unset: want the env-unset finding alone\n%s", r)
	}
	set := map[string]string{"DOCTOR_API_KEY": "doctor-api-key-value"}
	if r := doctor(set, "refresh"); r.code != exitOK {
		t.Fatalf("refresh with DOCTOR_API_KEY set:\n%s", r)
	}
	if r := doctor(set, "doctor"); r.code != exitOK || r.stdout != "no findings: 1 enabled server(s) checked\n" {
		t.Errorf("doctor with DOCTOR_API_KEY set:\n%s", r)
	}

	// Missing commands are still found.
	gone := filepath.Join(t.TempDir(), "mcp-server-gone")
	writeJSONFile(t, filepath.Join(home, ".volt", "agent", "mcp.json"), map[string]any{"version": 1, "servers": map[string]any{
		"gone": map[string]any{"command": gone, "env": map[string]any{"API_KEY": "${env:DOCTOR_API_KEY}"}},
		"bare": map[string]any{"command": "no-such-mcp-server-xyz", "env": map[string]any{"API_KEY": "${env:DOCTOR_API_KEY}"}},
	}})
	r = doctor(map[string]string{}, "doctor")
	for _, want := range []string{
		"servers.gone.env.API_KEY: environment variable DOCTOR_API_KEY is not set",
		`servers.gone.command: command "` + gone + `": no such file`,
		"servers.bare.env.API_KEY: environment variable DOCTOR_API_KEY is not set",
		`servers.bare.command: command "no-such-mcp-server-xyz" is not in PATH`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor lacks %q:\n%s", want, r)
		}
	}
	if r.code != exitFindings || !strings.HasSuffix(r.stdout, "4 finding(s) in 2 enabled server(s)\n") {
		t.Errorf("doctor of missing commands with an unset variable:\n%s", r)
	}
}
