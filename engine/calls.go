package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/internal/line"
	"github.com/voltmcp/voltmcp/engine/internal/output"
	"github.com/voltmcp/voltmcp/engine/internal/turn"
)

// maxProgressMessage bounds the text of a progress event: it comes from
// the server and is shown to people.
const maxProgressMessage = 200

// progress turns a server's progress notification for a call in flight
// into an mcp_call_update event.
func (s *supervisor) progress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	s.progressNotes.Add(1)
	id := fmt.Sprint(req.Params.ProgressToken)
	s.mu.Lock()
	tool, ok := s.calls[id]
	s.mu.Unlock()
	if !ok {
		return // not a call of ours, or already over
	}
	msg := strings.ToValidUTF8(req.Params.Message, "?")
	if len(msg) > maxProgressMessage {
		msg = msg[:maxProgressMessage]
	}
	s.e.bus.publish(Event{Type: EventCallUpdate, Server: s.cfg.ID, Tool: tool, CallID: id, CallStatus: "running",
		Progress: req.Params.Progress, Total: req.Params.Total, Message: s.scrub.Text(output.CleanText(msg, progressMaxChars))})
}

// call runs one tool call on the server. callID doubles as the progress
// token, so progress notifications map back to the call. then gets the
// result once: on this goroutine, or, when the call takes the lean path,
// on the connection's reader once the server answers (see reply; yield
// lets that reader go).
//
// decided is the listing (see listing) the call was decided on: when a
// discovery ran since, nothing is sent and then gets errListedMeanwhile,
// since what it listed may hold the tool. anyListing skips the check, for
// calls that no decision gates (Engine.callUngated).
func (s *supervisor) call(ctx context.Context, callID, tool string, args any, decided uint64, then func(yield func(), res *mcp.CallToolResult, err error)) {
	s.mu.Lock()
	s.inflight++
	if s.calls == nil {
		s.calls = map[string]string{}
	}
	s.calls[callID] = tool
	s.mu.Unlock()
	here := turn.YieldFunc(ctx)
	end := func(yield func(), res *mcp.CallToolResult, err error) {
		s.mu.Lock()
		s.inflight--
		delete(s.calls, callID)
		s.touchLocked()
		s.mu.Unlock()
		then(yield, res, err)
	}
	cs, err := s.ensure(ctx)
	if err != nil {
		end(here, nil, err)
		return
	}
	s.mu.Lock()
	listed, stale := s.listings, s.staleLocked()
	s.mu.Unlock()
	if decided != anyListing && listed != decided {
		// Connecting (after a crash, say) listed the tools again since
		// the call was decided, and that listing may hold this tool.
		end(here, nil, fmt.Errorf("%w: nothing was sent; call again to have it decided on what the server lists now", errListedMeanwhile))
		return
	}
	if stale {
		s.refreshAsync("metadata older than metadataRefreshMs")
	}
	timeout := s.callTimeout
	cctx, cancel := s.e.deadlines.withTimeout(ctx, timeout)
	// A progress token asks the server for progress notifications, which
	// only a subscriber to the engine's events sees (as mcp_call_update);
	// without one, the server is not asked. Servers do work for a token
	// even when they send nothing: with the Go SDK, about 5% of a call.
	progress := ""
	if s.e.bus.listening() {
		progress = callID
	}
	tripsBefore := s.oversized.Load()
	done := func(yield func(), res *mcp.CallToolResult, err error) {
		if err != nil {
			if cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
				err = fmt.Errorf("call %s timed out after %s", tool, timeout)
			} else if s.oversized.Load() != tripsBefore {
				err = fmt.Errorf("%w: %v", line.ErrMessageTooLarge, err)
			} else {
				err = s.explain("tools/call", err)
			}
			res, err = nil, s.scrub.Err(err)
		}
		cancel()
		end(yield, res, err)
	}
	viaSDK := func(yield func()) {
		// The SDK's client waits here for the server, which the
		// connection's reader must go on reading.
		yield()
		params := &mcp.CallToolParams{Name: tool, Arguments: args}
		if progress != "" {
			params.SetProgressToken(progress)
		}
		res, err := cs.CallTool(cctx, params)
		done(turn.NoYield, res, err)
	}
	lean := s.leanCall(cctx, cs, tool, args, progress, func(yield func(), res *mcp.CallToolResult, err error) {
		if errors.Is(err, errNeedsSDK) {
			viaSDK(yield)
			return
		}
		done(yield, res, err)
	})
	if !lean {
		viaSDK(here)
	}
}

// touch notes a use of the server for its idle timer, which it arms if
// it is not armed. The timer is not stopped and started again on every
// call: starting a timer may wake a thread of Go's runtime, a cost a
// call through the gateway pays on a small machine (RATIONALE.md).
// Instead, a timer that fires before the server has been idle for
// IdleTimeoutMs arms itself again for the rest of it (idleFired).
func (s *supervisor) touch() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touchLocked()
}

// touchLocked is touch with s.mu held.
func (s *supervisor) touchLocked() {
	s.lastUse = time.Now()
	if !s.idles() || s.session == nil {
		return
	}
	if s.idle != nil {
		if s.idleGen == s.gen {
			return
		}
		s.stopIdleLocked() // armed for an earlier session
	}
	gen := s.gen
	s.idleGen = gen
	s.idle = time.AfterFunc(ms(s.cfg.IdleTimeoutMs), func() { s.idleFired(gen) })
}

// idles reports whether the server disconnects when idle.
func (s *supervisor) idles() bool {
	return s.cfg.IdleTimeoutMs > 0 && s.cfg.Lifecycle != "keep-alive"
}

func (s *supervisor) stopIdleLocked() {
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
}

// idleFired disconnects a server idle for IdleTimeoutMs. A server in use
// (a call in flight, or one that ended less than IdleTimeoutMs ago) or
// not ready keeps the timer, armed again; a timer of an earlier session
// goes.
func (s *supervisor) idleFired(gen uint64) {
	s.mu.Lock()
	if s.idle == nil || s.idleGen != gen {
		s.mu.Unlock()
		return // stopped, or another timer took over
	}
	if s.gen != gen || s.session == nil || !s.idles() {
		s.idle = nil
		s.mu.Unlock()
		return
	}
	idle := ms(s.cfg.IdleTimeoutMs)
	rest := idle - time.Since(s.lastUse)
	if s.inflight > 0 || s.status != StatusReady {
		rest = idle
	}
	if rest > 0 {
		s.idle.Reset(rest)
		s.mu.Unlock()
		return
	}
	s.idle = nil
	s.mu.Unlock()
	s.log.Debug("idle; disconnecting")
	s.disconnect(StatusCold)
}
