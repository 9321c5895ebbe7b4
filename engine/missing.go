package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/internal/turn"
)

// This file says why a server someone looks for does not run, with the
// fix, from what the config load found (cue.Result): the servers of an
// untrusted project, a server that is disabled or whose definition has
// errors, and a config file that did not read or parse. Every surface
// (servers, status, the agent's errors) takes its words from here.

// ErrNotLoaded is matched by the error for a server the config names
// that the engine does not load: the project that defines it is not
// trusted. The error says why and what to do.
var ErrNotLoaded = errors.New("server not loaded")

// notLoadedError is the error for a server of an untrusted project.
type notLoadedError struct{ msg string }

func (e *notLoadedError) Error() string        { return e.msg }
func (e *notLoadedError) Is(target error) bool { return target == ErrNotLoaded }

// untrustedLocked returns the summaries of the servers that the project
// layers define but that do not load because the project is not trusted,
// sorted by id, leaving out ids the engine runs (a user server the
// project only adjusts). They carry the id and the file, never what the
// server runs. e.mu is held.
func (e *Engine) untrustedLocked() []ServerSummary {
	if e.load == nil || e.load.Trust.Trusted {
		return nil
	}
	var out []ServerSummary
	seen := map[string]bool{}
	for _, f := range e.load.Files {
		for _, id := range f.IgnoredServers {
			if _, runs := e.servers[id]; runs || seen[id] {
				continue
			}
			seen[id] = true
			fix := "run voltmcp trust to review and trust the project"
			if f.Problem != nil && f.Problem.Hint != "" {
				fix = f.Problem.Hint
			}
			out = append(out, ServerSummary{ID: id, DisplayName: id, SourceScope: "project", SourceLabel: string(f.Layer) + " " + f.Path,
				Status: StatusUntrusted, Reason: "the project's MCP config is not trusted: " + e.load.Trust.Reason, Fix: fix})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// untrustedServer returns the summary of the untrusted project server
// id, if there is one.
func (e *Engine) untrustedServer(id string) (ServerSummary, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	id = cue.NormalizeID(id)
	for _, s := range e.untrustedLocked() {
		if s.ID == id {
			return s, true
		}
	}
	return ServerSummary{}, false
}

// brokenFilesLocked returns the config files that were found but did not
// read or parse, each with the diagnostic that kept it out. e.mu is held.
func (e *Engine) brokenFilesLocked() []cue.FileStatus {
	if e.load == nil {
		return nil
	}
	var out []cue.FileStatus
	for _, f := range e.load.Files {
		if f.Found && !f.Loaded && f.Problem != nil && f.Problem.Code != cue.CodeProjectIgnored {
			out = append(out, f)
		}
	}
	return out
}

// brokenFileNote says that a file did not load, where and why.
func brokenFileNote(f cue.FileStatus) string {
	loc := f.Path
	if p := f.Problem; p.Line > 0 {
		loc = fmt.Sprintf("%s:%d:%d", f.Path, p.Line, p.Col)
	}
	return fmt.Sprintf("%s: the %s config file does not load (%s), so the servers it defines are missing; fix it (voltmcp vet lists every problem)",
		loc, f.Layer, f.Problem.Message)
}

// notLoadedErrorLocked returns the error for a server id the engine does
// not run, or nil when it has that server. e.mu is held.
func (e *Engine) notLoadedErrorLocked(id string) error {
	nid := cue.NormalizeID(id)
	if _, ok := e.servers[nid]; ok {
		return nil
	}
	var ids []string
	for _, s := range e.untrustedLocked() {
		if s.ID == nid {
			return &notLoadedError{fmt.Sprintf("server %q is not loaded: it is defined in %s, and %s; %s", id, s.SourceLabel, s.Reason, s.Fix)}
		}
		ids = append(ids, s.ID)
	}
	for k := range e.servers {
		ids = append(ids, k)
	}
	sort.Strings(ids)
	msg := ""
	if near := cue.Closest(id, ids); near != "" {
		msg = fmt.Sprintf(" (did you mean %q?)", near)
	}
	for _, f := range e.brokenFilesLocked() {
		msg += "; " + brokenFileNote(f)
	}
	return fmt.Errorf("%w %q%s", ErrUnknownServer, id, msg)
}

// LoadNotes says, one line each, what of the config did not load and
// why, with the fix: each config file that was found but did not read or
// parse (with its file:line:col and the error), and a project whose
// config is not trusted, with the reason and the servers it leaves out.
// The status action and `voltmcp servers` show them. It is nil when the
// engine runs a config given in [Options.Config].
func (e *Engine) LoadNotes() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var notes []string
	for _, f := range e.brokenFilesLocked() {
		notes = append(notes, brokenFileNote(f))
	}
	if e.load == nil || e.load.Trust.Trusted {
		return notes
	}
	var ignored, hint string
	for _, f := range e.load.Files {
		if f.Problem != nil && f.Problem.Code == cue.CodeProjectIgnored {
			hint = f.Problem.Hint
			break
		}
	}
	if hint == "" {
		return notes // no project file parsed: nothing was left out for trust
	}
	if list := e.untrustedLocked(); len(list) > 0 {
		ids := make([]string, len(list))
		for i, s := range list {
			ids[i] = s.ID
		}
		ignored = fmt.Sprintf("; its servers %s are not loaded (status untrusted)", strings.Join(ids, ", "))
	}
	return append(notes, fmt.Sprintf("project MCP config is not loaded: %s%s; %s", e.load.Trust.Reason, ignored, hint))
}

// whyDisabled says why a disabled server is disabled and what turns it
// on: the first error of an invalid definition, or where "enabled":
// false comes from. It takes the Engine's lock, so s.mu must not be
// held.
func (s *supervisor) whyDisabled() (reason, fix string) {
	c := s.cfg
	if c.Invalid {
		return "disabled because its definition has errors: " + c.Problem, "fix the definition; voltmcp vet lists every problem"
	}
	reason, fix = `disabled by "enabled": false`, "run voltmcp enable "+c.ID
	cfg := s.e.Config()
	if cfg == nil {
		return reason, fix
	}
	o, ok := cfg.ServerSource(c.ID, "enabled")
	if !ok || o.File == "" {
		return reason, fix
	}
	reason += " at " + o.String()
	if o.Layer.IsProject() && !c.Layer.IsProject() {
		// voltmcp enable writes the user layer, which a project layer's
		// value overrides.
		fix = fmt.Sprintf(`remove "enabled": false from %s`, o.File)
	}
	return reason, fix
}

// disabledError is the error for using a disabled server.
func (s *supervisor) disabledError() error {
	reason, fix := s.whyDisabled()
	return fmt.Errorf("server %s is %s; %s", s.cfg.ID, reason, fix)
}

// policyError returns why the policies of the current config do not
// load, once the guard has tried (which status waits for); nil when
// they load, when Options.Policies gives them, or when ctx ends first.
func (e *Engine) policyError(ctx context.Context) error {
	g := e.guard.Load()
	if g == nil {
		return nil
	}
	select {
	case <-g.polReady:
	default:
		turn.Yield(ctx) // the policies may take a moment to compile
		select {
		case <-g.polReady:
		case <-ctx.Done():
			return nil
		}
	}
	return g.polErr
}

// envCause says why an enabled server cannot run because a variable
// its config references is not set in the environment the engine reads
// (Options.LookupEnv), and the fix; ok is false when every one is set.
// It names the variables and the fields that reference them, never a
// value.
func envCause(srv cue.Server, lookup func(string) (string, bool)) (reason, fix string, ok bool) {
	unset := UnsetEnv(srv, lookup)
	if len(unset) == 0 {
		return "", "", false
	}
	names := make([]string, len(unset))
	fields := make([]string, len(unset))
	exports := make([]string, len(unset))
	for i, r := range unset {
		names[i], fields[i], exports[i] = r.Name, r.Field, r.Name+"=…"
	}
	verb := "start"
	if !srv.IsStdio() {
		verb = "connect"
	}
	if len(unset) == 1 {
		reason = fmt.Sprintf("cannot %s: environment variable %s is not set (referenced in %s)", verb, names[0], fields[0])
	} else {
		reason = fmt.Sprintf("cannot %s: environment variables %s are not set (referenced in %s)", verb, strings.Join(names, ", "), strings.Join(fields, ", "))
	}
	fix = fmt.Sprintf("export %s, or set it in the environment the gateway runs with (for voltmcp serve, the env its MCP client starts it with)", strings.Join(exports, " "))
	if len(unset) > 1 {
		fix = strings.Replace(fix, "set it", "set them", 1)
	}
	return reason, fix, true
}

// envError is the error for using a server that cannot run because a
// variable its config references is not set (envCause), or nil.
func (s *supervisor) envError() error {
	reason, fix, ok := envCause(s.cfg, s.e.lookup)
	if !ok {
		return nil
	}
	return fmt.Errorf("server %s %s; %s", s.cfg.ID, reason, fix)
}
