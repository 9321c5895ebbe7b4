package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/audit"
)

// trustRecheck is how long an Engine relies on its last look at the
// files of project trust before it looks at their stamps again: a
// `voltmcp untrust`, `voltmcp trust` or an edit made by another process
// reaches a running serve within this time, as an approval does
// (pinRecheck), for a stat of each file at most once a second rather
// than on every call.
const trustRecheck = time.Second

// projectTrust is what an Engine knows of the project trust its config
// was loaded under, for as long as it runs: the files the decision
// covered with their hashes, and the paths that can change it (the trust
// store, the project files, the policy directories walked), with their
// stamps when last looked at. When a stamp changes, the decision is made
// again, as a load would make it, over the files as they are now; a
// project server may run only while that decision trusts the project and
// the files it covers are those the Engine loaded.
type projectTrust struct {
	project string
	loaded  map[string]string // path -> sha256 of what the Engine runs

	mu sync.Mutex
	// paths are the paths that can change the decision, with what they
	// were when the decision was last made; their first look reports a
	// change (the load that built the Engine read the files before any
	// stamp could be taken).
	paths   *stampSet
	checked time.Time
	// err is why project servers may not run, nil when they may.
	err error
}

// newProjectTrust returns the trust watch of a config loaded for
// surface, or nil when no project layer loads (nothing of the project
// runs) or the surface is a one-shot command, which decides trust as it
// starts and ends soon after.
func newProjectTrust(surface cue.Surface, project string, res *cue.Result) *projectTrust {
	switch surface {
	case cue.SurfaceServe, cue.SurfaceRPC, cue.SurfaceDaemon:
	default:
		return nil
	}
	if res == nil || !res.Trust.Trusted || len(res.TrustFiles) == 0 {
		return nil
	}
	return &projectTrust{project: project, loaded: trustHashes(res.TrustFiles), paths: newStampSet(res.TrustPaths)}
}

// trustHashes maps each file a trust decision covered to its hash ("" for
// one that could not be read).
func trustHashes(files []cue.FileStatus) map[string]string {
	out := map[string]string{}
	for _, f := range files {
		if f.Found {
			p, err := filepath.Abs(f.Path)
			if err != nil {
				p = f.Path
			}
			out[p] = f.SHA256
		}
	}
	return out
}

// projectTrustError returns why the servers of the project may not run
// now, or nil when they may: the project is no longer trusted (`voltmcp
// untrust`, a trust record that no longer matches), or a file trust
// covers changed since the Engine loaded it. It looks at the files'
// stamps at most once a trustRecheck, and decides again only when one
// changed.
func (e *Engine) projectTrustError(ctx context.Context) error {
	pt := e.ptrust.Load()
	if pt == nil {
		return nil
	}
	pt.mu.Lock()
	defer pt.mu.Unlock()
	now := time.Now()
	if !pt.checked.IsZero() && now.Sub(pt.checked) < trustRecheck && now.After(pt.checked) {
		return pt.err
	}
	pt.checked = now
	if !pt.paths.look() {
		return pt.err
	}
	decided, err := e.decideTrustAgain(ctx, pt)
	if !decided {
		pt.paths.forget() // not decided (the context ended): look again next time
		return err
	}
	if err != nil && pt.err == nil {
		e.record(ctx, audit.Record{Kind: audit.KindTrust, Status: "untrusted", Decision: &audit.Decision{Allowed: false, Reasons: []string{err.Error()}},
			Detail: map[string]any{"project": pt.project}})
	}
	pt.err = err
	return err
}

// decideTrustAgain makes the project trust decision over the files as
// they are now, as the load did, and compares what it covers with what
// the Engine loaded. decided is false when no decision was made.
func (e *Engine) decideTrustAgain(ctx context.Context, pt *projectTrust) (decided bool, err error) {
	res, err := cue.Load(ctx, cue.Locations{Home: e.opts.Home, Project: e.opts.Project}, &cue.Options{
		Schema: e.schema, Surface: e.opts.Surface, Approve: e.opts.Approve, NoApprove: e.opts.NoApprove, Trust: e.trustDecider(ctx, false),
		TrustStore: filepath.Join(e.opts.AgentDir, cue.TrustStoreFile),
	})
	if err != nil {
		return false, fmt.Errorf("project %s: deciding its trust again: %w", pt.project, err)
	}
	if !res.Trust.Trusted {
		return true, &notLoadedError{fmt.Sprintf("the MCP config of project %s is no longer trusted: %s; run voltmcp trust to review and trust it", pt.project, res.Trust.Reason)}
	}
	now := trustHashes(res.TrustFiles)
	for p, sum := range now {
		if old, ok := pt.loaded[p]; !ok || old != sum {
			return true, &notLoadedError{fmt.Sprintf("the MCP config of project %s changed since it was loaded (%s); restart voltmcp to load it as it is now", pt.project, changeOf(p, ok))}
		}
	}
	for p := range pt.loaded {
		if _, ok := now[p]; !ok {
			return true, &notLoadedError{fmt.Sprintf("the MCP config of project %s changed since it was loaded (%s was removed); restart voltmcp to load it as it is now", pt.project, p)}
		}
	}
	return true, nil
}

func changeOf(path string, existed bool) string {
	if existed {
		return path + " changed"
	}
	return path + " is new"
}
