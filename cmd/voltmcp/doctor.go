package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine"
	"github.com/voltmcp/voltmcp/redact"
)

// The doctor's findings are cue diagnostics, as vet's are, with these
// codes; the hint is the fix.
const (
	codeCommandMissing cue.Code = "command-not-found"
	codeEnvUnset       cue.Code = "env-unset"
	codeNoAnswer       cue.Code = "server-not-answering"
	codeNeverListed    cue.Code = "cache-never-listed"
	codeCacheStale     cue.Code = "cache-stale"
	codeUntrusted      cue.Code = "project-untrusted"
)

// doctorHTTPTimeout bounds the request doctor sends an HTTP server.
const doctorHTTPTimeout = 10 * time.Second

func doctorCommand() *command {
	var asJSON bool
	c := &command{
		name:    "doctor",
		summary: "check what vet cannot: commands on PATH, env variables, HTTP servers, cache age",
		usage: `Usage: voltmcp doctor [--json]

Checks each enabled server of the effective config for what a config file
cannot show (vet checks the files):

  - a stdio server's command is found, in the PATH of the environment the
    gateway gives the server (yours, unless the server's env sets PATH);
  - every ${env:NAME} its config references is set (names only, never
    values);
  - an HTTP or SSE server answers a HEAD request within 10s (any HTTP
    status but a server error counts; no header or credential is sent);
  - its metadata cache was listed, and is younger than its
    metadataRefreshMs.

The servers of a project that is not trusted are listed as untrusted and
not contacted. One line per finding, with its fix; exit 1 when there are
findings, 0 when there are none. --json prints the findings as vet's
diagnostics, the fix in "hint".

Examples:
  voltmcp doctor
  voltmcp doctor --approve --json | jq -r '.[].code'`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&asJSON, "json", false, "print the findings as JSON")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usageErrorf("doctor takes no arguments")
		}
		eng, err := openEngine(ctx, e)
		if err != nil {
			return err
		}
		defer eng.Close()
		lookup := func(k string) (string, bool) {
			v := e.getenv(k)
			return v, v != ""
		}
		cfg := eng.Config()
		ds := doctorUntrusted(ctx, e, eng)
		checked := 0
		for _, srv := range cfg.Servers {
			if !srv.Enabled || srv.Invalid {
				continue
			}
			checked++
			ds = append(ds, doctorServer(ctx, eng, cfg, srv, lookup)...)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if asJSON {
			if ds == nil {
				ds = cue.Diagnostics{}
			}
			if err := writeJSONValue(e.stdout, ds); err != nil {
				return failuref("write output: %w", err)
			}
		} else {
			writeDoctor(e.stdout, ds, checked)
		}
		if len(ds) > 0 {
			return errFindings
		}
		return nil
	}
	return c
}

// writeDoctor prints one line a finding: where (the file and field, as
// vet prints them), what, and the fix.
func writeDoctor(w io.Writer, ds cue.Diagnostics, checked int) {
	for _, d := range ds {
		line := clean(d.String())
		if d.Hint != "" {
			line += "; fix: " + clean(d.Hint)
		}
		fmt.Fprintln(w, line)
	}
	if len(ds) == 0 {
		fmt.Fprintf(w, "no findings: %d enabled server(s) checked\n", checked)
		return
	}
	fmt.Fprintf(w, "%d finding(s) in %d enabled server(s)\n", len(ds), checked)
}

// finding is a doctor diagnostic at a server's field.
func finding(cfg *cue.Config, srv cue.Server, field string, sev cue.Severity, code cue.Code, fix, format string, args ...any) cue.Diagnostic {
	path := "servers." + srv.ID
	o, ok := cfg.Sources[path+"."+field]
	if !ok {
		if o, ok = cfg.Sources[path]; !ok {
			o = cue.Origin{Layer: srv.Layer, Position: cue.Position{File: srv.File}}
		}
	}
	if field != "" {
		path += "." + field
	}
	return cue.Diagnostic{Severity: sev, Code: code, Layer: o.Layer, Position: o.Position, Path: path,
		Message: fmt.Sprintf(format, args...), Hint: fix}
}

// doctorServer checks one enabled server.
func doctorServer(ctx context.Context, eng *engine.Engine, cfg *cue.Config, srv cue.Server, lookup func(string) (string, bool)) cue.Diagnostics {
	var ds cue.Diagnostics
	unset := map[string]bool{}
	for _, ref := range engine.UnsetEnv(srv, lookup) {
		unset[ref.Name] = true
		how := "referenced as ${env:" + ref.Name + "}"
		if ref.Field == "auth.variable" {
			how = "named by auth.variable"
		}
		ds = append(ds, finding(cfg, srv, ref.Field, cue.SeverityError, codeEnvUnset, "export "+ref.Name+"=…",
			"environment variable %s is not set (%s)", ref.Name, how))
	}
	var d cue.Diagnostic
	var broken bool
	if srv.IsStdio() {
		d, broken = doctorCommandPath(cfg, srv, lookup)
	} else {
		d, broken = doctorHTTP(ctx, cfg, srv, lookup, unset)
	}
	if broken {
		ds = append(ds, d)
	}
	// A server that cannot start or be reached cannot be listed either:
	// its cache is worth a line once it can.
	if sum, err := eng.Server(srv.ID); err == nil && !broken && len(unset) == 0 {
		switch {
		case sum.MetadataFetchedAt == nil:
			ds = append(ds, finding(cfg, srv, "", cue.SeverityWarning, codeNeverListed, "voltmcp refresh "+srv.ID,
				"never listed: search finds none of its tools"))
		case sum.MetadataStale:
			age := time.Since(*sum.MetadataFetchedAt).Round(time.Minute)
			ds = append(ds, finding(cfg, srv, "", cue.SeverityWarning, codeCacheStale, "voltmcp refresh "+srv.ID,
				"the metadata cache is %s old, older than metadataRefreshMs (%s)", age, time.Duration(srv.MetadataRefreshMs)*time.Millisecond))
		}
	}
	return ds
}

// doctorCommandPath checks that a stdio server's program is there, as
// the gateway resolves it (engine.ResolveCommand), which reads only the
// command, the cwd and the PATH of the server's env: a variable unset in
// another field does not hide the program. When one of those three
// references an unset variable, the program cannot be located, and the
// env-unset finding says so alone.
func doctorCommandPath(cfg *cue.Config, srv cue.Server, lookup func(string) (string, bool)) (cue.Diagnostic, bool) {
	shown := clean(srv.Command)
	path, err := engine.ResolveCommand(srv, lookup)
	if missing := (*cue.MissingEnvError)(nil); errors.As(err, &missing) {
		return cue.Diagnostic{}, false
	}
	if err == nil {
		st, serr := os.Stat(path)
		switch {
		case serr != nil:
			err = errors.New("no such file")
		case st.IsDir() || st.Mode()&0o111 == 0:
			err = errors.New("not an executable file")
		}
	}
	if err == nil {
		return cue.Diagnostic{}, false
	}
	if !strings.ContainsRune(srv.Command, '/') && !strings.ContainsRune(srv.Command, filepath.Separator) {
		return finding(cfg, srv, "command", cue.SeverityError, codeCommandMissing, installHint(srv.Command),
			"command %q is not in PATH (the PATH the gateway gives the server)", shown), true
	}
	return finding(cfg, srv, "command", cue.SeverityError, codeCommandMissing, "install it, or correct the path in command",
		"command %q: %s", shown, clean(err.Error())), true
}

// installHint says how to get a missing command.
func installHint(command string) string {
	switch command {
	case "npx", "node", "npm":
		return "install Node.js, which provides npx (https://nodejs.org), or give command as an absolute path"
	case "uvx", "uv":
		return "install uv, which provides uvx (https://docs.astral.sh/uv/), or give command as an absolute path"
	case "docker":
		return "install Docker (https://docs.docker.com/get-docker/), or give command as an absolute path"
	case "python", "python3":
		return "install Python 3, or give command as an absolute path"
	}
	return "install " + command + " (for an npm package, npm i -g PACKAGE), or give command as an absolute path"
}

// doctorHTTP sends an HTTP server one HEAD request, with no header the
// config names and no credential: any answer but a server error (5xx
// other than 501) counts. Redirects are not followed.
func doctorHTTP(ctx context.Context, cfg *cue.Config, srv cue.Server, lookup func(string) (string, bool), unset map[string]bool) (cue.Diagnostic, bool) {
	for _, n := range cue.EnvRefs(srv.URL) {
		if unset[n] {
			return cue.Diagnostic{}, false
		}
	}
	raw, err := cue.ExpandEnv(srv.URL, lookup)
	if err != nil {
		return cue.Diagnostic{}, false
	}
	// Shown as the config spells it, credentials redacted; values from
	// the environment never are.
	shown := clean(cue.RedactURL(srv.URL))
	var secrets []string
	for _, n := range cue.EnvRefs(srv.URL) {
		v, _ := lookup(n)
		secrets = append(secrets, v)
	}
	scrub := redact.NewScrubber("[redacted]", secrets...)
	fail := func(format string, args ...any) (cue.Diagnostic, bool) {
		msg := scrub.Text(fmt.Sprintf(format, args...))
		return finding(cfg, srv, "url", cue.SeverityError, codeNoAnswer, "start the server, or correct url; voltmcp status "+srv.ID+" shows its last error",
			"%s %s", shown, clean(msg)), true
	}
	rctx, cancel := context.WithTimeout(ctx, doctorHTTPTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodHead, raw, nil)
	if err != nil {
		return fail("is not a URL voltmcp can request")
	}
	client := &http.Client{
		Transport:     &http.Transport{Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err // its message quotes the URL as expanded
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fail("does not answer within %s", doctorHTTPTimeout)
		}
		return fail("does not answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented {
		return fail("answers with a server error: %s", resp.Status)
	}
	return cue.Diagnostic{}, false
}

// doctorUntrusted lists the servers of a project whose config is not
// trusted: they are not loaded, so not checked and not contacted.
func doctorUntrusted(ctx context.Context, e *env, eng *engine.Engine) cue.Diagnostics {
	if !slices.ContainsFunc(eng.Diagnostics(), func(d cue.Diagnostic) bool { return d.Code == cue.CodeProjectIgnored }) {
		return nil
	}
	res, err := cue.Load(ctx, cue.Locations{Home: e.g.home, Project: e.g.project}, &cue.Options{Surface: cue.SurfaceInteractive, Approve: true})
	if err != nil {
		return nil
	}
	var ds cue.Diagnostics
	for _, s := range res.Config.Servers {
		if !s.Layer.IsProject() {
			continue
		}
		d := finding(res.Config, s, "", cue.SeverityWarning, codeUntrusted, "voltmcp trust (after reading what it would run)",
			"untrusted: the project's MCP config is not trusted, so this server was not checked or contacted")
		ds = append(ds, d)
	}
	return ds
}
