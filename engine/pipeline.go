package engine

import (
	"context"
	"encoding/json"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/engine/internal/auditq"
	"github.com/voltmcp/voltmcp/engine/internal/turn"
)

// One call of the mcp tool runs as one gatewayJob, whatever the surface
// it came from (stdio, Streamable HTTP, a direct tool, the CLI, an
// embedding program) and whichever codec decoded it and encodes its
// answer: the lean codec (leanServe, leanHTTP), which reads and writes
// the wire itself, or the SDK's server (handleGateway). The job holds
// the call's audit records until the answer is handed to the codec and
// then adds them to the backlog ([auditq.Backlog]); it answers a panic, on
// its own goroutine or on a connection's reader where a server's answer
// is read, as an internal error whose text says nothing of the panic;
// it answers once. The pin and policy checks are the gateway's own
// (decideCall), and cancellation is the job's context, which every
// codec cancels when its agent cancels the call.

// gatewayJob is one call of the mcp tool. Make one with newGatewayJob.
type gatewayJob struct {
	e       *Engine
	ctx     context.Context
	cancel  context.CancelCauseFunc
	release func() []audit.Record // builds the call's held audit records
	// deliver hands the answer to the codec, once: r, or, when fault is
	// set, an internal error. It runs where the answer is ready: this
	// goroutine, or a server connection's reader (yield lets it go).
	deliver func(yield func(), r GatewayResult, fault bool)
	// ended, when set, runs last, once the records are in the backlog.
	ended func()
	// answered is set by the first of finish and fault.
	answered atomic.Bool
	// faulted holds what the work asked to run should it panic
	// (onFault): a call's record of its end.
	faulted *faultHook
}

// faultHook holds the function a job runs when its work panics.
type faultHook struct {
	mu sync.Mutex
	f  func()
}

type faultHookKey struct{}

// onFault makes f run, once, should the work of the job ctx belongs to
// panic, before the job answers: a call whose work panicked still
// leaves its record. It does nothing outside a job.
func onFault(ctx context.Context, f func()) {
	if h, _ := ctx.Value(faultHookKey{}).(*faultHook); h != nil {
		h.mu.Lock()
		h.f = f
		h.mu.Unlock()
	}
}

// newGatewayJob makes a job whose context parent's end cancels.
func (e *Engine) newGatewayJob(parent context.Context, deliver func(yield func(), r GatewayResult, fault bool), ended func()) *gatewayJob {
	ctx, cancel := context.WithCancelCause(parent)
	ctx, release := auditq.WithHeld(ctx)
	h := &faultHook{}
	ctx = context.WithValue(ctx, faultHookKey{}, h)
	return &gatewayJob{e: e, ctx: ctx, cancel: cancel, release: release, deliver: deliver, ended: ended, faulted: h}
}

// run runs work, which hands its result to then once, on this
// goroutine; yield lets go of the reader this goroutine is, if it is
// one (see package turn).
func (j *gatewayJob) run(yield func(), work func(ctx context.Context, then func(yield func(), r GatewayResult))) {
	defer func() {
		if v := recover(); v != nil {
			j.fault(v)
		}
	}()
	work(turn.WithPanicHandler(turn.WithYield(j.ctx, yield), j.fault), j.finish)
}

// finish delivers the gateway's result.
func (j *gatewayJob) finish(yield func(), r GatewayResult) {
	if j.answered.Swap(true) {
		return
	}
	j.end(yield, r, false)
}

// fault delivers an internal error for a call whose work panicked, and
// logs the stack. The panic's value is not logged: it could hold a
// secret.
func (j *gatewayJob) fault(any) {
	if j.answered.Swap(true) {
		return
	}
	j.e.log.Error("the mcp tool panicked", "stack", string(debug.Stack()))
	j.faulted.mu.Lock()
	f := j.faulted.f
	j.faulted.mu.Unlock()
	if f != nil {
		func() {
			defer func() { _ = recover() }() // a record that cannot be built is lost, not the answer
			f()
		}()
	}
	j.end(turn.NoYield, GatewayResult{}, true)
}

// end delivers the answer and then ends the call: its context, its
// records, which join the backlog that a timer writes soon after (a
// call that writes the backlog itself hands the reader over only if the
// log makes it wait, for another process's lock, say), and ended.
func (j *gatewayJob) end(yield func(), r GatewayResult, fault bool) {
	defer func() {
		j.cancel(nil)
		j.e.backlog.Add(j.release, yield)
		if j.ended != nil {
			j.ended()
		}
	}()
	if !fault {
		r = j.e.withAuditNote(r)
	}
	j.deliver(yield, r, fault)
}

// errInternal answers a call whose work panicked.
var errInternal = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}

// gatewayAwait runs work as a job and waits for its answer; ok is false
// when the work panicked.
func (e *Engine) gatewayAwait(ctx context.Context, work func(ctx context.Context, then func(yield func(), r GatewayResult))) (r GatewayResult, ok bool) {
	type answer struct {
		r     GatewayResult
		fault bool
	}
	got := make(chan answer, 1)
	j := e.newGatewayJob(ctx, func(_ func(), r GatewayResult, fault bool) { got <- answer{r, fault} }, nil)
	j.run(turn.YieldFunc(ctx), work)
	a := <-got
	return a.r, !a.fault
}

// handleGateway is the mcp tool's handler on the SDK's server: the SDK
// codec's side of the pipeline.
func (e *Engine) handleGateway(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	// The agent's client, whom a login the call needs may be offered to.
	ctx = withAgent(ctx, func() *mcp.ServerSession { return req.Session })
	r, ok := e.gatewayAwait(ctx, func(ctx context.Context, then func(func(), GatewayResult)) {
		e.gatewayRunThen(ctx, req.Params.Arguments, then)
	})
	if !ok {
		return nil, errInternal
	}
	return toolResult(r), nil
}

// gatewayRun decodes the mcp tool's input raw and runs it through the
// pipeline, for a caller that waits.
func (e *Engine) gatewayRun(ctx context.Context, raw json.RawMessage) GatewayResult {
	return e.gatewayResult(ctx, func(ctx context.Context, then func(func(), GatewayResult)) { e.gatewayRunThen(ctx, raw, then) })
}

// gatewayResult is gatewayAwait for a caller that takes a panic as an
// error result.
func (e *Engine) gatewayResult(ctx context.Context, work func(ctx context.Context, then func(yield func(), r GatewayResult))) GatewayResult {
	r, ok := e.gatewayAwait(ctx, work)
	if !ok {
		return gwError("internal error")
	}
	return r
}
