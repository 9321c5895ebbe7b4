package policies

import (
	"context"
	"time"
)

// ReplayRecord is one recorded tool call to decide again: the tools input
// the gateway decided the call on, and the verdict it recorded. Callers
// build it from a call record of their log, whose input
// [ToolInputRecord.Input] reads back from what [ToolInput.Record] made
// of it; of the log's format this package knows nothing else.
type ReplayRecord struct {
	// Seq and Time identify the record in the audit log.
	Seq  int64     `json:"seq"`
	Time time.Time `json:"time"`
	// Status is the recorded outcome: completed, failed, denied or error.
	Status string `json:"status"`
	// Input is the tools input of the call, as the gateway built it.
	Input ToolInput `json:"input"`
	// Allowed and Reasons are the verdict recorded for the call.
	Allowed bool     `json:"allowed"`
	Reasons []string `json:"reasons,omitempty"`
	// Invalid, when not empty, says why the record cannot be replayed
	// (such as a detail of the wrong type); Replay lists it as skipped.
	Invalid string `json:"invalid,omitempty"`
}

// ReplayChange is a recorded call that the policies now decide
// differently.
type ReplayChange struct {
	Seq     int64     `json:"seq"`
	Time    time.Time `json:"time"`
	Server  string    `json:"server"`
	Tool    string    `json:"tool"`
	Risk    string    `json:"risk"`
	Surface string    `json:"surface"`
	// Status is the recorded outcome of the call.
	Status string `json:"status"`
	// WasAllowed and WasReasons are the recorded verdict.
	WasAllowed bool     `json:"was_allowed"`
	WasReasons []string `json:"was_reasons,omitempty"`
	// Now is the decision the replayed policies make, with the reasons
	// (rule and file:line) that make it.
	Now ToolDecision `json:"now"`
}

// ReplayProblem is a recorded call that was not decided again, and why.
type ReplayProblem struct {
	Seq    int64     `json:"seq"`
	Time   time.Time `json:"time"`
	Server string    `json:"server"`
	Tool   string    `json:"tool"`
	// WasAllowed is the recorded verdict.
	WasAllowed bool `json:"was_allowed"`
	// Reason says what went wrong; for a policy failure it names the
	// policy file and, where OPA reports one, the line.
	Reason Reason `json:"reason"`
}

// ReplayReport is what Replay found.
type ReplayReport struct {
	// Total is the number of records replayed. It equals Same plus the
	// lengths of the four lists.
	Total int `json:"total"`
	// Same counts the calls the policies decide as recorded (allowed or
	// denied; the reasons may differ).
	Same int `json:"same"`
	// NowBlocked are calls recorded as allowed that the policies now deny;
	// NowAllowed are calls recorded as denied that they now allow. Both
	// keep the order of the records.
	NowBlocked []ReplayChange `json:"now_blocked"`
	NowAllowed []ReplayChange `json:"now_allowed"`
	// Errors are calls on which the policies failed (an evaluation error,
	// a timeout, a malformed decision). The gateway would deny them.
	Errors []ReplayProblem `json:"errors"`
	// Skipped are records that cannot be replayed: they lack a server or
	// tool name, or are marked Invalid.
	Skipped []ReplayProblem `json:"skipped"`
}

// Changed reports whether replaying found any call the policies decide
// differently from the record, or fail on.
func (r ReplayReport) Changed() bool {
	return len(r.NowBlocked) > 0 || len(r.NowAllowed) > 0 || len(r.Errors) > 0
}

// Replay decides every record again with the tools policy of p and
// compares the verdict, allowed or not, with the recorded one. It
// evaluates nothing but the policies: no server is started or called.
// Decisions are memoized as usual, so a log of many identical calls
// replays quickly. Replay returns an error only when p failed to load or
// ctx ends.
func (p *Policies) Replay(ctx context.Context, recs []ReplayRecord) (ReplayReport, error) {
	rep := ReplayReport{
		Total:      len(recs),
		NowBlocked: []ReplayChange{},
		NowAllowed: []ReplayChange{},
		Errors:     []ReplayProblem{},
		Skipped:    []ReplayProblem{},
	}
	if p.err != nil {
		return rep, p.err
	}
	for _, r := range recs {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		problem := ReplayProblem{Seq: r.Seq, Time: r.Time, Server: r.Input.Server.ID, Tool: r.Input.Tool.Name, WasAllowed: r.Allowed}
		switch {
		case r.Invalid != "":
			problem.Reason = Reason{Message: r.Invalid}
			rep.Skipped = append(rep.Skipped, problem)
			continue
		case r.Input.Server.ID == "" || r.Input.Tool.Name == "":
			problem.Reason = Reason{Message: "the record names no server or no tool"}
			rep.Skipped = append(rep.Skipped, problem)
			continue
		}
		d, err := decideTyped(ctx, p, AreaTools, r.Input, p.decodeTools)
		if err != nil {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			problem.Reason = p.failReason(AreaTools, err)
			rep.Errors = append(rep.Errors, problem)
			continue
		}
		if d.Allowed == r.Allowed {
			rep.Same++
			continue
		}
		c := ReplayChange{
			Seq: r.Seq, Time: r.Time, Server: r.Input.Server.ID, Tool: r.Input.Tool.Name,
			Risk: r.Input.Risk, Surface: r.Input.Surface, Status: r.Status,
			WasAllowed: r.Allowed, WasReasons: r.Reasons, Now: d,
		}
		if d.Allowed {
			rep.NowAllowed = append(rep.NowAllowed, c)
		} else {
			rep.NowBlocked = append(rep.NowBlocked, c)
		}
	}
	return rep, nil
}
