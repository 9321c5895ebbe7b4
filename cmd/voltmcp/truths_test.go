package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/internal/mcptest"
)

// smallOutputProject is serverProject with maxOutputBytes at its minimum,
// so a call's output of a few KB is cut and kept in the sidecar.
func smallOutputProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd, args, env := mcptest.Command("behave")
	doc := map[string]any{"version": 1, "settings": map[string]any{"maxOutputBytes": 1024},
		"servers": map[string]any{"demo": map[string]any{"command": cmd, "args": args, "env": env}}}
	data, _ := json.Marshal(doc)
	os.MkdirAll(filepath.Join(dir, ".volt"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, ".volt", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReadCacheFootersNameTheCLICommand: on the CLI, a cut output and a
// page of read-cache point at the rest with the command a user types,
// 'voltmcp read-cache ID --offset N', and the command works; --json keeps
// what an agent gets (issue 20, item 10).
func TestReadCacheFootersNameTheCLICommand(t *testing.T) {
	project := smallOutputProject(t)
	home := t.TempDir()
	env := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
	cli := func(args ...string) cliResult {
		return runCLI(t, env, append(args, "--home", home, "--project", project, "--approve")...)
	}
	var lines []string
	for i := range 200 {
		lines = append(lines, strings.Repeat("x", 20)+" line "+string(rune('a'+i%26)))
	}
	long, _ := json.Marshal(map[string]string{"text": strings.Join(lines, "\n")})
	r := cli("call", "demo", "echo", "--args", string(long))
	m := regexp.MustCompile(`\n\[output cut: ([0-9]+) of [0-9]+ bytes.*; the rest: voltmcp read-cache (mcpout_[A-Za-z0-9]+) --offset ([0-9]+)\]\n$`).FindStringSubmatch(r.stdout)
	if r.code != exitOK || m == nil || strings.Contains(r.stdout, `"action"`) {
		t.Fatalf("a cut call's footer does not name 'voltmcp read-cache ID --offset N':\n%s", r)
	}
	id := m[2]
	// The rest begins where the text shown ends: the footer's command
	// does not give the shown part again.
	if m[1] != m[3] {
		t.Errorf("the footer's offset %s is not where the %s bytes shown end:\n%s", m[3], m[1], r)
	}
	shown := r.stdout[:strings.LastIndex(r.stdout, "\n[output cut:")]
	if next := cli("read-cache", id, "--offset", m[3]); next.code != exitOK || !strings.HasPrefix(strings.Join(lines, "\n"), shown+strings.SplitN(next.stdout, "\n[more:", 2)[0]) {
		t.Errorf("the footer's command does not go on where the shown text ends:\nshown: %q\nnext: %s", shown, next)
	}
	// --json gives the agent the same pointer.
	if r := cli("call", "demo", "echo", "--args", string(long), "--json"); r.code != exitOK || !regexp.MustCompile(`"offset": ?`+m[3]+`\b`).MatchString(r.stdout) || !strings.Contains(r.stdout, `\"offset\":`+m[3]+`})`) {
		t.Errorf("the agent's answer does not point at the rest from offset %s:\n%s", m[3], r)
	}
	// read-cache caps a page at maxOutputBytes too: the page ends with
	// the command for the next one.
	r = cli("read-cache", id)
	m = regexp.MustCompile(`\n\[more: voltmcp read-cache ` + id + ` --offset ([0-9]+)\]\n$`).FindStringSubmatch(r.stdout)
	if r.code != exitOK || m == nil || strings.Contains(r.stdout, "mcp(") {
		t.Fatalf("read-cache's footer does not name the CLI command:\n%s", r)
	}
	if r := cli("read-cache", id, "--offset", m[1]); r.code != exitOK || !strings.Contains(r.stdout, " line ") {
		t.Errorf("the footer's command does not read the next page:\n%s", r)
	}
	r = cli("read-cache", id, "--pattern", "line [a-z]$")
	if r.code != exitOK || !regexp.MustCompile(`\n\[more: voltmcp read-cache `+id+` --offset [0-9]+ --pattern 'line \[a-z\]\$'\]\n$`).MatchString(r.stdout) {
		t.Errorf("a page of matching lines does not keep the pattern in its footer:\n%s", r)
	}
	// --json is the agent's answer, unchanged.
	if r := cli("read-cache", id, "--json"); r.code != exitOK || !strings.Contains(r.stdout, `"nextOffset"`) {
		t.Errorf("read-cache --json:\n%s", r)
	}
	if r := cli("read-cache", "--help"); r.code != exitOK || !strings.Contains(r.stdout, "[more: voltmcp read-cache ID --offset N]") {
		t.Errorf("read-cache --help does not say what the footer is:\n%s", r)
	}
}

// TestConnectHelpSaysWhatItPrints: connect --help shows what connect
// prints (the server, its status and its tool count, as the mcp tool's
// connect action answers) and says the tools themselves are listed by
// other commands (issue 20, item 10).
func TestConnectHelpSaysWhatItPrints(t *testing.T) {
	project := serverProject(t)
	home := t.TempDir()
	env := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
	cli := func(args ...string) cliResult {
		return runCLI(t, env, append(args, "--home", home, "--project", project, "--approve")...)
	}
	r := cli("connect", "demo")
	var got map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != exitOK {
		t.Fatalf("connect: %v\n%s", err, r)
	}
	help := cli("connect", "--help").stdout
	// The help's sample output has the keys connect prints.
	m := regexp.MustCompile(`(?m)^  (\{"action":"connect".*\})$`).FindStringSubmatch(help)
	if m == nil {
		t.Fatalf("connect --help shows no sample of its output:\n%s", help)
	}
	var sample map[string]any
	if err := json.Unmarshal([]byte(m[1]), &sample); err != nil {
		t.Fatalf("connect --help's sample is not JSON: %v\n%s", err, m[1])
	}
	for k := range got {
		if _, ok := sample[k]; !ok {
			t.Errorf("connect prints %q, which its help's sample lacks: %s", k, m[1])
		}
	}
	for _, want := range []string{"voltmcp status demo", "voltmcp search"} {
		if !strings.Contains(strings.ReplaceAll(help, "SERVER", "demo"), want) {
			t.Errorf("connect --help does not point at %q for the tools:\n%s", want, help)
		}
	}
}

// TestVersionCIInstallWorksUnpublished: the CI jobs of the README and
// docs/config.md install voltmcp in a way that works while the module is
// not published: from a checkout of its source, with 'go install
// ./cmd/voltmcp' run in that checkout; the '@latest' line is kept, commented
// out, for when it is (issue 20, item 10).
func TestVersionCIInstallWorksUnpublished(t *testing.T) {
	t.Parallel()
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	for _, doc := range []string{"README.md", "docs/config.md"} {
		data, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		jobs := 0
		for _, m := range block.FindAllStringSubmatch(string(data), -1) {
			yaml := m[1]
			if !strings.Contains(yaml, "voltmcp vet") || !strings.Contains(yaml, "go install") {
				continue
			}
			jobs++
			for line := range strings.Lines(yaml) {
				if s := strings.TrimSpace(line); strings.Contains(s, "go install") && strings.Contains(s, "@") && !strings.HasPrefix(s, "#") {
					t.Errorf("%s: a CI job installs a module version that is not published: %s", doc, s)
				}
			}
			if !regexp.MustCompile(`(?m)^ *# - run: go install github\.com/voltmcp/voltmcp/cmd/voltmcp@latest`).MatchString(yaml) {
				t.Errorf("%s: the CI job lost the commented @latest line for when the module is published:\n%s", doc, yaml)
			}
			path := regexp.MustCompile(`(?m)^ +path: (\S+)`).FindStringSubmatch(yaml)
			if path == nil || !strings.Contains(yaml, "- run: cd "+path[1]+" && go install ./cmd/voltmcp\n") {
				t.Errorf("%s: the CI job does not run 'go install ./cmd/voltmcp' in its checkout of voltmcp:\n%s", doc, yaml)
			}
		}
		if jobs == 0 {
			t.Errorf("%s: no CI job that installs and runs voltmcp vet", doc)
		}
	}
	// ./cmd/voltmcp of a checkout is this package, a main package.
	if _, err := os.Stat(filepath.Join("..", "..", "cmd", "voltmcp", "main.go")); err != nil {
		t.Errorf("./cmd/voltmcp of a checkout: %v", err)
	}
}

// TestReadCacheOfAnotherProjectSaysWhere: an output id is read in the
// workspace that produced it; read from another, the error says so and
// names --project, and the command fails.
func TestReadCacheOfAnotherProjectSaysWhere(t *testing.T) {
	project := smallOutputProject(t)
	home := t.TempDir()
	env := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
	long, _ := json.Marshal(map[string]string{"text": strings.Repeat("a line of text\n", 200)})
	r := runCLI(t, env, "call", "demo", "echo", "--args", string(long), "--home", home, "--project", project, "--approve")
	m := regexp.MustCompile(`voltmcp read-cache (mcpout_[A-Za-z0-9]+)`).FindStringSubmatch(r.stdout)
	if r.code != exitOK || m == nil {
		t.Fatalf("no cut output:\n%s", r)
	}
	other := t.TempDir()
	r = runCLI(t, env, "read-cache", m[1], "--home", home, "--project", other)
	if r.code == exitOK || !strings.Contains(r.stdout+r.stderr, "--project DIR") || !strings.Contains(r.stdout+r.stderr, "unknown or expired output id") {
		t.Errorf("reading another project's output:\n%s", r)
	}
	if r := runCLI(t, env, "read-cache", m[1], "--home", home, "--project", project, "--approve"); r.code != exitOK {
		t.Errorf("reading it in its project:\n%s", r)
	}
}
