package policies

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"runtime/metrics"
	"strings"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// DefaultMemoryBudget is the most memory one policy evaluation may
// allocate when Options.MemoryBudget is zero: twice the engine's default
// message cap (8 MiB), so that a policy, whatever it does, adds no more
// to the gateway's memory than two of the largest messages it reads. A
// decision of the default or example policies allocates well under
// 1 MiB.
const DefaultMemoryBudget = 16 << 20

// heapStride is how many evaluation steps pass between two readings of
// the heap: reading runtime/metrics costs about half a microsecond, so
// reading it at every step would double the cost of a decision. The
// builtins that can make a value larger than their operands are checked
// before each call (see sizedBuiltins), so the steps between two
// readings only grow memory by a bounded factor.
const heapStride = 32

// budgetPrefix is the name prefix of the sized builtins: a call of
// concat in a policy runs voltmcp_budget.concat, which checks the size of
// what concat would make before making it.
const budgetPrefix = "voltmcp_budget"

// MemoryBudgetError is the error of an evaluation stopped because it
// allocated, or was about to allocate, more than its memory budget.
type MemoryBudgetError struct {
	// Decision is the decision evaluated, e.g. data.voltmcp.tools.decision.
	Decision string
	// Budget is the limit in bytes.
	Budget int64
	// Builtin is the builtin refused before it ran ("" when the heap
	// watcher stopped the evaluation between two steps); File and Line
	// locate its call.
	Builtin string
	File    string
	Line    int
	// Bytes is what the evaluation had allocated, or, for a refused
	// builtin, what it would have had after the call.
	Bytes int64
}

func (e *MemoryBudgetError) Error() string {
	if e.Builtin != "" {
		return fmt.Sprintf("%s exceeded the policy memory budget of %s: %s at %s:%d would take it to %s or more",
			e.Decision, mib(e.Budget), e.Builtin, e.File, e.Line, mib(e.Bytes))
	}
	return fmt.Sprintf("%s exceeded the policy memory budget of %s: it allocated %s",
		e.Decision, mib(e.Budget), mib(e.Bytes))
}

// mib renders a byte count in MiB with one decimal.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// budget is the memory budget of one evaluation. It is the evaluation's
// topdown.Cancel, so OPA asks it at every step whether to stop, and the
// sized builtins reach it through their BuiltinContext. It stops the
// evaluation when its context is done or when the bytes the process
// allocated since the evaluation began exceed the limit. The count is the
// process's (Go has no per-goroutine count), so allocation elsewhere in
// the process during an evaluation counts against it: that can only make
// a decision fail closed, never allow more.
type budget struct {
	done    <-chan struct{}
	limit   int64
	start   int64
	steps   atomic.Uint32
	stopped atomic.Bool
	// over is set once, by the goroutine that found the budget exceeded.
	over atomic.Pointer[MemoryBudgetError]
	// sample is the runtime/metrics reading; only the evaluating
	// goroutine reads it.
	sample [1]metrics.Sample
}

// allocsMetric is the process's cumulative count of bytes allocated on
// the heap.
const allocsMetric = "/gc/heap/allocs:bytes"

func newBudget(ctx context.Context, limit int64) *budget {
	b := &budget{done: ctx.Done(), limit: limit}
	b.sample[0].Name = allocsMetric
	b.start = b.allocs()
	return b
}

// allocs reads the process's cumulative heap allocation.
func (b *budget) allocs() int64 {
	metrics.Read(b.sample[:])
	if b.sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(min(b.sample[0].Value.Uint64(), math.MaxInt64))
}

// used returns the bytes allocated since the evaluation began.
func (b *budget) used() int64 { return b.allocs() - b.start }

// Cancel implements topdown.Cancel.
func (b *budget) Cancel() { b.stopped.Store(true) }

// Cancelled implements topdown.Cancel: OPA calls it before every step.
func (b *budget) Cancelled() bool {
	if b.stopped.Load() {
		return true
	}
	select {
	case <-b.done:
		b.stopped.Store(true)
		return true
	default:
	}
	if b.steps.Add(1)%heapStride != 0 {
		return false
	}
	if u := b.used(); u > b.limit {
		b.exceed(&MemoryBudgetError{Budget: b.limit, Bytes: u})
		return true
	}
	return false
}

// exceed records why the budget stopped the evaluation and stops it.
func (b *budget) exceed(e *MemoryBudgetError) {
	b.over.CompareAndSwap(nil, e)
	b.stopped.Store(true)
}

// err returns the budget error for decision what, or nil when the budget
// was not exceeded.
func (b *budget) err(what string) error {
	e := b.over.Load()
	if e == nil {
		return nil
	}
	c := *e
	c.Decision = what
	return &c
}

// errBudget is what a refused sized builtin returns to OPA; evalQuery
// replaces it with the budget's MemoryBudgetError.
var errBudget = errors.New("policy memory budget exceeded")

// sizer estimates, from a builtin's operands, an upper bound of the bytes
// its result takes. It may stop counting once the count passes limit.
type sizer func(ops []*ast.Term, limit int64) int64

// sizedBuiltins are the builtins whose result can be larger than their
// operands by more than a small factor, with the bound of each. A policy's
// calls of them are rewritten to run through sized (see rewriteSized), so
// no single call can allocate past the budget. The others make a result
// at most a few times the size of operands the evaluation already holds,
// and the heap watcher stops the evaluation within heapStride steps.
var sizedBuiltins = map[string]sizer{
	"concat":                           sizeConcat,
	"strings.replace_n":                sizeReplaceN,
	"replace":                          sizeReplace,
	"regex.replace":                    sizeRegexReplace,
	"sprintf":                          sizeSprintf,
	"numbers.range":                    sizeRange,
	"numbers.range_step":               sizeRange,
	"array.concat":                     sizeOperands(1),
	"array.flatten":                    sizeOperands(1),
	"union":                            sizeOperands(1),
	"object.union":                     sizeOperands(1),
	"object.union_n":                   sizeOperands(1),
	"json.patch":                       sizeOperands(2),
	"json.marshal":                     sizeOperands(6),
	"json.marshal_with_options":        sizeMarshalIndent,
	"yaml.marshal":                     sizeOperands(6),
	"base64.encode":                    sizeOperands(2),
	"base64url.encode":                 sizeOperands(2),
	"base64url.encode_no_pad":          sizeOperands(2),
	"hex.encode":                       sizeOperands(2),
	"urlquery.encode":                  sizeOperands(3),
	"urlquery.encode_object":           sizeOperands(3),
	"split":                            sizePieces,
	"strings.split_n":                  sizePieces,
	"regex.split":                      sizePieces,
	"regex.find_n":                     sizePieces,
	"regex.find_all_string_submatch_n": sizePieces,
	"indexof_n":                        sizePieces,
	"strings.render_template":          sizeTemplate,
	"graph.reachable_paths":            sizePaths,
}

// sizedName is the name a call of builtin name is rewritten to.
func sizedName(name string) string { return budgetPrefix + "." + name }

// sizedFunctions returns the rego options that define the sized builtins
// for one prepared query.
func sizedFunctions() []func(*rego.Rego) {
	var opts []func(*rego.Rego)
	for _, b := range sizedTestBuiltins() {
		opts = append(opts, b.Func)
	}
	return opts
}

// sizedTestBuiltins returns the sized builtins for OPA's test runner.
func sizedTestBuiltins() []*tester.Builtin {
	out := make([]*tester.Builtin, 0, len(sizedBuiltins))
	for name, size := range sizedBuiltins {
		decl := ast.BuiltinMap[name]
		impl := topdown.GetBuiltin(name)
		if decl == nil || impl == nil {
			continue
		}
		if decl.Relation {
			// walk yields many results: it cannot be a rego.Function, and it
			// makes each of them one at a time, so the heap watcher sees it.
			continue
		}
		fn := &rego.Function{Name: sizedName(name), Decl: decl.Decl}
		out = append(out, &tester.Builtin{
			Decl: &ast.Builtin{Name: fn.Name, Decl: fn.Decl},
			Func: rego.FunctionDyn(fn, sized(name, size, impl)),
		})
	}
	return out
}

// sized returns the sized form of builtin impl: it refuses the call when
// the evaluation's allocation so far plus the estimate of the result
// exceeds the budget, and otherwise runs impl.
func sized(name string, size sizer, impl topdown.BuiltinFunc) rego.BuiltinDyn {
	return func(bctx rego.BuiltinContext, ops []*ast.Term) (*ast.Term, error) {
		// Outside a budgeted evaluation (OPA's test runner), each call
		// still has the default budget to itself.
		b, _ := bctx.Cancel.(*budget)
		limit, u := int64(DefaultMemoryBudget), int64(0)
		if b != nil {
			limit, u = b.limit, b.used()
		}
		if est := size(ops, limit-u); est > limit-u {
			e := &MemoryBudgetError{Decision: "the evaluation", Budget: limit, Builtin: name, Bytes: u + min(est, math.MaxInt64-u)}
			if bctx.Location != nil {
				e.File, e.Line = bctx.Location.File, bctx.Location.Row
			}
			if b == nil {
				return nil, e
			}
			b.exceed(e)
			return nil, errBudget
		}
		var out *ast.Term
		err := impl(bctx, ops, func(t *ast.Term) error { out = t; return nil })
		return out, err
	}
}

// sizedStage is the compiler stage of rewriteSized, run once the calls
// are type-checked against the builtins' declarations, which the sized
// forms share.
func sizedStage() (ast.StageID, ast.CompilerStageDefinition) {
	return ast.StageCheckDeprecatedBuiltins, ast.CompilerStageDefinition{
		Name: "voltmcp_budget_sized_builtins", MetricName: "voltmcp_budget_sized_builtins",
		Stage: func(c *ast.Compiler) *ast.Error { rewriteSized(c); return nil },
	}
}

// newCompiler returns a compiler for policies with capabilities caps:
// it rewrites the calls of sized builtins (see sizedBuiltins).
func newCompiler(caps *ast.Capabilities) *ast.Compiler {
	return ast.NewCompiler().WithCapabilities(caps).WithStageAfterID(sizedStage())
}

// rewriteSized makes every call of a sized builtin in the compiled
// modules call its sized form.
func rewriteSized(c *ast.Compiler) {
	for _, m := range c.Modules {
		ast.WalkExprs(m, func(x *ast.Expr) bool {
			if !x.IsCall() {
				return false
			}
			terms := x.Terms.([]*ast.Term)
			name := terms[0].Value.(ast.Ref).String()
			if _, ok := sizedBuiltins[name]; !ok {
				return false
			}
			op := ast.Ref{ast.VarTerm(budgetPrefix)}
			for _, part := range strings.Split(name, ".") {
				op = append(op, ast.StringTerm(part))
			}
			t := ast.NewTerm(op)
			t.Location = terms[0].Location
			terms[0] = t
			return false
		})
	}
}

// termOverhead is the bytes a term takes apart from its string data: the
// term, its value's header and the slot that holds it.
const termOverhead = 64

// termSize returns the bytes value v takes, counting a string as often as
// it appears (a value can hold the same string many times for the cost
// of one); it stops counting past limit.
func termSize(v ast.Value, limit int64) int64 {
	var n int64
	var walk func(v ast.Value) bool
	walk = func(v ast.Value) bool {
		n += termOverhead
		switch x := v.(type) {
		case ast.String:
			n += int64(len(x))
		case ast.Number:
			n += int64(len(x))
		case *ast.Array:
			for i := range x.Len() {
				if !walk(x.Elem(i).Value) {
					return false
				}
			}
		case ast.Object:
			stop := false
			x.Foreach(func(k, v *ast.Term) {
				if !stop && (!walk(k.Value) || !walk(v.Value)) {
					stop = true
				}
			})
			if stop {
				return false
			}
		case ast.Set:
			stop := false
			x.Foreach(func(t *ast.Term) {
				if !stop && !walk(t.Value) {
					stop = true
				}
			})
			if stop {
				return false
			}
		}
		return n <= limit
	}
	walk(v)
	return n
}

// opsSize is the sum of the sizes of the operands.
func opsSize(ops []*ast.Term, limit int64) int64 {
	var n int64
	for _, t := range ops {
		n += termSize(t.Value, limit-n)
		if n > limit {
			break
		}
	}
	return n
}

// sizeOperands bounds a result by factor times its operands.
func sizeOperands(factor int64) sizer {
	return func(ops []*ast.Term, limit int64) int64 {
		return factor * opsSize(ops, limit/factor+1)
	}
}

// sizeConcat bounds concat(delim, xs): every string of xs, and the
// delimiter between each two.
func sizeConcat(ops []*ast.Term, limit int64) int64 {
	if len(ops) < 2 {
		return 0
	}
	delim, _ := ops[0].Value.(ast.String)
	n := termSize(ops[1].Value, limit)
	count := int64(0)
	switch x := ops[1].Value.(type) {
	case *ast.Array:
		count = int64(x.Len())
	case ast.Set:
		count = int64(x.Len())
	}
	return n + count*int64(len(delim))
}

// stringOp returns operand i as a string, or "".
func stringOp(ops []*ast.Term, i int) string {
	if i < len(ops) {
		if s, ok := ops[i].Value.(ast.String); ok {
			return string(s)
		}
	}
	return ""
}

// replaced bounds s with each occurrence of old replaced by a string of
// newLen bytes.
func replaced(s, old string, newLen int64) int64 {
	n := int64(len(s))
	if grow := newLen - int64(len(old)); grow > 0 {
		n += int64(strings.Count(s, old)) * grow
	}
	return n
}

// sizeReplace bounds replace(s, old, new).
func sizeReplace(ops []*ast.Term, _ int64) int64 {
	return termOverhead + replaced(stringOp(ops, 0), stringOp(ops, 1), int64(len(stringOp(ops, 2))))
}

// sizeReplaceN bounds strings.replace_n(patterns, s): every pattern's
// growth, summed.
func sizeReplaceN(ops []*ast.Term, _ int64) int64 {
	if len(ops) < 2 {
		return 0
	}
	s := stringOp(ops, 1)
	n := int64(len(s)) + termOverhead
	if obj, ok := ops[0].Value.(ast.Object); ok {
		obj.Foreach(func(k, v *ast.Term) {
			old, _ := k.Value.(ast.String)
			repl, _ := v.Value.(ast.String)
			n += replaced(s, string(old), int64(len(repl))) - int64(len(s))
		})
	}
	return n
}

// sizeRegexReplace bounds regex.replace(s, pattern, value): a match can
// be empty, so up to len(s)+1 replacements, each of which can expand
// $1-style references to at most len(s) bytes.
func sizeRegexReplace(ops []*ast.Term, _ int64) int64 {
	s, repl := int64(len(stringOp(ops, 0))), int64(len(stringOp(ops, 2)))
	if strings.Contains(stringOp(ops, 2), "$") {
		repl *= s + 1
	}
	return termOverhead + s + (s+1)*repl
}

// sizeSprintf bounds sprintf(format, values): the format, the values
// (at most a few times their size when printed), and every width or
// precision written in the format or taken from the values by '*'.
func sizeSprintf(ops []*ast.Term, limit int64) int64 {
	format := stringOp(ops, 0)
	n := termOverhead + int64(len(format))
	if len(ops) > 1 {
		n += 4 * termSize(ops[1].Value, limit)
	}
	var digits int64
	for i := 0; i <= len(format); i++ {
		if i < len(format) && format[i] >= '0' && format[i] <= '9' {
			digits = min(digits*10+int64(format[i]-'0'), math.MaxInt32)
			continue
		}
		n += digits
		digits = 0
	}
	if strings.Contains(format, "*") && len(ops) > 1 {
		if arr, ok := ops[1].Value.(*ast.Array); ok {
			for i := range arr.Len() {
				if num, ok := arr.Elem(i).Value.(ast.Number); ok {
					if w, ok := num.Int64(); ok && w > 0 {
						n += min(w, math.MaxInt32)
					}
				}
			}
		}
	}
	return n
}

// sizeRange bounds numbers.range(a, b) and numbers.range_step(a, b, s):
// one term per number.
func sizeRange(ops []*ast.Term, _ int64) int64 {
	if len(ops) < 2 {
		return 0
	}
	a, aok := bigOf(ops[0].Value)
	b, bok := bigOf(ops[1].Value)
	if !aok || !bok {
		return 0
	}
	d := new(big.Int).Sub(b, a)
	d.Abs(d)
	if len(ops) > 2 {
		if s, ok := bigOf(ops[2].Value); ok && s.Sign() > 0 {
			d.Quo(d, s)
		}
	}
	d.Add(d, big.NewInt(1))
	if !d.IsInt64() || d.Int64() > math.MaxInt64/termOverhead {
		return math.MaxInt64
	}
	return d.Int64() * termOverhead
}

// bigOf returns an integer operand, or false for anything else.
func bigOf(v ast.Value) (*big.Int, bool) {
	n, ok := v.(ast.Number)
	if !ok {
		return nil, false
	}
	i, ok := new(big.Int).SetString(string(n), 10)
	return i, ok
}

// sizePieces bounds a builtin that cuts a string into pieces (split,
// regex.split, regex.find_n, indexof_n...): up to one term per byte of
// the string, and the bytes themselves.
func sizePieces(ops []*ast.Term, _ int64) int64 {
	var n int64
	for _, t := range ops {
		if s, ok := t.Value.(ast.String); ok {
			n = max(n, int64(len(s)))
		}
	}
	return termOverhead + n*(termOverhead+1)
}

// sizeMarshalIndent bounds json.marshal_with_options(x, opts): the value,
// with the prefix and the indent once per level on each of its lines.
func sizeMarshalIndent(ops []*ast.Term, limit int64) int64 {
	if len(ops) < 2 {
		return 0
	}
	n := 6 * termSize(ops[0].Value, limit)
	pad := int64(0)
	if obj, ok := ops[1].Value.(ast.Object); ok {
		for _, k := range []string{"prefix", "indent"} {
			if v := obj.Get(ast.StringTerm(k)); v != nil {
				if s, ok := v.Value.(ast.String); ok {
					pad += int64(len(s))
				}
			}
		}
	}
	if pad == 0 {
		return n
	}
	// Each term is a line at most, indented at most once per enclosing
	// term: n/termOverhead lines of at most n/termOverhead indents.
	lines := n/termOverhead + 1
	if lines > 0 && pad > math.MaxInt64/lines/lines {
		return math.MaxInt64
	}
	return n + lines*lines*pad
}

// sizeTemplate bounds strings.render_template(template, vars): a
// template prints every value at most once per action, and once more for
// each range it is nested in. A template that defines or calls templates
// can recurse and has no bound: it is refused.
func sizeTemplate(ops []*ast.Term, limit int64) int64 {
	tmpl := stringOp(ops, 0)
	for _, kw := range []string{"template", "define", "block"} {
		if strings.Contains(tmpl, kw) {
			return math.MaxInt64
		}
	}
	vars := opsSize(ops[1:], limit)
	n := (int64(strings.Count(tmpl, "{{")) + 1) * vars
	for range strings.Count(tmpl, "range") {
		if vars > 0 && n > math.MaxInt64/vars {
			return math.MaxInt64
		}
		n *= max(1, vars/termOverhead)
	}
	return termOverhead + int64(len(tmpl)) + n
}

// sizePaths bounds graph.reachable_paths(graph, roots): from each root, a
// path chooses one edge at each node, so there are at most the product of
// the nodes' out-degrees of them, each at most as long as the graph has
// nodes.
func sizePaths(ops []*ast.Term, _ int64) int64 {
	if len(ops) < 2 {
		return 0
	}
	g, ok := ops[0].Value.(ast.Object)
	if !ok {
		return 0
	}
	paths := big.NewInt(1)
	g.Foreach(func(_, v *ast.Term) {
		deg := int64(1)
		switch x := v.Value.(type) {
		case *ast.Array:
			deg = max(deg, int64(x.Len()))
		case ast.Set:
			deg = max(deg, int64(x.Len()))
		}
		paths.Mul(paths, big.NewInt(deg))
	})
	roots := int64(1)
	switch x := ops[1].Value.(type) {
	case *ast.Array:
		roots = max(roots, int64(x.Len()))
	case ast.Set:
		roots = max(roots, int64(x.Len()))
	}
	paths.Mul(paths, big.NewInt(roots*int64(g.Len()+1)*termOverhead))
	if !paths.IsInt64() {
		return math.MaxInt64
	}
	return paths.Int64()
}
