package policies

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/voltmcp/voltmcp/redact"
)

// Reason is one reason of a decision: what it says, which rule produced it
// and where that rule is written.
type Reason struct {
	// Message is for people (and agents): why the decision went this way.
	Message string `json:"msg"`
	// Rule names the rule: the "rule" a reason object gives, else the
	// extension rule (deny, allow, hide) that produced it. Empty for
	// reasons made by Go when a policy fails.
	Rule string `json:"rule,omitempty"`
	// File and Line locate the rule; File is "builtin/<area>.rego" for the
	// default policies and the path as given in Options for user files.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// String renders "message (rule at file:line)".
func (r Reason) String() string {
	switch {
	case r.File == "":
		return r.Message
	}
	where := r.File
	if r.Line > 0 {
		where = fmt.Sprintf("%s:%d", r.File, r.Line)
	}
	if r.Rule != "" {
		return fmt.Sprintf("%s (%s at %s)", r.Message, r.Rule, where)
	}
	return fmt.Sprintf("%s (%s)", r.Message, where)
}

// Policies is a loaded, compiled policy set. It is safe for concurrent use.
// A Policies returned with a load error fails closed: every decision is a
// deny (or untrusted) whose reason is that error.
type Policies struct {
	err       error  // the load error, if any
	errReason Reason // err as a reason
	queries   map[string]rego.PreparedEvalQuery
	fallback  *rego.PreparedEvalQuery // redact query of the default policies alone
	locs      map[string]map[string]*ast.Location
	files     map[string]string // area -> the default policy file
	timeout   time.Duration
	budget    int64            // bytes one evaluation may allocate
	memo      *memo            // nil when disabled
	scrub     *redact.Scrubber // Options.Scrub
}

// Load parses and compiles the default policies and the files named in
// opts, and prepares one query per area. On any error (a syntax or compile
// error, a missing path, a reserved or forbidden rule) it returns the error,
// which names file:line where there is one, together with a non-nil
// *Policies that fails closed, so a caller can keep serving safely.
func Load(ctx context.Context, opts *Options) (*Policies, error) {
	return load(ctx, bundleFS, opts)
}

func load(ctx context.Context, bundle fs.FS, opts *Options) (*Policies, error) {
	if opts == nil {
		opts = &Options{}
	}
	p := &Policies{
		queries: map[string]rego.PreparedEvalQuery{},
		timeout: opts.timeout(),
		budget:  opts.memoryBudget(),
		files:   map[string]string{},
		scrub:   opts.Scrub,
	}
	for _, a := range Areas() {
		p.files[a] = bundlePrefix + a + ".rego"
	}
	if !opts.DisableMemo {
		p.memo = newMemo(MemoSize)
	}
	caps := capabilities()
	fail := func(cause error) (*Policies, error) {
		err := &loadError{cause}
		p.err = err
		p.errReason = errorReason("policies failed to load", cause)
		p.errReason.Message = p.scrub.Text(p.errReason.Message)
		p.queries = nil
		return p, err
	}
	base, err := parseBundle(bundle, caps, false)
	if err != nil {
		return fail(fmt.Errorf("parse default policies: %w", err))
	}
	if c, err := compile(base, caps); err == nil {
		if q, err := prepare(ctx, c, caps, AreaRedact); err == nil {
			p.fallback = &q
		}
	}
	srcs := base
	files, err := regoFiles(opts.Dirs, false)
	if err != nil {
		return fail(err)
	}
	user, err := parseSources(files, fromUser, caps)
	if err != nil {
		return fail(err)
	}
	project, err := parseSources(opts.ProjectFiles, fromProject, caps)
	if err != nil {
		return fail(err)
	}
	srcs = append(append(srcs, user...), project...)
	if err := validate(srcs); err != nil {
		return fail(err)
	}
	p.locs = ruleLocations(srcs)
	locate(srcs)
	c, err := compile(srcs, caps)
	if err != nil {
		return fail(err)
	}
	for _, a := range Areas() {
		q, err := prepare(ctx, c, caps, a)
		if err != nil {
			return fail(fmt.Errorf("prepare %s decision: %w", a, err))
		}
		p.queries[a] = q
	}
	return p, nil
}

// loadError is the error of a failed Load; it renders every OPA error as
// "file:line: message".
type loadError struct{ cause error }

func (e *loadError) Error() string { return "load policies: " + describe(e.cause) }
func (e *loadError) Unwrap() error { return e.cause }

// Err returns the load error of a Policies that fails closed, or nil.
func (p *Policies) Err() error { return p.err }

// errorReason turns an error into a reason naming the policy file and line
// where the error has one.
func errorReason(prefix string, err error) Reason {
	r := Reason{Message: prefix + ": " + describe(err)}
	var ae ast.Errors
	var te *topdown.Error
	var be *MemoryBudgetError
	switch {
	case errors.As(err, &ae) && len(ae) > 0 && ae[0].Location != nil:
		r.File, r.Line = ae[0].Location.File, ae[0].Location.Row
	case errors.As(err, &be) && be.File != "":
		r.File, r.Line = be.File, be.Line
	case errors.As(err, &te) && te.Location != nil:
		r.File, r.Line = te.Location.File, te.Location.Row
	}
	return r
}

// describe renders an error with "file:line: message" for each OPA error.
func describe(err error) string {
	var ae ast.Errors
	if errors.As(err, &ae) && len(ae) > 0 {
		parts := make([]string, len(ae))
		for i, e := range ae {
			parts[i] = astErrorString(e)
		}
		return strings.Join(parts, "; ")
	}
	var te *topdown.Error
	if errors.As(err, &te) {
		if te.Location != nil {
			return fmt.Sprintf("%s:%d: %s: %s", te.Location.File, te.Location.Row, te.Code, te.Message)
		}
		return te.Code + ": " + te.Message
	}
	return err.Error()
}

func astErrorString(e *ast.Error) string {
	if e.Location != nil {
		return fmt.Sprintf("%s:%d: %s", e.Location.File, e.Location.Row, e.Message)
	}
	return e.Message
}

// evalRaw runs the prepared query of an area on a JSON input. It never
// returns a value for an error, a timeout or an undefined decision.
func (p *Policies) evalRaw(ctx context.Context, area string, input []byte, tracer topdown.QueryTracer) (any, error) {
	if p.err != nil {
		return nil, p.err
	}
	q, ok := p.queries[area]
	if !ok {
		return nil, fmt.Errorf("unknown policy area %q", area)
	}
	return evalQuery(ctx, q, p.limits(), input, tracer, "data.voltmcp."+area+".decision")
}

// evalLimits are the bounds of one evaluation: its deadline and its
// memory budget in bytes.
type evalLimits struct {
	timeout time.Duration
	budget  int64
}

func (p *Policies) limits() evalLimits { return evalLimits{p.timeout, p.budget} }

// evalQuery evaluates q on input within lim: past the deadline or the
// memory budget (see budget) the evaluation stops and the error says
// which.
func evalQuery(ctx context.Context, q rego.PreparedEvalQuery, lim evalLimits, input []byte, tracer topdown.QueryTracer, what string) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s not evaluated: %w", what, err)
	}
	v, err := ast.ValueFromReader(bytes.NewReader(input))
	if err != nil {
		return nil, fmt.Errorf("decode policy input: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, lim.timeout)
	defer cancel()
	b := newBudget(ctx, lim.budget)
	opts := []rego.EvalOption{rego.EvalParsedInput(v), rego.EvalExternalCancel(b)}
	if tracer != nil {
		opts = append(opts, rego.EvalQueryTracer(tracer))
	}
	rs, err := q.Eval(ctx, opts...)
	if berr := b.err(what); berr != nil {
		return nil, berr
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s did not finish within %v: %w", what, lim.timeout, ctx.Err())
		}
		return nil, err
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return nil, fmt.Errorf("%s is undefined", what)
	}
	return rs[0].Expressions[0].Value, nil
}

// failReason is the reason of a fail-closed decision.
func (p *Policies) failReason(area string, err error) Reason {
	if p.err != nil && errors.Is(err, p.err) {
		// The load error already names the file; say so once.
		return p.errReason
	}
	r := errorReason("policy "+area+" failed closed", err)
	r.Message = p.scrub.Text(r.Message)
	if r.File == "" {
		r.File = p.files[area]
	}
	return r
}

// wireReason is a reason as the policies produce it.
type wireReason struct {
	Msg  *string `json:"msg"`
	Rule string  `json:"rule"`
	File string  `json:"file"`
	Line int     `json:"line"`
}

// decode converts a decision value into out, which must be a pointer to a
// struct of the decision's shape; every field must be present.
func decode(v any, out any, required ...string) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("decision is %T, not an object", v)
	}
	for _, k := range required {
		if _, ok := obj[k]; !ok {
			return fmt.Errorf("decision has no %q", k)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode decision: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("decision has the wrong shape: %w", err)
	}
	return nil
}

// reasons converts the wire reasons, filling in rule locations.
func (p *Policies) reasons(area string, in []wireReason) ([]Reason, error) {
	out := make([]Reason, 0, len(in))
	for _, w := range in {
		if w.Msg == nil {
			return nil, errors.New("decision has a reason without msg")
		}
		r := Reason{Message: p.scrub.Text(*w.Msg), Rule: w.Rule, File: w.File, Line: w.Line}
		if r.File == "" && r.Rule != "" {
			if loc := p.locs[area][r.Rule]; loc != nil {
				r.File, r.Line = loc.File, loc.Row
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// inputKey is the memo key of an input: the area and a hash of the JSON.
func inputKey(area string, input []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(area))
	h.Write([]byte{0})
	h.Write(input)
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// memo is a bounded map of decisions by input hash.
type memo struct {
	mu  sync.RWMutex
	max int
	m   map[[32]byte]any
}

func newMemo(max int) *memo { return &memo{max: max, m: make(map[[32]byte]any, 64)} }

func (m *memo) get(k [32]byte) (any, bool) {
	if m == nil {
		return nil, false
	}
	m.mu.RLock()
	v, ok := m.m[k]
	m.mu.RUnlock()
	return v, ok
}

func (m *memo) put(k [32]byte, v any) {
	if m == nil {
		return
	}
	m.mu.Lock()
	if len(m.m) >= m.max {
		for old := range m.m { // map order is unspecified: evict an arbitrary entry
			delete(m.m, old)
			break
		}
	}
	m.m[k] = v
	m.mu.Unlock()
}
