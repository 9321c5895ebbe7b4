package engine

import (
	"context"
	"testing"

	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/wasm"
)

// TestBuiltinPluginCompilesOnFirstUse checks that a gateway whose
// ratings are stored with its cached listings prepares the built-in
// module without compiling it, answers searches without it, compiles it
// once a server starts, and rates tools with it as a gateway that
// compiled the module at start rates them.
func TestBuiltinPluginCompilesOnFirstUse(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"s": stdio(mcptest.ModeBehave, nil)}, nil)
	ctx := testwait.Context(t)
	first := start(t, opts)
	if err := first.Connect(ctx, "s"); err != nil { // lists, rates and stores the ratings
		t.Fatal(err)
	}
	first.Close()

	e := start(t, opts)
	g := e.guard.Load()
	<-g.plugReady
	builtin := func() *wasm.Module {
		for _, m := range g.chain.Classifiers {
			if m.Name() == wasm.BuiltinName {
				return m
			}
		}
		t.Fatal("no built-in module in the chain")
		return nil
	}()
	if builtin.Compiled() {
		t.Fatal("the built-in module compiled while the gateway prepared")
	}
	if got, err := e.Search(ctx, "echo", "", 0); err != nil || len(got) == 0 {
		t.Fatalf("search: %d matches, %v", len(got), err)
	}
	if builtin.Compiled() {
		t.Fatal("a search over stored ratings compiled the built-in module")
	}
	// A server that starts has the module compiled while it starts.
	if err := e.Connect(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the built-in module compiled once a server started", builtin.Compiled)
	eager, err := wasm.NewHost(ctx, &wasm.Options{CacheDir: opts.PluginCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer eager.Close(context.Background())
	ahead, err := eager.Builtin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ahead.Compile(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []Tool{
		{Name: "delete_everything", Description: "Deletes every record.", Hash: "h1"},
		{Name: "get_weather", Description: "Returns the weather.", Annotations: []byte(`{"readOnlyHint":true}`), Hash: "h2"},
		{Name: "frobnicate", Hash: "h3"},
	} {
		risk, why := e.risk(ctx, "s", tool)
		c, err := ahead.Classify(ctx, wasm.ClassifyInput{Server: "s", Tool: tool.Name, Description: tool.Description, Annotations: tool.Annotations})
		if err != nil {
			t.Fatal(err)
		}
		if string(risk) != c.Risk || why == "" {
			t.Errorf("%s: rated %s (%s) on first use; %s by the module compiled ahead", tool.Name, risk, why, c.Risk)
		}
	}
	if !builtin.Compiled() {
		t.Error("the built-in module is not compiled after rating tools")
	}
}
