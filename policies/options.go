package policies

import (
	"time"

	"github.com/voltmcp/voltmcp/redact"
)

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
	// *.rego, skipping *_test.rego, by package regofile's walk within its
	// default bounds). Their rules may deny, hide and allow.
	// Relative paths are relative to the working directory; callers resolve
	// them against the config layer that names them.
	Dirs []string
	// ProjectFiles are the policy files a project provides, given by
	// their content: the loader reads no project file itself, so what it
	// loads is what the caller read and project trust hashed (cue.Load
	// reads them; engine.LoadPolicies passes them on). They may only make
	// decisions stricter: a rule named allow in them is an error naming
	// its file:line, and so is a rule that adds to a rule defined by the
	// default or user policies (other than deny, hide and the redact
	// additions).
	ProjectFiles []File
	// Timeout is the deadline of one evaluation. Zero means DefaultTimeout.
	Timeout time.Duration
	// MemoryBudget is the most bytes one evaluation may allocate; past
	// it the evaluation stops and the decision fails closed. Zero means
	// DefaultMemoryBudget.
	MemoryBudget int64
	// DisableMemo turns off the decision memo, so every call evaluates.
	DisableMemo bool
	// Scrub removes known secret values from every reason a decision
	// carries, of every area: the messages the rules write (which may
	// quote the input: a server's arguments, a tool's metadata) and those
	// of a decision that failed closed (an evaluation error may quote a
	// value too). The engine passes the scrubber of its configuration's
	// secret values. Nil removes nothing.
	Scrub *redact.Scrubber
}

// File is a policy file given by its content.
type File struct {
	// Name is the file's path: errors and reasons name it, with the line.
	Name string
	// Data is the file's content.
	Data []byte
	// Err, when set, is why the file could not be read; Load fails
	// closed with it, as with a file that does not parse.
	Err error
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
