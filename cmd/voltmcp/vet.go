package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine"
	"github.com/voltmcp/voltmcp/safefile"
	"github.com/voltmcp/voltmcp/wasm"
)

func vetCommand() *command {
	var format, failOn string
	var quiet bool
	c := &command{
		name:    "vet",
		summary: "check MCP config files for errors, without running anything",
		usage: `Usage: voltmcp vet [flags] [FILE...]

Checks MCP config the way voltmcp will read it, and exits 1 when it finds an
error. With no FILE it checks the four layers found under --home and
--project, including project files that are not trusted (vet runs nothing),
and says whether they would load. With FILEs it checks each as a standalone
file. Formats: text (file:line:col like a compiler), json, sarif (GitHub code
scanning) and github (workflow annotations).

vet also compiles the Rego policies the config names (settings.policies;
a project's as deny-only), and those given with --policy, and loads every WebAssembly plugin it names
(settings.plugins): it checks each module's sha256 pin, imports, exports
and ABI version and compiles it, without calling it. A policy that does
not load is a policy-error, a plugin that would be refused a plugin-error,
each reported at the config entry that names it. Nothing is started and
nothing is fetched.

Examples:
  voltmcp vet --project examples/quickstart
  voltmcp vet .mcp.json .volt/mcp.json
  voltmcp vet --format sarif > voltmcp.sarif
  voltmcp vet --format github --fail-on warning`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&format, "format", "text", "output format: text, json, sarif or github")
			fs.StringVar(&failOn, "fail-on", "error", "lowest severity that fails the run: error or warning")
			fs.BoolVarP(&quiet, "quiet", "q", false, "leave out info diagnostics (text and github formats)")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		w, ok := vetFormatter(format)
		if !ok {
			return usageErrorf("unknown --format %q: want text, json, sarif or github", format)
		}
		if failOn != "error" && failOn != "warning" {
			return usageErrorf("unknown --fail-on %q: want error or warning", failOn)
		}
		opts := &cue.Options{
			Surface: cue.SurfaceVet, Approve: e.g.approve, NoApprove: e.g.noApprove,
			CheckUntrusted: true, Lint: true, TrustStore: filepath.Join(e.g.agentDir, cue.TrustStoreFile),
		}
		var res *cue.Result
		var err error
		if len(args) > 0 {
			res, err = cue.LoadFiles(ctx, args, opts)
		} else {
			res, err = cue.Load(ctx, cue.Locations{Home: e.g.home, Project: e.g.project}, opts)
		}
		if err != nil {
			return failuref("%w", err)
		}
		srcs := res.Config.Policies
		if len(args) == 0 {
			more, err := untrustedProjectPolicies(ctx, e, res, opts)
			if err != nil {
				return failuref("%w", err)
			}
			srcs = append(slices.Clip(srcs), more...)
		}
		for _, p := range e.g.policies {
			// --policy adds to the bundle as a user policy, as it does
			// for every command that loads policies.
			abs, err := filepath.Abs(p)
			if err != nil {
				return failuref("--policy %s: %w", p, err)
			}
			srcs = append(slices.Clip(srcs), cue.PolicySource{Path: abs, Layer: cue.LayerUser})
		}
		more := vetPolicies(ctx, srcs)
		more = append(more, vetPlugins(ctx, res.Config)...)
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(more) > 0 {
			res.Diagnostics = append(res.Diagnostics, more...)
			res.Diagnostics.Sort()
		}
		failed := res.Diagnostics.HasErrors() || (failOn == "warning" && res.Diagnostics.Count(cue.SeverityWarning) > 0)
		if err := w(e.stdout, res, vetOutput{quiet: quiet, ok: !failed}); err != nil {
			return failuref("write output: %w", err)
		}
		if failed {
			return errFindings
		}
		return nil
	}
	return c
}

// summaryLine says what vet found, for the text format.
func summaryLine(res *cue.Result) string {
	found := 0
	for _, f := range res.Files {
		if f.Found {
			found++
		}
	}
	return fmt.Sprintf("%d error(s), %d warning(s) in %d file(s)",
		res.Diagnostics.Count(cue.SeverityError), res.Diagnostics.Count(cue.SeverityWarning), found)
}

// untrustedProjectPolicies returns the policies the project layers would
// add if trusted, when they are not: vet checks an untrusted project as
// if it were trusted, and cue leaves an untrusted layer's policies out of
// the config.
func untrustedProjectPolicies(ctx context.Context, e *env, res *cue.Result, opts *cue.Options) ([]cue.PolicySource, error) {
	if res.Trust.Trusted || !slices.ContainsFunc(res.Files, func(f cue.FileStatus) bool { return f.Found && f.Layer.IsProject() }) {
		return nil, nil
	}
	o := *opts
	o.Approve, o.NoApprove = true, false
	trusted, err := cue.Load(ctx, cue.Locations{Home: e.g.home, Project: e.g.project}, &o)
	if err != nil {
		return nil, err
	}
	var out []cue.PolicySource
	for _, p := range trusted.Config.Policies {
		if p.Layer.IsProject() {
			out = append(out, p)
		}
	}
	return out, nil
}

// vetPolicy is one settings.policies entry as vet checks it.
type vetPolicy struct {
	src cue.PolicySource
	// path is the policy as shown and loaded: relative to the working
	// directory when the config file is shown that way.
	path  string
	index int  // in its file's settings.policies, or among the --policy flags
	flag  bool // named by --policy, not by a config file
}

// vetPolicies compiles the policies srcs name through the gateway's own
// loader (engine.LoadPolicies), and reports each entry that keeps them
// from loading. When the
// whole set fails, entries are added one at a time so that each error is
// reported at the entry whose policy causes it, including an entry that
// only conflicts with an earlier one.
func vetPolicies(ctx context.Context, srcs []cue.PolicySource) cue.Diagnostics {
	if len(srcs) == 0 {
		return nil
	}
	entries := make([]vetPolicy, len(srcs))
	perFile := map[string]int{}
	for i, s := range srcs {
		entries[i] = vetPolicy{src: s, path: shownPath(s.Path, s.At.File), index: perFile[s.At.File]}
		perFile[s.At.File]++
	}
	flags := 0
	for i := range entries {
		if entries[i].src.At.File == "" {
			entries[i].index, entries[i].flag = flags, true
			flags++
		}
	}
	load := func(es []vetPolicy) error {
		srcs := make([]cue.PolicySource, len(es))
		for i, en := range es {
			srcs[i] = en.src
			srcs[i].Path = en.path
		}
		_, err := engine.LoadPolicies(ctx, nil, srcs, nil)
		return err
	}
	all := load(entries)
	if all == nil || ctx.Err() != nil {
		return nil
	}
	var ds cue.Diagnostics
	var good []vetPolicy
	for _, en := range entries {
		if err := load(append(slices.Clip(good), en)); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			ds = append(ds, policyDiagnostic(en, err))
			continue
		}
		good = append(good, en)
	}
	if len(ds) == 0 {
		// Each entry loads on top of the others, yet not all together:
		// say so at the first rather than pass a set that fails.
		ds = append(ds, policyDiagnostic(entries[0], all))
	}
	return ds
}

func policyDiagnostic(en vetPolicy, err error) cue.Diagnostic {
	what, hint := "policy", "while a policy does not load the gateway fails closed and denies every call; voltmcp policy test "+en.path+" checks it"
	if en.src.Layer.IsProject() {
		what, hint = "project policy (deny rules only)", "while a policy does not load the gateway fails closed and denies every call"
	}
	path := fmt.Sprintf("settings.policies[%d]", en.index)
	if en.flag {
		path = fmt.Sprintf("--policy[%d]", en.index)
	}
	return cue.Diagnostic{
		Severity: cue.SeverityError, Code: cue.CodePolicyError, Layer: en.src.Layer, Position: en.src.At,
		Path:    path,
		Message: fmt.Sprintf("%s %s does not load: %s", what, en.path, strings.TrimPrefix(err.Error(), "load policies: ")),
		Hint:    hint,
	}
}

// vetPlugins loads every module settings.plugins names through the
// gateway's own loader (engine.LoadPlugin), with its own limits, which
// checks it and compiles it, without calling it. Compiled code stays in
// memory: vet writes no cache.
func vetPlugins(ctx context.Context, cfg *cue.Config) cue.Diagnostics {
	if len(cfg.Settings.Plugins.Classifiers)+len(cfg.Settings.Plugins.Shapers) == 0 {
		return nil
	}
	h, err := wasm.NewHost(ctx, &wasm.Options{PoolSize: 1})
	if err != nil {
		return cue.Diagnostics{{Severity: cue.SeverityError, Code: cue.CodePluginError, Path: "settings.plugins",
			Message: fmt.Sprintf("plugins cannot be checked: %v", err)}}
	}
	defer h.Close(context.WithoutCancel(ctx))
	var ds cue.Diagnostics
	for _, list := range []struct {
		key     string
		plugins []cue.Plugin
		export  string
	}{
		{"classifiers", cfg.Settings.Plugins.Classifiers, wasm.ExportClassify},
		{"shapers", cfg.Settings.Plugins.Shapers, wasm.ExportShape},
	} {
		origin := cfg.Sources["settings.plugins."+list.key]
		for i, pl := range list.plugins {
			if ctx.Err() != nil {
				return nil
			}
			shown := pl
			shown.Path = shownPath(pl.Path, origin.File)
			_, err := engine.LoadPlugin(ctx, h, shown, list.export)
			if err == nil || ctx.Err() != nil {
				continue
			}
			field := "path"
			if pe := (*wasm.PinError)(nil); errors.As(err, &pe) {
				field = "sha256"
			}
			hint := "the gateway refuses the module; voltmcp plugin check " + shownPath(pl.Path, origin.File) + " shows what it imports and exports"
			if field == "sha256" {
				hint = "the gateway refuses the module; pin the new digest only if you rebuilt or updated it yourself"
			}
			ds = append(ds, cue.Diagnostic{
				Severity: cue.SeverityError, Code: cue.CodePluginError, Layer: origin.Layer,
				Position: itemPosition(origin, i, field), Path: fmt.Sprintf("settings.plugins.%s[%d].%s", list.key, i, field),
				Message: err.Error(), Hint: hint,
			})
		}
	}
	return ds
}

// shownPath returns abs, a path the loader made absolute against the
// directory of configFile, as relative to the working directory as
// configFile is shown, so that output holds no path of this machine the
// user did not write.
func shownPath(abs, configFile string) string {
	dir := filepath.Dir(configFile)
	if configFile == "" || filepath.IsAbs(dir) {
		return abs
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return abs
	}
	rel, err := filepath.Rel(absDir, abs)
	if err != nil {
		return abs
	}
	return filepath.Join(dir, rel)
}

// itemPosition finds the key field of item index of the JSON array the
// origin points at (cue records an array's origin, not its items'), and
// falls back to the item, then to the array itself.
func itemPosition(origin cue.Origin, index int, field string) cue.Position {
	data, err := safefile.ReadFile(origin.File, &safefile.ReadOptions{MaxSize: cue.MaxFileSize})
	if err != nil {
		return origin.Position
	}
	off, ok := arrayItemKey(data, origin.Offset, index, field)
	if !ok {
		return origin.Position
	}
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	col := off - (bytes.LastIndexByte(data[:off], '\n') + 1) + 1
	return cue.Position{File: origin.File, Line: line, Col: col, Offset: off}
}

// arrayItemKey returns the offset of key in the object that is item index
// of the array starting at off, or of the item when it has no such key.
func arrayItemKey(data []byte, off, index int, key string) (int, bool) {
	if off < 0 || off >= len(data) || data[off] != '[' {
		return 0, false
	}
	dec := json.NewDecoder(bytes.NewReader(data[off:]))
	next := func() int { // where the next token starts
		i := off + int(dec.InputOffset())
		for i < len(data) && strings.IndexByte(" \t\r\n,:", data[i]) >= 0 {
			i++
		}
		return i
	}
	if _, err := dec.Token(); err != nil {
		return 0, false
	}
	for i := 0; dec.More(); i++ {
		start := next()
		if i < index {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return 0, false
			}
			continue
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return start, true
		}
		for dec.More() {
			at := next()
			k, err := dec.Token()
			if err != nil {
				return start, true
			}
			if k == key {
				return at, true
			}
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return start, true
			}
		}
		return start, true
	}
	return 0, false
}
