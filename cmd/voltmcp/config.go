package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/cue"
)

func configCommand() *command {
	var asJSON bool
	c := &command{
		name:    "config",
		summary: "show the effective MCP config and where each value comes from",
		usage: `Usage: voltmcp config show [--json]

Prints the config voltmcp would run with: the four layers merged, defaults
filled in, and each value's source (layer, file:line:col, or "default").
Project layers count only when trusted (see --approve). Secrets print as
their ${env:NAME} references; literal secrets print as <redacted>. Exits 1
when the config has errors (servers with errors are disabled).

Examples:
  voltmcp config show
  voltmcp config show --json --approve | jq '.servers.github'`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&asJSON, "json", false, "print JSON")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) != 1 || args[0] != "show" {
			return usageErrorf("want 'voltmcp config show'")
		}
		res, err := cue.Load(ctx, cue.Locations{Home: e.g.home, Project: e.g.project},
			&cue.Options{Surface: cue.SurfaceInteractive, Approve: e.g.approve, NoApprove: e.g.noApprove,
				TrustStore: filepath.Join(e.g.agentDir, cue.TrustStoreFile)})
		if err != nil {
			return failuref("%w", err)
		}
		cfg := res.Config.Redacted()
		write := writeConfigText
		if asJSON {
			write = writeConfigJSON
		}
		if err := write(e.stdout, res, cfg); err != nil {
			return failuref("write output: %w", err)
		}
		if res.Diagnostics.HasErrors() {
			return errFindings // the errors are in the output; invalid servers are disabled
		}
		return nil
	}
	return c
}

func writeConfigJSON(w io.Writer, res *cue.Result, cfg *cue.Config) error {
	servers := map[string]cue.Server{}
	for _, s := range cfg.Servers {
		servers[s.ID] = s
	}
	diags := res.Diagnostics
	if diags == nil {
		diags = cue.Diagnostics{}
	}
	out := struct {
		Settings    cue.Settings          `json:"settings"`
		Servers     map[string]cue.Server `json:"servers"`
		Sources     map[string]cue.Origin `json:"sources"`
		Files       []cue.FileStatus      `json:"files"`
		Trust       *cue.TrustDecision    `json:"trust,omitempty"`
		Diagnostics cue.Diagnostics       `json:"diagnostics"`
	}{cfg.Settings, servers, cfg.Sources, res.Files, nil, diags}
	if res.Trust.Reason != "" {
		out.Trust = &res.Trust
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// writeConfigText prints one "path = value  # source" line per value.
func writeConfigText(w io.Writer, res *cue.Result, cfg *cue.Config) error {
	var b strings.Builder
	for _, f := range res.Files {
		state := "not found"
		switch {
		case f.Found && f.Loaded:
			state = "loaded (" + string(f.Dialect) + ")"
		case f.Found:
			state = "not loaded: " + f.Reason
		}
		fmt.Fprintf(&b, "# %-14s %s: %s\n", f.Layer, f.Path, state)
	}
	var flat []string
	flatten(&flat, "settings", cfg.Settings)
	for _, s := range cfg.Servers {
		v := map[string]any{}
		_ = json.Unmarshal(marshalPlain(s), &v)
		for _, k := range []string{"id", "key", "layer", "file", "baseDir"} {
			delete(v, k)
		}
		flatten(&flat, cue.JoinPath("servers", s.ID), v)
	}
	width := 0
	for _, line := range flat {
		width = max(width, len(line))
	}
	for _, line := range flat {
		path := line[:strings.Index(line, " = ")]
		src := "derived"
		if o, ok := cfg.Sources[path]; ok {
			src = o.String()
		} else if o, ok := cfg.Sources[parentPath(path)]; ok {
			src = o.String()
		}
		fmt.Fprintf(&b, "%-*s  # %s\n", width, line, src)
	}
	for _, d := range res.Diagnostics {
		if d.Severity != cue.SeverityInfo {
			fmt.Fprintf(&b, "%s\n", d)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// parentPath drops the last element of a flattened path, so list items
// find the source of their list.
func parentPath(p string) string {
	if i := strings.LastIndexAny(p, ".["); i > 0 {
		return p[:i]
	}
	return p
}

// flatten renders v as sorted "path = json" lines; lists stay whole.
func flatten(out *[]string, path string, v any) {
	raw := marshalPlain(v)
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m == nil {
		*out = append(*out, path+" = "+string(raw))
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		flatten(out, cue.JoinPath(path, k), m[k])
	}
}

// marshalPlain encodes v as JSON without escaping <, > and &, which are
// not HTML here: "<redacted>" should read as written.
func marshalPlain(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // values here are plain data and always encode
	return bytes.TrimRight(b.Bytes(), "\n")
}
