package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/policies"
)

// TestPolicyFailureIsNotCached makes one tools decision fail (the policy
// set's deadline is a millisecond, as a loaded machine might make it),
// then lets the same decision be made again with a deadline it meets. The
// first call is denied for the failure; the second must be decided anew
// and allowed, not refused from a cache for the life of the process.
func TestPolicyFailureIsNotCached(t *testing.T) {
	t.Parallel()
	dir := writePolicy(t, "team.rego", `package voltmcp.tools

deny contains "no add" if input.tool.name == "add"

# Tens of milliseconds of work that never denies, so the short deadline
# below is missed for sure.
deny contains "never" if count([x | some x in numbers.range(1, 200000)]) < 0
`)
	load := func(timeout time.Duration) *policies.Policies {
		// The work takes more than the default memory budget: only the
		// deadline is to stop it here.
		p, err := policies.Load(context.Background(), &policies.Options{Dirs: []string{dir}, Timeout: timeout, MemoryBudget: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	healthy, failing := load(time.Minute), load(time.Millisecond)
	opts := workspace(t, map[string]server{"tools": stdio("behave", nil)}, nil)
	opts.Policies = healthy
	opts.Trust = func(cue.TrustInput) cue.TrustDecision { return cue.TrustDecision{Trusted: true, Reason: "test"} }
	e := start(t, opts)
	if err := e.Connect(testwait.Context(t), "tools"); err != nil {
		t.Fatal(err)
	}
	g := e.guard.Load()
	g.policies()
	use := func(p *policies.Policies) {
		g.pol.Store(p)
		g.decMu.Lock()
		clear(g.decs) // what discovery decided with the healthy set
		g.decMu.Unlock()
	}
	call := func() GatewayResult {
		return gw(t, e, GatewayInput{Action: "call", Server: "tools", Tool: "echo", Arguments: map[string]any{"text": "hi"}})
	}
	use(failing)
	if r := call(); !r.IsError || !strings.Contains(r.Text, "did not finish within") {
		t.Fatalf("a call past the policy deadline: %s; want a deny naming the deadline", r.Text)
	}
	g.pol.Store(healthy) // the cache is left as the failed call left it
	if r := call(); r.IsError {
		t.Fatalf("the same call with the policy back in time: %s; want it decided again and allowed", r.Text)
	}
}

// TestEmptyPolicyDirectoryFailsClosed configures a policy directory that
// holds no policy: the team meant to have policies there, so the engine
// refuses every call as for a broken policy, and its diagnostics and the
// refusal name the directory.
func TestEmptyPolicyDirectoryFailsClosed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opts := workspace(t, map[string]server{"tools": stdio("behave", nil)}, nil)
	opts.PolicyDirs = []string{dir}
	// Trust goes through the policies too: the project does not load,
	// and the diagnostics say why.
	e := start(t, opts)
	for _, s := range e.Servers() {
		if s.Status != StatusUntrusted || !strings.Contains(s.Reason, "holds no policy") {
			t.Fatalf("an empty policy directory trusted the project: %+v", s)
		}
	}
	found := false
	for _, d := range e.Diagnostics() {
		found = found || strings.Contains(d.Message, dir) && strings.Contains(d.Message, "holds no policy")
	}
	if !found {
		t.Errorf("no diagnostic names the empty policy directory: %v", e.Diagnostics())
	}
	e.Close()

	// With trust decided elsewhere, every call is refused, naming it.
	opts.Trust = func(cue.TrustInput) cue.TrustDecision { return cue.TrustDecision{Trusted: true, Reason: "test"} }
	e = start(t, opts)
	if err := e.Connect(testwait.Context(t), "tools"); err != nil {
		t.Fatal(err)
	}
	r := gw(t, e, GatewayInput{Action: "call", Server: "tools", Tool: "echo", Arguments: map[string]any{"text": "hi"}})
	if !r.IsError || !strings.Contains(r.Text, dir) || !strings.Contains(r.Text, "holds no policy") {
		t.Fatalf("a call with an empty policy directory: %s; want a deny naming it", r.Text)
	}
}

// TestRedactFailureIsNotKept builds the redactor while the team's redact
// policy misses its deadline, so the built-in patterns stand in, and then
// again after the retry time with the policy back in time: the team's
// pattern must apply from then on, not be lost for the life of the
// process.
func TestRedactFailureIsNotKept(t *testing.T) {
	t.Parallel()
	dir := writePolicy(t, "redact.rego", "package voltmcp.redact\n\n"+
		"# Tens of milliseconds of work, so the short deadline below is missed for sure.\n"+
		"secret_pattern contains `\\bACME-[0-9]{6}\\b` if count([x | some x in numbers.range(1, 200000)]) >= 0\n")
	load := func(timeout time.Duration) *policies.Policies {
		// The work takes more than the default memory budget: only the
		// deadline is to stop it here.
		p, err := policies.Load(context.Background(), &policies.Options{Dirs: []string{dir}, Timeout: timeout, MemoryBudget: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	healthy, failing := load(time.Minute), load(time.Millisecond)
	opts := workspace(t, map[string]server{"tools": stdio("behave", nil)}, nil)
	opts.Policies = failing
	opts.Trust = func(cue.TrustInput) cue.TrustDecision { return cue.TrustDecision{Trusted: true, Reason: "test"} }
	e := start(t, opts)
	g := e.guard.Load()
	const secret = "order ACME-123456 shipped"
	if got := g.redactor().Redact(secret); !strings.Contains(got, "ACME-123456") {
		t.Fatalf("with the redact policy past its deadline: %q; want the built-in patterns only", got)
	}
	g.pol.Store(healthy)
	g.redMu.Lock()
	g.redRetry = time.Now().Add(-time.Second)
	g.redMu.Unlock()
	if got := g.redactor().Redact(secret); strings.Contains(got, "ACME-123456") {
		t.Fatalf("with the redact policy back in time: %q; want the team's pattern applied", got)
	}
}
