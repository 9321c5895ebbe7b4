package wasm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/wasm"
)

func TestChainClassifyOrder(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t, wasm.Options{MemoryPages: 64})
	ctx := context.Background()
	unknown := load(t, h, "defers", abiModule(`{"risk":"unknown","reason":"not mine"}`, nil))
	write := load(t, h, "writer", abiModule(`{"risk":"write","reason":"house rule"}`, nil))
	read := load(t, h, "reader", abiModule(`{"risk":"read","reason":"other rule"}`, nil))
	trap := load(t, h, "trapper", abiModule(goodResult, bodyTrap))
	shaper := load(t, h, "shaper-only", abiModule(goodResult, nil, without(wasm.ExportClassify)))
	in := wasm.ClassifyInput{Tool: "t"}
	tests := []struct {
		name  string
		chain wasm.Chain
		want  wasm.Classification
	}{
		{"empty", wasm.Chain{}, wasm.Classification{Risk: "unknown", Reason: "no classifier"}},
		{"first known wins", wasm.Chain{Classifiers: []*wasm.Module{unknown, write, read}}, wasm.Classification{Risk: "write", Reason: "house rule", Module: "writer"}},
		{"fault skipped", wasm.Chain{Classifiers: []*wasm.Module{trap, shaper, read}}, wasm.Classification{Risk: "read", Reason: "other rule", Module: "reader", Faulted: true}},
		{"all unknown", wasm.Chain{Classifiers: []*wasm.Module{trap, unknown}}, wasm.Classification{Risk: "unknown", Reason: "not mine", Module: "defers", Faulted: true}},
		{"all faulted", wasm.Chain{Classifiers: []*wasm.Module{trap, trap}}, wasm.Classification{Risk: "unknown", Reason: "plugin fault: trapper trap; trapper trap", Faulted: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.chain.Classify(ctx, in); got != tt.want {
				t.Errorf("got %+v; want %+v", got, tt.want)
			}
		})
	}
}

// TestChainCapsWhateverShapersReturn checks that the cap applies to a
// shaper that makes output bigger.
func TestChainCapsWhateverShapersReturn(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t, wasm.Options{MemoryPages: 64})
	bloat := load(t, h, "bloat", abiModule(`{"content":[{"type":"text","text":"AAAAAAAAAA\nBBBBBBBBBB\nCCCCCCCCCC"}],"notes":["bloated"]}`, nil))
	chain := &wasm.Chain{Shapers: []*wasm.Module{bloat}}
	out := chain.Shape(context.Background(), wasm.ShapeInput{Content: text("x"), Limits: wasm.Limits{MaxBytes: 15}})
	if len(out.Content) != 1 || out.Content[0].Text != "AAAAAAAAAA" {
		t.Errorf("content %+v", out.Content)
	}
	if len(out.Notes) != 2 || out.Notes[0] != "bloated" {
		t.Errorf("notes %q", out.Notes)
	}
}

// TestChainCutsInputBeforeShaping checks that shapers never see more than
// ShapeInputFactor times the cap, so padding cannot outrun their deadline.
func TestChainCutsInputBeforeShaping(t *testing.T) {
	t.Parallel()
	m := builtin(t)
	var lines []string
	for i := range 100 {
		lines = append(lines, fmt.Sprintf("\x1b[1mline %d\x1b[0m", i))
	}
	chain := &wasm.Chain{Shapers: []*wasm.Module{m}}
	out := chain.Shape(context.Background(), wasm.ShapeInput{Content: text(strings.Join(lines, "\n")), Limits: wasm.Limits{MaxLines: 3}})
	if len(out.Content) != 1 || out.Content[0].Text != "line 0\nline 1\nline 2" {
		t.Errorf("content %+v", out.Content)
	}
	want := []string{"cut the input to 4 times the output cap before shaping", "stripped 24 ANSI sequences", "cut to the output cap (3 lines)"}
	if strings.Join(out.Notes, "|") != strings.Join(want, "|") {
		t.Errorf("notes %q; want %q", out.Notes, want)
	}
}
