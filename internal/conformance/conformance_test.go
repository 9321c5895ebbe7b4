package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/npmpeers"
)

// clientScenarios is what the "all" client suite of conformance 0.1.16
// holds (the "core" suite, then the backcompat, draft and extensions
// suites), and what voltmcp scores on each: "" for a pass, else why it
// fails. docs/conformance.md shows the same table; change both together.
// The test fails when a scenario that passes here fails, and also when
// one listed as failing starts to pass, so that the list and the docs
// stay true.
var clientScenarios = map[string]string{
	"initialize":                          "",
	"tools_call":                          "",
	"elicitation-sep1034-client-defaults": "",
	"sse-retry":                           "",
	"auth/metadata-default":               "",
	"auth/metadata-var1":                  "",
	"auth/metadata-var2":                  "",
	"auth/metadata-var3":                  "",
	"auth/basic-cimd":                     "",
	"auth/scope-from-www-authenticate":    "",
	"auth/scope-from-scopes-supported":    "",
	"auth/scope-omitted-when-undefined":   "",
	"auth/scope-step-up":                  "",
	"auth/scope-retry-limit":              "",
	"auth/token-endpoint-auth-basic":      "",
	"auth/token-endpoint-auth-post":       "",
	"auth/token-endpoint-auth-none":       "",
	"auth/pre-registration":               "",
	// backcompat: the 2025-03-26 authorization spec.
	"auth/2025-03-26-oauth-endpoint-fallback": "",
	"auth/2025-03-26-oauth-metadata-backcompat": "refused by design: the authorization server metadata at the root names " +
		"the issuer <root>/oauth, and RFC 8414 section 3.3 (a rule voltmcp keeps for every OAuth flow) wants the issuer the metadata was fetched for",
	// draft.
	"auth/resource-mismatch":            "",
	"auth/offline-access-scope":         "",
	"auth/offline-access-not-supported": "",
	// extensions voltmcp does not implement.
	"auth/client-credentials-jwt":         "not implemented: the client credentials grant (an extension) with a private_key_jwt client",
	"auth/client-credentials-basic":       "not implemented: the client credentials grant (an extension) with client_secret_basic",
	"auth/cross-app-access-complete-flow": "not implemented: cross-app access (an extension: token exchange at an identity provider, then a JWT bearer grant)",
}

// clientErrorAllowed lists the scenarios whose definition in the suite
// sets allowClientError: the client is expected to give up, so its exit
// status (and the adapter's failure line) does not count, as in the
// suite's own verdict.
var clientErrorAllowed = map[string]bool{
	// The server answers 403 insufficient_scope forever: a client that
	// stops after a few authorizations passes.
	"auth/scope-retry-limit": true,
	// The protected resource metadata names another resource: a client
	// that does not go on to authorize passes.
	"auth/resource-mismatch": true,
}

// adapterFailure starts the line the adapter writes to stderr when it
// fails (internal/conformance/client).
const adapterFailure = "voltmcp conformance client: "

// check is the part of one entry of a scenario's checks.json the test
// reads.
type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO, …
	ErrorMessage string `json:"errorMessage"`
}

// result is the outcome of one scenario.
type result struct {
	checks  []check
	adapter string // the adapter's failure line, if it failed
	// allowClientError is set for a scenario in clientErrorAllowed.
	allowClientError bool
}

// passed applies the suite's own rule: no failed check, no warning, and
// the client exited 0 (unless the scenario allows a client error). A
// scenario with no passed check has not passed.
func (r result) passed() bool {
	ok := false
	for _, c := range r.checks {
		switch c.Status {
		case "FAILURE", "WARNING":
			return false
		case "SUCCESS":
			ok = true
		}
	}
	return ok && (r.adapter == "" || r.allowClientError)
}

// why summarizes a failure: the failed checks and the adapter's error.
func (r result) why() string {
	var parts []string
	for _, c := range r.checks {
		if c.Status != "FAILURE" && c.Status != "WARNING" {
			continue
		}
		s := strings.ToLower(c.Status) + " " + c.ID
		if c.ErrorMessage != "" {
			s += ": " + c.ErrorMessage
		}
		parts = append(parts, s)
	}
	if r.adapter != "" {
		parts = append(parts, "adapter: "+r.adapter)
	}
	return strings.Join(parts, "; ")
}

// stamp is the timestamp the suite appends to a result directory.
var stamp = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

func TestClientSuite(t *testing.T) {
	node := npmpeers.Node(t)
	suite := npmpeers.Path(t, npmpeers.ConformanceEntry)
	preload := npmpeers.LoopbackPreload(t)

	// The suite splits --command on spaces and runs it through a shell:
	// the adapter's path must need no quoting.
	bin := t.TempDir()
	adapter := filepath.Join(bin, "voltmcp-conformance-client")
	if strings.ContainsAny(adapter, " \t\n'\"\\$`;&|<>()*?[]#~!{}") {
		t.Fatalf("the temp dir %q holds characters the suite's shell would interpret; set TMPDIR to a plain path", bin)
	}
	build := exec.Command("go", "build", "-o", adapter, "./client")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./client: %v\n%s", err, out)
	}

	// run runs the suite (or one scenario of it) and reads its results.
	run := func(selector ...string) (map[string]result, string, error) {
		outDir := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		args := append([]string{suite, "client", "--command", adapter}, selector...)
		cmd := exec.CommandContext(ctx, node, append(args, "--timeout", "30000", "-o", outDir)...)
		cmd.Dir = t.TempDir()
		// The scenario servers listen on a port only: keep them on loopback.
		cmd.Env = append(os.Environ(), `NODE_OPTIONS=--require "`+preload+`"`)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err := cmd.Run() // exits 1 when any scenario fails, as some do
		t.Logf("conformance client %s: %v in %s", strings.Join(selector, " "), err, time.Since(start).Round(time.Millisecond))
		if ctx.Err() != nil {
			t.Fatalf("the suite did not finish in time:\n%s", out.String())
		}
		return readResults(t, outDir), out.String(), err
	}
	results, output, err := run("--suite", "all")
	if len(results) == 0 {
		t.Fatalf("the suite wrote no results (exit: %v):\n%s", err, output)
	}
	// The suite runs its scenarios in parallel, and some check timing
	// (sse-retry wants the reconnection within its retry delay). A
	// scenario that should pass but failed gets two more runs on its own
	// before it counts as a failure; a retry that passes is logged.
	for name, r := range results {
		if reason, known := clientScenarios[name]; !known || reason != "" || r.passed() {
			continue
		}
		for attempt := 1; attempt <= 2; attempt++ {
			again, _, _ := run("--scenario", name)
			if a, ok := again[name]; ok {
				if a.passed() {
					t.Logf("scenario %s failed in the full run (%s) and passed alone on retry %d", name, r.why(), attempt)
					results[name] = a
					break
				}
			}
		}
	}
	out := bytes.NewBufferString(output)
	var names []string
	for name := range clientScenarios {
		names = append(names, name)
	}
	for name := range results {
		if _, ok := clientScenarios[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var report strings.Builder
	pass := 0
	for _, name := range names {
		r, ran := results[name]
		reason, known := clientScenarios[name]
		switch {
		case !known:
			t.Errorf("scenario %s is not in clientScenarios: add it (and to docs/conformance.md)", name)
		case !ran:
			t.Errorf("scenario %s did not run", name)
			continue
		case reason == "" && !r.passed():
			t.Errorf("scenario %s no longer passes: %s", name, r.why())
		case reason != "" && r.passed():
			t.Errorf("scenario %s passes now: mark it passing in clientScenarios and docs/conformance.md", name)
		}
		status := "FAIL"
		if r.passed() {
			status = "pass"
			pass++
		}
		report.WriteString("  " + status + "  " + name)
		if !r.passed() {
			report.WriteString("  (" + r.why() + ")")
		} else if r.adapter != "" {
			report.WriteString("  (the client gave up, as the scenario allows: " + r.adapter + ")")
		}
		report.WriteString("\n")
	}
	t.Logf("client scenarios: %d of %d pass\n%s", pass, len(names), report.String())
	if t.Failed() {
		t.Logf("suite output:\n%s", out.String())
	}
}

// readResults reads every <scenario>-<timestamp>/checks.json under dir
// (auth scenarios nest: auth/<name>-<timestamp>).
func readResults(t *testing.T, dir string) map[string]result {
	t.Helper()
	results := map[string]result{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		rel, err := filepath.Rel(dir, filepath.Dir(path))
		if err != nil {
			return err
		}
		name := stamp.ReplaceAllString(filepath.ToSlash(rel), "")
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var r result
		if err := json.Unmarshal(data, &r.checks); err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		stderr, _ := os.ReadFile(filepath.Join(filepath.Dir(path), "stderr.txt"))
		for _, line := range strings.Split(string(stderr), "\n") {
			if rest, ok := strings.CutPrefix(line, adapterFailure); ok {
				r.adapter = rest
			}
		}
		r.allowClientError = clientErrorAllowed[name]
		results[name] = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return results
}
