package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/policies"
	"github.com/voltmcp/voltmcp/redact"
	"github.com/voltmcp/voltmcp/safefile"
	"github.com/voltmcp/voltmcp/wasm"
)

// This file prepares what a guard decides with, in the background from
// newGuard: the policies first, then the plugins. LoadPolicies and
// LoadPlugin are the loaders it uses; `voltmcp vet` calls them too, so
// that what the gateway refuses vet refuses, with the same error.

// prepare loads the policies and sets up the plugins, and marks each
// ready; then, once warmPlugins asks, it compiles the plugins that
// compile on their first call. ctx ends when the guard closes.
func (g *guard) prepare(ctx context.Context) {
	defer close(g.prepared)
	var chain *wasm.Chain
	func() {
		defer close(g.plugReady)
		g.loadPolicies(ctx)
		close(g.polReady)
		g.setUpPlugins(ctx)
		chain = g.chain // read before plugReady: others may read it after
	}()
	select {
	case <-g.warm:
		g.compilePlugins(ctx, chain)
	case <-ctx.Done():
	}
}

// warmPlugins has the guard's preparation compile the modules of its
// chain in the background, once: a server is starting, and the calls
// that follow rate its tools and shape their results, so the compile
// (the built-in module's, which setUpPlugins leaves to its first call)
// overlaps the server's start rather than the first call's answer.
func (g *guard) warmPlugins() {
	g.warmOnce.Do(func() { close(g.warm) })
}

// compilePlugins compiles the modules of chain not compiled yet. A
// module that does not compile is reported as setUpPlugins reports one;
// its calls then fault (see setUpPlugins).
func (g *guard) compilePlugins(ctx context.Context, chain *wasm.Chain) {
	if chain == nil {
		return
	}
	for _, m := range slices.Concat(chain.Classifiers, chain.Shapers) {
		if m.Compiled() {
			continue
		}
		if err := m.Compile(ctx); err != nil && ctx.Err() == nil {
			g.e.pluginLoadFailed(m.Name(), err)
		}
	}
}

// loadPolicies sets pol and polErr: Options.Policies when set, else the
// set LoadPolicies loads from Options.PolicyDirs and settings.policies.
func (g *guard) loadPolicies(ctx context.Context) {
	if g.e.opts.Policies != nil {
		g.pol.Store(g.e.opts.Policies)
		return
	}
	pol, err := LoadPolicies(ctx, g.e.opts.PolicyDirs, g.cfg.Policies, g.secrets)
	g.pol.Store(pol)
	g.polErr = err
	if g.polErr != nil && ctx.Err() == nil {
		g.e.log.Error("policies failed to load; every decision denies", "err", g.polErr)
	}
}

// setUpPlugins starts the wasm host and loads and compiles the chain of
// configured modules into it. A classifier that does not load sets
// plugErr, so that every tool is rated unknown rather than by a chain
// that lacks the team's own rules; a shaper that does not load leaves
// the native sanitizer and cap.
func (g *guard) setUpPlugins(ctx context.Context) {
	g.chain = &wasm.Chain{}
	// fp lists what each classifier of the chain rates with, in order.
	var fp []string
	defer func() {
		h := sha256.New()
		for _, f := range fp {
			fmt.Fprintf(h, "%d:%s\n", len(f), f)
		}
		g.plugFP = hex.EncodeToString(h.Sum(nil))
	}()
	cacheDir := g.e.opts.PluginCacheDir
	if cacheDir == "" {
		home := g.e.opts.Home
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		cacheDir = DefaultPluginCacheDir(home, g.e.lookup)
	}
	host, err := wasm.NewHost(ctx, &wasm.Options{CacheDir: cacheDir, OnFault: g.e.pluginFault})
	if err != nil && cacheDir != "" {
		// An unusable cache directory costs compile time, not safety.
		host, err = wasm.NewHost(ctx, &wasm.Options{OnFault: g.e.pluginFault})
	}
	if err != nil {
		g.plugErr = err
		return
	}
	g.host = host
	closed := func() bool {
		if ctx.Err() != nil {
			g.plugErr = errors.New("the engine closed")
			return true
		}
		return false
	}
	set := g.cfg.Settings.Plugins
	for _, p := range set.Classifiers {
		if closed() {
			return
		}
		m, err := LoadPlugin(ctx, host, p, wasm.ExportClassify)
		if err != nil {
			g.plugErr = err
			g.e.pluginLoadFailed(p.Path, err)
			continue
		}
		g.chain.Classifiers = append(g.chain.Classifiers, m)
		fp = append(fp, fmt.Sprintf("%s timeoutMs=%d memoryPages=%d", m.SHA256(), p.TimeoutMs, p.MemoryPages))
	}
	for _, p := range set.Shapers {
		if closed() {
			return
		}
		m, err := LoadPlugin(ctx, host, p, wasm.ExportShape)
		if err != nil {
			g.e.pluginLoadFailed(p.Path, err)
			continue
		}
		g.chain.Shapers = append(g.chain.Shapers, m)
	}
	if !set.Builtin || closed() {
		return
	}
	// The built-in module is checked here and compiled on its first call
	// (a tool rated, a result shaped), not here: a gateway whose ratings
	// are stored with its cached listings and that answers no call holds
	// no compiled code. A compile that fails then is a fault of that
	// call, which rates the tool unknown and shapes with the native
	// sanitizer, as any fault of the module does.
	m, err := host.Builtin(ctx)
	if err != nil {
		if closed() {
			return
		}
		g.plugErr = err
		g.e.pluginLoadFailed(wasm.BuiltinName, err)
		return
	}
	g.chain.Classifiers = append(g.chain.Classifiers, m)
	g.chain.Shapers = append(g.chain.Shapers, m)
	fp = append(fp, "builtin "+m.SHA256())
}

// LoadPolicies loads the Rego policy set the gateway decides with: the
// built-in bundle, dirs (Options.PolicyDirs, the CLI's --policy) as user
// policies, and the files and directories srcs name (settings.policies),
// as user policies or, from a project layer, as deny-only project
// policies. A project's policies load from the bytes cue.Load read and
// project trust hashed (PolicySource.Files), never from the files as they
// are now. Every reason of its decisions is scrubbed of the values scrub
// knows (nil: none). A set that fails to load is returned with the error,
// and answers every decision by failing closed. `voltmcp vet` checks a
// config's policies with it.
func LoadPolicies(ctx context.Context, dirs []string, srcs []cue.PolicySource, scrub *redact.Scrubber) (*policies.Policies, error) {
	opts := &policies.Options{Dirs: slices.Clone(dirs), Scrub: scrub}
	for _, p := range srcs {
		if !p.Layer.IsProject() {
			opts.Dirs = append(opts.Dirs, p.Path)
			continue
		}
		switch {
		case p.Err != nil:
			opts.ProjectFiles = append(opts.ProjectFiles, policies.File{Name: p.Path, Err: p.Err})
		case len(p.Files) == 0:
			opts.ProjectFiles = append(opts.ProjectFiles, policies.File{Name: p.Path, Err: fmt.Errorf("policy path %s: its files were not read with the config", p.Path)})
		}
		for _, f := range p.Files {
			opts.ProjectFiles = append(opts.ProjectFiles, policies.File{Name: f.Path, Data: f.Data})
		}
	}
	return policies.Load(ctx, opts)
}

// LoadPlugin loads one module of settings.plugins into h as the gateway
// does: it reads p.Path (a regular file, see [wasm.ReadModule]), checks
// its content against p.SHA256, the ABI and its memory against its page
// limit, and compiles it, without running any of its code. The module's
// calls are bounded by p.TimeoutMs and its memory by p.MemoryPages (zero:
// h's defaults). export is the function its list needs
// ([wasm.ExportClassify] for a classifier, [wasm.ExportShape] for a
// shaper; "" needs none). The error names the module by p.Path; it wraps
// a *wasm.PinError when the content does not match the pin. `voltmcp
// vet` and `voltmcp plugin` load modules with it.
func LoadPlugin(ctx context.Context, h *wasm.Host, p cue.Plugin, export string) (*wasm.Module, error) {
	bin, err := wasm.ReadModule(p.Path)
	if err != nil {
		return nil, &pluginError{fmt.Sprintf("plugin %s cannot be read: %v", p.Path, safefile.Pathless(err)), err}
	}
	if p.MemoryPages < 0 || p.MemoryPages > 65536 {
		return nil, &pluginError{fmt.Sprintf("plugin %s: memoryPages %d is not between 1 and 65536", p.Path, p.MemoryPages), nil}
	}
	m, err := h.Load(ctx, p.Path, bin, &wasm.LoadOptions{SHA256: p.SHA256, Timeout: ms(p.TimeoutMs), MemoryPages: uint32(p.MemoryPages)})
	if err != nil {
		var pe *wasm.PinError
		if errors.As(err, &pe) {
			return nil, &pluginError{fmt.Sprintf("plugin %s has sha256 %s, which does not match its pin %s", p.Path, pe.SHA256, pe.Pin), err}
		}
		return nil, &pluginError{strings.TrimPrefix(err.Error(), "wasm: "), err}
	}
	if err := m.Compile(ctx); err != nil {
		return nil, &pluginError{fmt.Sprintf("module %s: %v", p.Path, err), err}
	}
	switch {
	case export == wasm.ExportClassify && !m.CanClassify(), export == wasm.ExportShape && !m.CanShape():
		return nil, &pluginError{fmt.Sprintf("module %s does not export %s, which its list needs", p.Path, export), nil}
	}
	return m, nil
}

// pluginError is an error of LoadPlugin: a message in the words vet
// shows, and the error it stands for.
type pluginError struct {
	msg string
	err error
}

func (e *pluginError) Error() string { return e.msg }

func (e *pluginError) Unwrap() error { return e.err }

// DefaultPluginCacheDir is the directory of the plugins' compilation
// cache when Options.PluginCacheDir is zero: voltmcp/wasm under the user
// cache directory, which is $XDG_CACHE_HOME when lookupEnv gives an
// absolute path for it, else .cache under home. It is "" when neither
// is known (a nil lookupEnv looks nothing up); compiled code then stays
// in memory. The CLI's commands use it for their cache too.
func DefaultPluginCacheDir(home string, lookupEnv func(string) (string, bool)) string {
	if lookupEnv != nil {
		if d, ok := lookupEnv("XDG_CACHE_HOME"); ok && filepath.IsAbs(d) {
			return filepath.Join(d, "voltmcp", "wasm")
		}
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".cache", "voltmcp", "wasm")
}
