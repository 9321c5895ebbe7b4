package wasm_test

import (
	"context"
	"fmt"
	"log"

	"github.com/voltmcp/voltmcp/wasm"
)

// The built-in module classifies a tool from its name, and from its
// annotations where they raise the risk or, when the server's hints are
// trusted, where the name says nothing destructive.
func ExampleHost_Builtin() {
	ctx := context.Background()
	h, err := wasm.NewHost(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close(ctx)
	m, err := h.Builtin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	c, err := m.Classify(ctx, wasm.ClassifyInput{Server: "github", Tool: "delete_repository"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Risk, "-", c.Reason)
	c, _ = m.Classify(ctx, wasm.ClassifyInput{Server: "github", Tool: "repo_info",
		Annotations: []byte(`{"readOnlyHint":true}`), TrustToolHints: true})
	fmt.Println(c.Risk, "-", c.Reason)
	c, _ = m.Classify(ctx, wasm.ClassifyInput{Server: "x", Tool: "frobnicate"})
	fmt.Println(c.Risk)
	// Output:
	// destructive - name has destructive verb "delete"
	// read - annotation readOnlyHint=true (tool hints trusted)
	// unknown
}

// A Chain shapes with each shaper in turn and then always applies the hard
// cap.
func ExampleChain_Shape() {
	ctx := context.Background()
	h, err := wasm.NewHost(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close(ctx)
	builtin, err := h.Builtin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	chain := &wasm.Chain{Shapers: []*wasm.Module{builtin}}
	out := chain.Shape(ctx, wasm.ShapeInput{
		Server:  "shell",
		Tool:    "run",
		Content: []wasm.Content{{Type: "text", Text: "\x1b[31mred\x1b[0m\u200b alert\nline 2\nline 3"}},
		Limits:  wasm.Limits{MaxLines: 2},
	})
	fmt.Printf("%q\n", out.Content[0].Text)
	for _, n := range out.Notes {
		fmt.Println(n)
	}
	// Output:
	// "red alert\nline 2"
	// stripped 2 ANSI sequences
	// stripped 1 invisible character
	// cut to the output cap (2 lines)
}

// Cap cuts text on line and UTF-8 boundaries.
func ExampleCap() {
	out, cut := wasm.Cap([]wasm.Content{{Type: "text", Text: "héllo wörld"}}, wasm.Limits{MaxBytes: 8})
	fmt.Printf("%q %v\n", out[0].Text, cut)
	// Output:
	// "héllo w" true
}
