package policies

import "time"

// DefaultTimeout is the per-evaluation deadline used when Options.Timeout
// is zero. It stops a runaway rule, failing closed, and sits far above
// what a normal policy needs even on a starved machine: an evaluation of
// the default or example policies takes about 0.15 ms, but its slowest
// took over 100 ms on a 2-CPU machine under heavy CPU load, and over 1 s
// under the race detector there (docs/policies.md). Compiling and
// preparing the queries happens in Load, outside any deadline.
const DefaultTimeout = 2 * time.Second

// MemoSize is how many decisions a Policies remembers per load. When the
// memo is full, an arbitrary entry is evicted to make room.
const MemoSize = 4096

// Options configures Load. The zero value (or a nil *Options) loads only
// the embedded default policies with the default deadline and memo.
type Options struct {
	// Dirs are user policy files or directories (searched recursively for
	// *.rego, skipping *_test.rego). Their rules may deny, hide and allow.
	// Relative paths are relative to the working directory; callers resolve
	// them against the config layer that names them.
	Dirs []string
	// ProjectDirs are policy files or directories provided by a project.
	// They may only make decisions stricter: a rule named allow in them is
	// an error naming its file:line, and so is a rule that adds to a rule
	// defined by the default or user policies (other than deny, hide and
	// the redact additions).
	ProjectDirs []string
	// Timeout is the deadline of one evaluation. Zero means DefaultTimeout.
	Timeout time.Duration
	// MemoryBudget is the most bytes one evaluation may allocate; past
	// it the evaluation stops and the decision fails closed. Zero means
	// DefaultMemoryBudget.
	MemoryBudget int64
	// DisableMemo turns off the decision memo, so every call evaluates.
	DisableMemo bool
}

func (o *Options) timeout() time.Duration {
	if o == nil || o.Timeout <= 0 {
		return DefaultTimeout
	}
	return o.Timeout
}

func (o *Options) memoryBudget() int64 {
	if o == nil || o.MemoryBudget <= 0 {
		return DefaultMemoryBudget
	}
	return o.MemoryBudget
}
