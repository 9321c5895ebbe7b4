package policies

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// allocated returns the bytes the process has allocated on the heap so
// far.
func allocated() int64 {
	s := []metrics.Sample{{Name: allocsMetric}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// chain returns a Rego body that starts from v0 := start and makes steps
// more values, each v(i) := step with %[1]s standing for v(i-1); the last
// is vN.
func chain(start, step string, steps int) (string, string) {
	var b strings.Builder
	fmt.Fprintf(&b, "\tv0 := %s\n", start)
	for i := 1; i <= steps; i++ {
		fmt.Fprintf(&b, "\tv%d := %s\n", i, fmt.Sprintf(step, fmt.Sprintf("v%d", i-1)))
	}
	return b.String(), fmt.Sprintf("v%d", steps)
}

// bombs are policies that try to allocate hundreds of MiB, each of a
// different shape: growth by one builtin call at a time, growth in a
// single call, and growth by many small steps of a comprehension.
func bombs() map[string]string {
	deny := func(body, last string) string {
		return "package voltmcp.tools\n\ndeny contains msg if {\n" + body + "\tmsg := sprintf(\"%d\", [count(" + last + ")])\n}\n"
	}
	kib := `"` + strings.Repeat("a", 1024) + `"`
	concat, concatLast := chain(kib, `concat("", [%[1]s, %[1]s])`, 18)
	replace, replaceLast := chain(kib, `strings.replace_n({"a": "aa"}, %[1]s)`, 18)
	array, arrayLast := chain(`[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]`, `array.concat(%[1]s, %[1]s)`, 22)
	// Go prints no width above a million; 300 verbs of just under that.
	sprintf, sprintfLast := chain(`numbers.range(1, 300)`, `sprintf("`+strings.Repeat("%%0999999d", 300)+`", %[1]s)`, 1)
	kib16 := `"` + strings.Repeat("a", 16<<10) + `"`
	manyRefs, manyRefsLast := chain(`numbers.range(1, 16384)`, `concat("", [`+kib16+` | some _ in %[1]s])`, 1)
	rangeBomb, rangeLast := chain(`10000000`, `numbers.range(1, %[1]s)`, 1)
	compr, comprLast := chain(`numbers.range(1, 1500)`, `[sprintf("%%d-%%d", [i, j]) | some i in %[1]s; some j in %[1]s]`, 1)
	return map[string]string{
		"concat doubling":            deny(concat, concatLast),
		"replace_n doubling":         deny(replace, replaceLast),
		"array.concat doubling":      deny(array, arrayLast),
		"sprintf width":              deny(sprintf, sprintfLast),
		"concat of one string often": deny(manyRefs, manyRefsLast),
		"numbers.range":              deny(rangeBomb, rangeLast),
		"comprehension over ranges":  deny(compr, comprLast),
	}
}

// TestMemoryBombFailsClosed evaluates each bomb: the decision is a
// deny whose reason names the memory budget and the decision, its error
// is a MemoryBudgetError, and the evaluation allocated no more than a
// bounded multiple of the budget. Without the budget each would allocate
// hundreds of MiB and return the policy's own deny.
func TestMemoryBombFailsClosed(t *testing.T) {
	// Not parallel: the allocation count is the process's.
	for name, src := range bombs() {
		t.Run(name, func(t *testing.T) {
			dir, _ := writePolicy(t, "team.rego", src)
			// A long deadline: only the budget may stop the bomb.
			p, err := Load(context.Background(), &Options{Dirs: []string{dir}, Timeout: 5 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			before := allocated()
			d := p.Tools(context.Background(), githubTool())
			grew := allocated() - before
			if d.Allowed || d.Exposed {
				t.Fatalf("decision %+v; want a deny", d)
			}
			var be *MemoryBudgetError
			if !errors.As(d.Err, &be) || be.Budget != DefaultMemoryBudget {
				t.Fatalf("error %v; want a MemoryBudgetError of the default budget", d.Err)
			}
			if len(d.Reasons) != 1 || !strings.Contains(d.Reasons[0].Message, "memory budget of 16.0 MiB") ||
				!strings.Contains(d.Reasons[0].Message, "data.voltmcp.tools.decision") {
				t.Fatalf("reasons %v; want one naming the memory budget and the decision", d.Reasons)
			}
			if be.Builtin != "" && !strings.HasSuffix(d.Reasons[0].File, "team.rego") {
				t.Fatalf("reason %+v; want the refused call's file", d.Reasons[0])
			}
			// The budget, then at most one step past it: a sized builtin
			// is refused before it makes more than what is left, and any
			// other step makes at most a few times what the evaluation
			// already holds (itself under the budget), heapStride steps at
			// most before the watcher sees it. Four budgets leave room for
			// the decision's own work and the test's.
			if limit := int64(4 * DefaultMemoryBudget); grew > limit {
				t.Fatalf("the evaluation allocated %s; want at most %s", mib(grew), mib(limit))
			}
			t.Logf("%s: %s, allocated %s", name, d.Reasons[0].Message, mib(grew))
		})
	}
}

// TestMemoryBudgetOption sets a budget larger than what a policy needs
// and one smaller: the first decides, the second fails closed, for the
// same policy. It runs alone (not parallel): the budget counts what the
// process allocates during an evaluation, and it asks for no deadline
// but the test's, so that neither another test's work nor a slow machine
// decides it.
func TestMemoryBudgetOption(t *testing.T) {
	dir, _ := writePolicy(t, "team.rego", "package voltmcp.tools\n\ndeny contains \"big\" if count(concat(\"\", [\"x\" | some _ in numbers.range(1, 20000)])) > 1\n")
	for _, tc := range []struct {
		budget int64
		closed bool
	}{{DefaultMemoryBudget, false}, {64 << 10, true}} {
		p, err := Load(context.Background(), &Options{Dirs: []string{dir}, MemoryBudget: tc.budget, DisableMemo: true, Timeout: testwait.Patience})
		if err != nil {
			t.Fatal(err)
		}
		d := p.Tools(context.Background(), githubTool())
		var be *MemoryBudgetError
		if got := errors.As(d.Err, &be); got != tc.closed || d.Allowed {
			t.Fatalf("budget %d: decision %+v; want a deny, by the budget: %v", tc.budget, d, tc.closed)
		}
		if !tc.closed && (len(d.Reasons) != 1 || d.Reasons[0].Message != "big") {
			t.Fatalf("budget %d: reasons %v; want the policy's own", tc.budget, d.Reasons)
		}
	}
}

// TestMemoryBombInPolicyTests runs a policy test that builds a string of
// 256 MiB in one call: the test errors, naming the budget, and the run
// allocates a bounded amount.
func TestMemoryBombInPolicyTests(t *testing.T) {
	src := "package voltmcp.tools_test\n\ntest_bomb if count(strings.replace_n({\"a\": \"" + strings.Repeat("b", 1024) +
		"\"}, concat(\"\", [\"a\" | some _ in numbers.range(1, 262144)]))) > 0\n"
	dir, _ := writePolicy(t, "bomb_test.rego", src)
	before := allocated()
	rs, err := RunTests(context.Background(), &TestOptions{Dirs: []string{dir}, Filter: "test_bomb"})
	grew := allocated() - before
	if err != nil {
		t.Fatal(err)
	}
	var bomb *TestResult
	for i := range rs.Tests {
		if rs.Tests[i].Name == "test_bomb" {
			bomb = &rs.Tests[i]
		}
	}
	if bomb == nil || bomb.Passed() || !strings.Contains(bomb.Err, "memory budget") {
		t.Fatalf("results %+v; want test_bomb to error on the memory budget", rs.Tests)
	}
	if limit := int64(8 * DefaultMemoryBudget); grew > limit {
		t.Fatalf("the test run allocated %s; want at most %s", mib(grew), mib(limit))
	}
}
