package conformance

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/npmpeers"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// notReference is why a scenario that drives the suite's reference
// server fails against a gateway: it calls a tool, prompt or resource by
// a name of that server's, and voltmcp serve offers its one mcp tool and
// what its configured servers offer.
const notReference = "not applicable: it calls the suite's reference server's own "

// serverScenarios is what the "all" server suite of conformance 0.1.16
// holds, and what voltmcp serve --http (with no server configured)
// scores on each: "" for a pass, else why it fails. docs/conformance.md
// shows the same table; change both together. As with clientScenarios,
// the test fails when a scenario's outcome differs either way.
var serverScenarios = map[string]string{
	"server-initialize":           "",
	"ping":                        "",
	"logging-set-level":           "",
	"tools-list":                  "",
	"resources-list":              "",
	"prompts-list":                "",
	"dns-rebinding-protection":    "",
	"server-sse-multiple-streams": "",
	"server-sse-polling": "two warnings: no priming event and no retry field on a POST's event stream; " +
		"serve does not offer resuming a stream (a dropped answer is the call's error)",
	"completion-complete":           "not implemented: completion/complete (the gateway's one tool has no prompt or resource template to complete)",
	"resources-subscribe":           "not implemented: resources/subscribe",
	"resources-unsubscribe":         "not implemented: resources/subscribe",
	"tools-call-simple-text":        notReference + "tool test_simple_text",
	"tools-call-image":              notReference + "tool test_image_content",
	"tools-call-audio":              notReference + "tool test_audio_content",
	"tools-call-embedded-resource":  notReference + "tool test_embedded_resource",
	"tools-call-mixed-content":      notReference + "tool test_multiple_content_types",
	"tools-call-with-logging":       notReference + "tool test_tool_with_logging",
	"tools-call-error":              notReference + "tool test_error_handling",
	"tools-call-with-progress":      notReference + "tool test_tool_with_progress",
	"tools-call-sampling":           notReference + "tool test_sampling",
	"tools-call-elicitation":        notReference + "tool test_elicitation",
	"json-schema-2020-12":           notReference + "tool json_schema_2020_12_tool",
	"elicitation-sep1034-defaults":  notReference + "tool test_elicitation_sep1034_defaults",
	"elicitation-sep1330-enums":     notReference + "tool test_elicitation_sep1330_enums",
	"resources-read-text":           notReference + "resource test://static-text",
	"resources-read-binary":         notReference + "resource test://static-binary",
	"resources-templates-read":      notReference + "resource template test://template/{id}/data",
	"prompts-get-simple":            notReference + "prompt test_simple_prompt",
	"prompts-get-with-args":         notReference + "prompt test_prompt_with_arguments",
	"prompts-get-embedded-resource": notReference + "prompt test_prompt_with_embedded_resource",
	"prompts-get-with-image":        notReference + "prompt test_prompt_with_image",
}

// serving is the line serve --http writes once it listens.
var serving = regexp.MustCompile(`serving MCP on (http://127\.0\.0\.1:\d+/)`)

// TestServerSuite runs the suite's server mode against voltmcp serve
// --http, the gateway as an MCP server. The suite sends no bearer token,
// so a reverse proxy on loopback adds serve's; it passes the Host and
// Origin headers on as they came, so the DNS rebinding scenario reaches
// serve's own check.
func TestServerSuite(t *testing.T) {
	node := npmpeers.Node(t)
	suite := npmpeers.Path(t, npmpeers.ConformanceEntry)
	ctx := testwait.Context(t)

	bin := filepath.Join(t.TempDir(), "voltmcp")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/voltmcp/voltmcp/cmd/voltmcp").CombinedOutput(); err != nil {
		t.Fatalf("go build voltmcp: %v\n%s", err, out)
	}
	home := t.TempDir()
	agentDir := filepath.Join(home, ".volt", "agent")
	serve := exec.CommandContext(ctx, bin, "serve", "--home", home, "--agent-dir", agentDir, "--http", "127.0.0.1:0", "--no-watch")
	serve.Dir = home
	serve.Env = append(os.Environ(), "HOME="+home, "VOLTMCP_HOME="+home)
	stderr, err := serve.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		serve.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- serve.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second): // testwait: a grace period before the kill, not a wait for an outcome
			serve.Process.Kill()
			<-done
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := serving.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	var target *url.URL
	select {
	case a := <-addr:
		target, _ = url.Parse(a)
	case <-ctx.Done():
		t.Fatal("voltmcp serve --http never said where it listens")
	}
	token, err := os.ReadFile(filepath.Join(agentDir, "http", "token"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
			r.Out.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		},
		FlushInterval: -1,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })

	outDir := t.TempDir()
	runCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, node, suite, "server", "--url", "http://"+ln.Addr().String()+"/", "--suite", "all", "-o", outDir)
	cmd.Dir = t.TempDir()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run() // exits 1 when any scenario fails, as some do
	if runCtx.Err() != nil {
		t.Fatalf("the suite did not finish in time:\n%s", out.String())
	}
	results := map[string]result{}
	for name, r := range readResults(t, outDir) {
		results[strings.TrimPrefix(name, "server-")] = r
	}
	if len(results) == 0 {
		t.Fatalf("the suite wrote no results (exit: %v):\n%s", err, out.String())
	}
	var names []string
	for name := range serverScenarios {
		names = append(names, name)
	}
	for name := range results {
		if _, ok := serverScenarios[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var report strings.Builder
	pass := 0
	for _, name := range names {
		r, ran := results[name]
		reason, known := serverScenarios[name]
		switch {
		case !known:
			t.Errorf("scenario %s is not in serverScenarios: add it (and to docs/conformance.md)", name)
		case !ran:
			t.Errorf("scenario %s did not run", name)
			continue
		case reason == "" && !r.passed():
			t.Errorf("scenario %s no longer passes: %s", name, r.why())
		case reason != "" && r.passed():
			t.Errorf("scenario %s passes now: mark it passing in serverScenarios and docs/conformance.md", name)
		}
		status := "FAIL"
		if r.passed() {
			status = "pass"
			pass++
		}
		report.WriteString("  " + status + "  " + name)
		if !r.passed() {
			report.WriteString("  (" + r.why() + ")")
		}
		report.WriteString("\n")
	}
	t.Logf("server scenarios: %d of %d pass\n%s", pass, len(names), report.String())
	if t.Failed() {
		t.Logf("suite output:\n%s", out.String())
	}
}
