package wasm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/wasm"
)

func builtin(t testing.TB) *wasm.Module {
	t.Helper()
	h, _ := newHost(t, wasm.Options{})
	m, err := h.Builtin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != wasm.BuiltinName || !m.CanClassify() || !m.CanShape() {
		t.Fatalf("built-in: %s classify %v shape %v", m.Name(), m.CanClassify(), m.CanShape())
	}
	return m
}

func TestBuiltinClassify(t *testing.T) {
	t.Parallel()
	m := builtin(t)
	ro := json.RawMessage(`{"readOnlyHint":true}`)
	tests := []struct {
		in           wasm.ClassifyInput
		risk, reason string
	}{
		// A hint never lowers a destructive name, trusted or not.
		{wasm.ClassifyInput{Tool: "delete_all", Annotations: ro, TrustToolHints: true}, "destructive", `name has destructive verb "delete"; the server's annotation readOnlyHint=true does not lower it`},
		{wasm.ClassifyInput{Tool: "delete_all", Annotations: ro}, "destructive", `name has destructive verb "delete"`},
		{wasm.ClassifyInput{Tool: "records", Description: "Removes records.", Annotations: ro, TrustToolHints: true}, "destructive", "does not lower it"},
		// Untrusted, a hint that would lower the rating is evidence only.
		{wasm.ClassifyInput{Tool: "frobnicate", Annotations: ro}, "unknown", "the server claims read (annotation readOnlyHint=true), but its tool hints are not trusted"},
		{wasm.ClassifyInput{Tool: "update_post", Annotations: ro}, "write", `name has write verb "update"; the server claims read`},
		{wasm.ClassifyInput{Tool: "frobnicate", Annotations: json.RawMessage(`{"destructiveHint":false}`)}, "unknown", "not trusted"},
		// A hint that raises the rating counts, trusted or not.
		{wasm.ClassifyInput{Tool: "frobnicate", Annotations: json.RawMessage(`{"destructiveHint":true}`)}, "destructive", "annotation destructiveHint=true (the server says so"},
		{wasm.ClassifyInput{Tool: "get_x", Annotations: json.RawMessage(`{"readOnlyHint":false}`)}, "destructive", "destructiveHint unset"},
		{wasm.ClassifyInput{Tool: "get_x", Annotations: json.RawMessage(`{"readOnlyHint":false,"destructiveHint":false}`)}, "write", `the server says so; name has read verb "get"`},
		{wasm.ClassifyInput{Tool: "get_x", Annotations: ro}, "read", "agrees"},
		// Trusted, a hint decides below destructive.
		{wasm.ClassifyInput{Tool: "frobnicate", Annotations: ro, TrustToolHints: true}, "read", "annotation readOnlyHint=true (tool hints trusted)"},
		{wasm.ClassifyInput{Tool: "update_post", Annotations: ro, TrustToolHints: true}, "read", `tool hints trusted; name has write verb "update"`},
		{wasm.ClassifyInput{Tool: "x", Annotations: json.RawMessage(`{"destructiveHint":true}`), TrustToolHints: true}, "destructive", "annotation destructiveHint=true"},
		{wasm.ClassifyInput{Tool: "x", Annotations: json.RawMessage(`{"readOnlyHint":false}`), TrustToolHints: true}, "destructive", "destructiveHint unset"},
		{wasm.ClassifyInput{Tool: "x", Annotations: json.RawMessage(`{"readOnlyHint":false,"destructiveHint":false}`), TrustToolHints: true}, "write", "readOnlyHint=false, destructiveHint=false"},
		{wasm.ClassifyInput{Tool: "get_x", Annotations: json.RawMessage(`{"idempotentHint":true}`), TrustToolHints: true}, "read", `read verb "get"`},
		// Names, in their many spellings.
		{wasm.ClassifyInput{Tool: "dropTable"}, "destructive", `"drop"`},
		{wasm.ClassifyInput{Tool: "repo-purge"}, "destructive", `"purge"`},
		{wasm.ClassifyInput{Tool: "kill_process"}, "destructive", `"kill"`},
		{wasm.ClassifyInput{Tool: "github_create_issue"}, "write", `write verb "create"`},
		{wasm.ClassifyInput{Tool: "sendMessage"}, "write", `"send"`},
		{wasm.ClassifyInput{Tool: "rename_file"}, "write", `"rename"`},
		{wasm.ClassifyInput{Tool: "list_posts"}, "read", `read verb "list"`},
		{wasm.ClassifyInput{Tool: "update_post"}, "write", `"update"`},
		{wasm.ClassifyInput{Tool: "searchCode"}, "read", `"search"`},
		{wasm.ClassifyInput{Tool: "describe_table"}, "read", `"describe"`},
		{wasm.ClassifyInput{Tool: "x", Title: "Fetch URL"}, "read", `"fetch"`},
		// Schema flags.
		{wasm.ClassifyInput{Tool: "git_push", InputSchema: json.RawMessage(`{"type":"object","properties":{"force":{"type":"boolean"}}}`)}, "destructive", `"force" property`},
		{wasm.ClassifyInput{Tool: "apply", InputSchema: json.RawMessage(`{"properties":{"Confirm":{}}}`)}, "destructive", `"Confirm" property`},
		// Descriptions, first word only.
		{wasm.ClassifyInput{Tool: "repos", Description: "Deletes a repository."}, "destructive", `description starts with destructive verb "delete"`},
		{wasm.ClassifyInput{Tool: "repos", Description: "Lists repositories; never deletes."}, "read", `description starts with read verb "list"`},
		// Nothing known: never read.
		{wasm.ClassifyInput{Tool: "frobnicate", Description: "Does the thing."}, "unknown", "no evidence"},
		{wasm.ClassifyInput{Tool: "settings"}, "unknown", "hints not trusted"},
		{wasm.ClassifyInput{}, "unknown", "no evidence"},
	}
	for _, tt := range tests {
		t.Run(tt.in.Tool+"/"+tt.in.Title+tt.in.Description, func(t *testing.T) {
			c, err := m.Classify(context.Background(), tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if c.Risk != tt.risk || !strings.Contains(c.Reason, tt.reason) {
				t.Errorf("got %s (%s); want %s with reason containing %q", c.Risk, c.Reason, tt.risk, tt.reason)
			}
		})
	}
}

func TestBuiltinShape(t *testing.T) {
	t.Parallel()
	m := builtin(t)
	var bigArray []string
	for i := range 500 {
		bigArray = append(bigArray, fmt.Sprintf(`{"id":%d,"name":"item %d"}`, i, i))
	}
	tests := []struct {
		name   string
		text   string
		limits wasm.Limits
		want   string
		notes  []string
	}{
		{"clean text", "hello\n\tworld", wasm.Limits{}, "hello\n\tworld", nil},
		{"ansi", "\x1b[1;31mred\x1b[0m \x1b]0;title\x07ok \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \u009b2Kdone", wasm.Limits{}, "red ok link done",
			[]string{"stripped 6 ANSI sequences"}},
		{"controls", "a\x00b\x07c\u0085d\x7fe\r\nf\rg", wasm.Limits{}, "abcde\nf\ng", []string{"stripped 4 control characters"}},
		{"invisible", "pay\u200bpal \u202eevil\u202c \u2066x\u2069 \ufeffbom \U000E0041\U000E0042tags", wasm.Limits{}, "paypal evil x bom tags",
			[]string{"stripped 8 invisible characters"}},
		{"whitespace", "\n\na   \n\n\n\nb" + strings.Repeat(" ", 40) + "c\n    indented\n\n", wasm.Limits{}, "a\n\nb c\n    indented",
			[]string{"collapsed 2 whitespace runs"}},
		{"json array", "[" + strings.Join(bigArray, ",\n") + "]", wasm.Limits{MaxBytes: 1000}, "JSON array of 500 items; the first 16 follow:\n" + strings.Join(bigArray[:16], "\n"),
			[]string{"summarized a JSON array of 500 items (16 shown)"}},
		{"json array by lines", "[" + strings.Join(bigArray[:10], ",\n") + "]", wasm.Limits{MaxLines: 6}, "JSON array of 10 items; the first 2 follow:\n" + strings.Join(bigArray[:2], "\n"),
			[]string{"summarized a JSON array of 10 items (2 shown)"}},
		{"small array untouched", `[1, 2, 3]`, wasm.Limits{MaxBytes: 100}, `[1, 2, 3]`, nil},
		{"not json", "[error] something", wasm.Limits{MaxBytes: 5}, "[error] something", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := wasm.ShapeInput{Server: "s", Tool: "t", Risk: "read", Limits: tt.limits,
				Content: []wasm.Content{{Type: "image", MIMEType: "image/png", Size: 3}, {Type: "text", Text: tt.text}}}
			out, err := m.Shape(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Content) != 2 || out.Content[0] != in.Content[0] {
				t.Fatalf("content %+v", out.Content)
			}
			if got := out.Content[1].Text; got != tt.want {
				t.Errorf("text\n got %q\nwant %q", got, tt.want)
			}
			if strings.Join(out.Notes, "|") != strings.Join(tt.notes, "|") {
				t.Errorf("notes %q; want %q", out.Notes, tt.notes)
			}
		})
	}
}

// TestBuiltinReproducible rebuilds the built-in module the way go generate
// does and compares it with the committed bytes.
func TestBuiltinReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("rebuilding the built-in module takes a while")
	}
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go toolchain on PATH: cannot rebuild the built-in module")
	}
	env := append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if out, err := exec.Command(goBin, "tool", "dist", "list").Output(); err != nil || !bytes.Contains(out, []byte("wasip1/wasm")) {
		t.Skipf("the go toolchain cannot target wasip1/wasm (%v)", err)
	}
	out := filepath.Join(t.TempDir(), "builtin.wasm")
	// Keep in step with the go:generate line in builtin.go.
	cmd := exec.Command(goBin, "build", "-buildmode=c-shared", "-trimpath", "-buildvcs=false", "-ldflags=-buildid=", "-o", out, "./builtin/guest")
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join("builtin", "builtin.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, committed) {
		t.Fatalf("wasm/builtin/builtin.wasm (%d bytes) is not what wasm/builtin/guest builds to (%d bytes): run 'go generate ./wasm/...' and commit the result", len(committed), len(got))
	}
}

// TestBuiltinCompilesOnFirstCall checks that the built-in module compiles
// on its first call, whichever export that call runs, and then answers
// as the module compiled ahead of its calls answers.
func TestBuiltinCompilesOnFirstCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eager := builtin(t)
	if err := eager.Compile(ctx); err != nil {
		t.Fatal(err)
	}
	classify := wasm.ClassifyInput{Server: "s", Tool: "delete_repo", Description: "Deletes a repository.", Annotations: json.RawMessage(`{"readOnlyHint":true}`)}
	shape := wasm.ShapeInput{Server: "s", Tool: "t", Content: []wasm.Content{{Type: "text", Text: "hello\x1b[31m world"}}}
	for _, first := range []string{"classify", "shape"} {
		t.Run(first, func(t *testing.T) {
			t.Parallel()
			lazy := builtin(t)
			if lazy.Compiled() {
				t.Fatal("the built-in module compiled before its first call")
			}
			var got, want any
			var gerr, werr error
			if first == "classify" {
				got, gerr = lazy.Classify(ctx, classify)
				want, werr = eager.Classify(ctx, classify)
			} else {
				got, gerr = lazy.Shape(ctx, shape)
				want, werr = eager.Shape(ctx, shape)
			}
			if gerr != nil || werr != nil {
				t.Fatalf("lazy: %v; eager: %v", gerr, werr)
			}
			if !lazy.Compiled() {
				t.Fatal("the built-in module is not compiled after its first call")
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) || len(g) < 10 {
				t.Errorf("compiled on its first call: %s; compiled ahead: %s", g, w)
			}
		})
	}
}
