package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/policies"
)

// DefaultWatchInterval is how often [Engine.Watch] looks at the stamps of
// the files it watches when [WatchOptions.Interval] is zero. A change is
// applied once a look finds the files as the previous look did, so an
// edit reaches the engine within two intervals and a load.
const DefaultWatchInterval = 250 * time.Millisecond

// maxWatchDelay bounds how long [Engine.Watch] waits for files that keep
// changing to settle: a file rewritten many times a second is applied
// at least this often, not never.
const maxWatchDelay = time.Second

// WatchOptions tune [Engine.Watch]. The zero value is usable.
type WatchOptions struct {
	// Interval is how often the watched paths' stamps are looked at.
	// Zero: [DefaultWatchInterval].
	Interval time.Duration

	// started, when set (by tests), is closed once the first look at
	// the files is taken.
	started chan<- struct{}
}

// ErrConfigInvalid is matched (with [errors.Is]) by a
// [*ConfigInvalidError].
var ErrConfigInvalid = errors.New("config does not validate")

// ConfigInvalidError is the error of a reload whose config does not
// validate, and which was not applied.
type ConfigInvalidError struct {
	// Diagnostics are the errors the load found that the running
	// config's load did not have, each with its file, line, column and
	// field path.
	Diagnostics cue.Diagnostics
}

func (e *ConfigInvalidError) Error() string {
	parts := make([]string, len(e.Diagnostics))
	for i, d := range e.Diagnostics {
		parts[i] = d.String()
	}
	return "config change not applied, the last good config keeps running: " + strings.Join(parts, "; ")
}

// Is reports whether target is [ErrConfigInvalid].
func (e *ConfigInvalidError) Is(target error) bool { return target == ErrConfigInvalid }

// forFile returns the error's text when one of its problems is in file,
// else "".
func (e *ConfigInvalidError) forFile(file string) string {
	if e == nil || file == "" {
		return ""
	}
	for _, d := range e.Diagnostics {
		if d.File == file {
			return e.Error()
		}
	}
	return ""
}

// ConfigError returns why the last config change was not applied (a
// [*ConfigInvalidError]), or nil when the last reload applied or none
// was refused.
func (e *Engine) ConfigError() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.invalid == nil {
		return nil
	}
	return e.invalid
}

// newErrors returns the error diagnostics of next that prev does not
// have (the same file, code, field and message), which keep next from
// being applied. A config that already ran with an error keeps running
// with it; an edit must not add one.
func newErrors(prev, next *cue.Result) cue.Diagnostics {
	if next == nil {
		return nil
	}
	type key struct {
		file, path, msg string
		code            cue.Code
	}
	had := map[key]bool{}
	if prev != nil {
		for _, d := range prev.Diagnostics {
			if d.Severity == cue.SeverityError {
				had[key{d.File, d.Path, d.Message, d.Code}] = true
			}
		}
	}
	var out cue.Diagnostics
	for _, d := range next.Diagnostics {
		if d.Severity == cue.SeverityError && !had[key{d.File, d.Path, d.Message, d.Code}] {
			out = append(out, d)
		}
	}
	return out
}

// reloadNote says what a reload from prev to next took away besides
// servers: a layer file that was deleted, a project that lost its
// trust. It is "" when there is nothing to say.
func reloadNote(prev, next *cue.Result) string {
	if prev == nil || next == nil {
		return ""
	}
	var notes []string
	found := map[string]bool{}
	for _, f := range next.Files {
		found[f.Path] = f.Found
	}
	for _, f := range prev.Files {
		if f.Found && !found[f.Path] {
			notes = append(notes, fmt.Sprintf("the %s layer file %s was deleted: its servers and settings are gone", f.Layer, f.Path))
		}
	}
	if prev.Trust.Trusted && len(prev.TrustFiles) > 0 && !next.Trust.Trusted && len(next.TrustFiles) > 0 {
		notes = append(notes, fmt.Sprintf("the project is no longer trusted (%s): its servers are stopped until you run voltmcp trust", next.Trust.Reason))
	}
	return strings.Join(notes, "; ")
}

// Watch applies changes to the config files while ctx lasts, through
// [Engine.Reload], and returns nil when ctx ends or the Engine closes.
// It watches the four config layer files (those that do not exist yet
// too: one created later is a change), the trust store, the project's
// files that project trust covers, the user's policy files and
// directories (settings.policies of the user layers and
// Options.PolicyDirs) and the plugin modules settings.plugins names. It
// looks at their stamps every [WatchOptions.Interval] without opening
// them (so a FIFO in a file's place blocks nothing), hashes a regular
// file whose stamp changed (a touch is no change), and reloads once a
// look finds the files as the previous one did: a burst of edits is
// applied once, as it ends, or at least once a second while it lasts.
// What a reload does (and refuses) is [Engine.Reload]'s; a reload that
// fails for another reason is logged and tried at the next change. It
// returns an error at once when the Engine runs a config given in
// Options.Config, which has no file.
func (e *Engine) Watch(ctx context.Context, opts *WatchOptions) error {
	if e.opts.Config != nil {
		return errors.New("engine: watch: the engine runs a config given in Options.Config; there are no files to watch")
	}
	var o WatchOptions
	if opts != nil {
		o = *opts
	}
	interval := DefaultWatchInterval
	if o.Interval > 0 {
		interval = o.Interval
	}
	set := newStampSet(e.watchPaths())
	set.look()
	if o.started != nil {
		close(o.started)
	}
	// A file that changed between the load and this first look.
	pending := e.changedSinceLoad()
	since := time.Now()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if e.isClosed() {
			return nil
		}
		now := time.Now()
		if set.look() {
			if !pending {
				pending, since = true, now
			}
			if now.Sub(since) < maxWatchDelay {
				continue
			}
		}
		if !pending {
			continue
		}
		pending = false
		if err := e.Reload(ctx); err != nil && !errors.Is(err, ErrConfigInvalid) {
			if ctx.Err() != nil || e.isClosed() {
				return nil
			}
			e.log.Warn("config reload failed; trying again at the next change", "error", err)
		}
		// The paths of the config now running; those watched before keep
		// the stamps of the look before the reload, so an edit made while
		// it loaded is seen at the next look.
		set = set.with(e.watchPaths())
	}
}

func (e *Engine) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// changedSinceLoad reports whether a config layer file is not as the
// running config's load found it: created, deleted or of other content.
func (e *Engine) changedSinceLoad() bool {
	e.mu.Lock()
	res := e.load
	e.mu.Unlock()
	if res == nil {
		return false
	}
	for _, f := range res.Files {
		st := stampOf(f.Path)
		if f.Found == st.linkErr {
			return true
		}
		if f.Found && f.SHA256 != "" && st.regular() && sumOf(f.Path, st) != f.SHA256 {
			return true
		}
	}
	return false
}

// watchPaths returns the paths whose change can change the running
// config (see [Engine.Watch]), each once.
func (e *Engine) watchPaths() []string {
	e.mu.Lock()
	cfg, res := e.cfg, e.load
	e.mu.Unlock()
	loc := cue.Locations{Home: e.opts.Home, Project: e.opts.Project}
	var paths []string
	for _, l := range []cue.Layer{cue.LayerUserShared, cue.LayerUser, cue.LayerProjectShared, cue.LayerProject} {
		paths = append(paths, loc.Path(l))
	}
	paths = append(paths, filepath.Join(e.opts.AgentDir, cue.TrustStoreFile))
	if res != nil {
		// The project files trust covers, and the walked directories.
		paths = append(paths, res.TrustPaths...)
	}
	if e.opts.Policies == nil {
		user := slices.Clone(e.opts.PolicyDirs)
		for _, p := range cfg.Policies {
			if !p.Layer.IsProject() {
				user = append(user, p.Path)
			}
		}
		paths = append(paths, policies.Paths(user)...)
	}
	for _, pl := range slices.Concat(cfg.Settings.Plugins.Classifiers, cfg.Settings.Plugins.Shapers) {
		paths = append(paths, pl.Path)
	}
	seen := map[string]bool{}
	out := paths[:0]
	for _, p := range paths {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
