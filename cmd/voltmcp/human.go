package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/voltmcp/voltmcp/engine"
	"github.com/voltmcp/voltmcp/sanitize"
)

// The human renderings of the gateway commands whose result is data
// (search, describe, status, resources, prompts): each is drawn from the
// structured result, the same value --json prints, never from the text
// an agent reads. Every string in it may come from a server or a
// project's config, so each goes through clean (one line, one cell) or
// cleanBlock (a block of lines). A field a renderer does not know, one
// the engine added later, is shown as "name: value" at the end rather
// than dropped.

// humanRenderer returns the renderer of an action's result, or nil for
// an action whose result is text already (call, read_resource,
// get_prompt, read_cache) or one line (connect, disconnect).
func humanRenderer(action string) func(w io.Writer, f fields, in engine.GatewayInput) {
	switch action {
	case "search":
		return renderSearch
	case "describe":
		return renderDescribe
	case "status":
		return renderStatus
	case "list_resources":
		return renderResources
	case "list_prompts":
		return renderPrompts
	}
	return nil
}

// fields is a structured result as its JSON object's fields. A renderer
// takes the fields it shows; writeRest shows the others.
type fields map[string]json.RawMessage

// newFields turns a result (res.Data) into its fields.
func newFields(v any) (fields, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var f fields
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	return f, nil
}

// take decodes the field key into v and removes it. A field that is
// absent, or not of v's type, stays for writeRest, and take reports
// false.
func (f fields) take(key string, v any) bool {
	raw, ok := f[key]
	if !ok || json.Unmarshal(raw, v) != nil {
		return false
	}
	delete(f, key)
	return true
}

// drop removes fields a renderer shows in another way or not at all.
func (f fields) drop(keys ...string) {
	for _, k := range keys {
		delete(f, k)
	}
}

// writeRest shows the fields nobody took, sorted by name: a scalar as
// "name: value", an object or array as "name:" and its JSON indented.
func (f fields) writeRest(w io.Writer) {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		raw := bytes.TrimSpace(f[k])
		if len(raw) > 0 && (raw[0] == '{' || raw[0] == '[') {
			fmt.Fprintf(w, "%s:\n", clean(k))
			writeIndentedJSON(w, raw, "  ")
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(raw)
		}
		fmt.Fprintf(w, "%s: %s\n", clean(k), clean(s))
	}
}

// writeIndentedJSON writes a JSON value indented, each line after
// prefix, cleaned as a block.
func writeIndentedJSON(w io.Writer, raw json.RawMessage, prefix string) {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		b.Reset()
		b.Write(raw)
	}
	writeBlock(w, b.String(), prefix)
}

// writeBlock writes untrusted text as a block of lines, each after
// prefix.
func writeBlock(w io.Writer, text, prefix string) {
	for _, line := range strings.Split(strings.TrimRight(cleanBlock(text), "\n"), "\n") {
		fmt.Fprintf(w, "%s%s\n", prefix, strings.TrimRight(line, " \t"))
	}
}

// cell is untrusted text for one table cell: clean, and at most max
// characters, "…" included (no limit when max is 0).
func cell(s string, max int) string {
	s = clean(s)
	if s == "" {
		return "-"
	}
	if max > 0 {
		s, _ = sanitize.Text(s, max)
	}
	return s
}

// table is an aligned table: rows of cells, two spaces between columns.
// The cells are clean already (see cell).
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, head ...string) *table {
	t := &table{tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	if len(head) > 0 {
		t.row(head...)
	}
	return t
}

func (t *table) row(cells ...string) { fmt.Fprintln(t.tw, strings.Join(cells, "\t")) }

func (t *table) flush() { _ = t.tw.Flush() }

// writeMore takes the result's nextCursor and, when there is one, says
// which command prints the next page.
func writeMore(w io.Writer, f fields, command string) {
	var next string
	f.take("nextCursor", &next)
	if next != "" {
		fmt.Fprintf(w, "more: %s --cursor %s\n", command, shellQuote(clean(next)))
	}
}

// descWidth bounds a description in a table.
const descWidth = 72

func renderSearch(w io.Writer, f fields, in engine.GatewayInput) {
	var matches []engine.SearchMatch
	var query, note, hint string
	f.take("matches", &matches)
	f.take("query", &query)
	f.take("note", &note)
	f.take("hint", &hint)
	f.drop("action")
	if len(matches) == 0 {
		fmt.Fprintf(w, "no tool matches %s\n", clean(query))
	} else {
		t := newTable(w, "SERVER", "TOOL", "RISK", "DESCRIPTION")
		for _, m := range matches {
			desc := engine.PersonText(m.Server, m.Summary)
			if m.Title != "" && !strings.Contains(desc, m.Title) {
				desc = m.Title + ": " + desc
			}
			if m.Pending != "" {
				desc = "[pending approval: " + m.Pending + "] " + desc
			}
			t.row(cell(m.Server, 0), cell(m.Tool, 0), cell(string(m.Risk), 0), cell(desc, descWidth))
		}
		t.flush()
	}
	if note != "" {
		fmt.Fprintf(w, "note: %s\n", clean(note))
	}
	if hint != "" {
		fmt.Fprintf(w, "hint: %s\n", clean(cliCommands(hint)))
	}
	more := "voltmcp search " + shellQuote(clean(query))
	if in.Server != "" {
		more += " --server " + shellQuote(clean(in.Server))
	}
	if in.Limit > 0 {
		more += fmt.Sprintf(" --limit %d", in.Limit)
	}
	writeMore(w, f, more)
	f.writeRest(w)
	if len(matches) > 0 {
		fmt.Fprintln(w, "\nnext: voltmcp describe SERVER TOOL, then voltmcp call SERVER TOOL --args JSON")
	}
}

func renderDescribe(w io.Writer, f fields, in engine.GatewayInput) {
	var server, tool, title, desc, risk, why, hash, warning, tasks string
	var schema, output, ann json.RawMessage
	var cache *engine.CacheRef
	f.take("server", &server)
	f.take("tool", &tool)
	f.take("title", &title)
	f.take("description", &desc)
	f.take("risk", &risk)
	f.take("riskReason", &why)
	f.take("metadataHash", &hash)
	f.take("warning", &warning)
	f.take("inputSchema", &schema)
	f.take("outputSchema", &output)
	f.take("taskSupport", &tasks)
	f.take("annotations", &ann)
	f.take("cache", &cache)
	f.drop("call") // the agent's call; the CLI's is below
	head := clean(server) + " / " + clean(tool)
	if title != "" {
		head += " — " + clean(title)
	}
	fmt.Fprintln(w, head)
	t := newTable(w)
	r := cell(risk, 0)
	if why != "" {
		r += " (" + clean(why) + ")"
	}
	t.row("risk:", r)
	if len(ann) > 0 {
		t.row("hints:", cell(hintsText(ann, true), 0))
	}
	if tasks != "" {
		t.row("tasks:", cell(tasks, 0)+" (task support)")
	}
	t.row("metadata:", cell(hash, 0))
	t.flush()
	if warning != "" {
		fmt.Fprintf(w, "warning: %s\n", clean(warning))
	}
	if cache != nil && cache.ID != "" {
		fmt.Fprintf(w, "the whole schemas: voltmcp read-cache %s\n", shellQuote(clean(cache.ID)))
	}
	if desc = engine.PersonText(server, desc); desc != "" {
		fmt.Fprintln(w, "\ndescription:")
		writeBlock(w, desc, "  ")
	}
	fmt.Fprintln(w, "\ninput:")
	writeSchema(w, schema, "  ")
	if len(output) > 0 {
		fmt.Fprintln(w, "\noutput:")
		writeSchema(w, output, "  ")
	}
	if len(f) > 0 {
		fmt.Fprintln(w)
		f.writeRest(w)
	}
	fmt.Fprintf(w, "\ncall: voltmcp call %s %s --args JSON\n", shellQuote(clean(server)), shellQuote(clean(tool)))
}

// writeSchema shows an object schema's properties as a table (name,
// type, required, description), and any other schema as indented JSON.
func writeSchema(w io.Writer, raw json.RawMessage, prefix string) {
	var s struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		fmt.Fprintf(w, "%s(none)\n", prefix)
		return
	}
	if len(s.Properties) == 0 {
		var other map[string]json.RawMessage
		_ = json.Unmarshal(raw, &other)
		delete(other, "type")
		if len(other) == 0 {
			fmt.Fprintf(w, "%s(no arguments)\n", prefix)
			return
		}
		writeIndentedJSON(w, raw, prefix)
		return
	}
	req := map[string]bool{}
	for _, n := range s.Required {
		req[n] = true
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if req[names[i]] != req[names[j]] {
			return req[names[i]]
		}
		return names[i] < names[j]
	})
	t := newTable(w)
	for _, n := range names {
		var p struct {
			Description string `json:"description"`
		}
		_ = json.Unmarshal(s.Properties[n], &p)
		r := ""
		if req[n] {
			r = "required"
		}
		t.row(prefix+cell(n, 0), cell(schemaType(s.Properties[n]), 0), r, cell(p.Description, descWidth))
	}
	t.flush()
}

// schemaType names the type of a property's schema: its type (or types),
// "enum", "array of T", or "any".
func schemaType(raw json.RawMessage) string {
	var p struct {
		Type  any             `json:"type"`
		Enum  []any           `json:"enum"`
		Items json.RawMessage `json:"items"`
		AnyOf []any           `json:"anyOf"`
		OneOf []any           `json:"oneOf"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return "any"
	}
	var typ string
	switch t := p.Type.(type) {
	case string:
		typ = t
	case []any:
		var ts []string
		for _, x := range t {
			ts = append(ts, fmt.Sprint(x))
		}
		typ = strings.Join(ts, "|")
	}
	switch {
	case len(p.Enum) > 0:
		var vs []string
		for _, v := range p.Enum {
			vs = append(vs, compactJSON(v))
		}
		return "enum " + strings.Join(vs, "|")
	case typ == "array" && len(p.Items) > 0:
		return "array of " + schemaType(p.Items)
	case typ != "":
		return typ
	case len(p.AnyOf) > 0 || len(p.OneOf) > 0:
		return "one of several"
	}
	return "any"
}

// hintsText shows a tool's annotations: the behaviour hints as words
// (read-only, destructive, …), then, when all is set, any other
// annotation as name=value. They are the server's claims, not verified.
func hintsText(raw json.RawMessage, all bool) string {
	var a map[string]any
	if json.Unmarshal(raw, &a) != nil || len(a) == 0 {
		return ""
	}
	words := []struct{ key, yes, no string }{
		{"readOnlyHint", "read-only", "not read-only"},
		{"destructiveHint", "destructive", "non-destructive"},
		{"idempotentHint", "idempotent", "not idempotent"},
		{"openWorldHint", "open-world", "closed-world"},
	}
	var out []string
	for _, h := range words {
		if b, ok := a[h.key].(bool); ok {
			if b {
				out = append(out, h.yes)
			} else {
				out = append(out, h.no)
			}
			delete(a, h.key)
		}
	}
	if all {
		keys := make([]string, 0, len(a))
		for k := range a {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, k+"="+compactJSON(a[k]))
		}
	}
	return strings.Join(out, ", ")
}

func renderStatus(w io.Writer, f fields, in engine.GatewayInput) {
	if in.Server != "" {
		renderServer(w, f)
		return
	}
	var n int
	var by map[string]int
	var problems []map[string]string
	var issues []engine.MetadataIssue
	var au engine.AuditState
	var notes []string
	enabled := true
	f.take("servers", &n)
	f.take("byStatus", &by)
	f.take("problems", &problems)
	f.take("metadata", &issues)
	f.take("audit", &au)
	f.take("notes", &notes)
	f.take("enabled", &enabled)
	f.drop("action")
	t := newTable(w)
	gw := "on"
	if !enabled {
		gw = "turned off (see notes)"
	}
	t.row("gateway:", gw)
	var parts []string
	for st, c := range by {
		parts = append(parts, fmt.Sprintf("%d %s", c, clean(st)))
	}
	sort.Strings(parts)
	srv := fmt.Sprint(n)
	if len(parts) > 0 {
		srv += " (" + strings.Join(parts, ", ") + ")"
	}
	t.row("servers:", srv)
	a := cell(au.State, 0)
	if au.State == "failing" {
		since := ""
		if au.Since != nil {
			since = " since " + au.Since.Format(time.RFC3339)
		}
		a += fmt.Sprintf("%s, %d records lost: %s", since, au.Lost, clean(au.Error))
	}
	if au.OnFailure != "" {
		a += " (on failure: " + clean(au.OnFailure) + ")"
	}
	t.row("audit log:", a)
	t.flush()
	if len(problems) > 0 {
		fmt.Fprintln(w, "\nproblems:")
		pt := newTable(w)
		for _, p := range problems {
			what := p["error"]
			if p["fix"] != "" {
				what += "; fix: " + p["fix"]
			}
			pt.row("  "+cell(p["server"], 0), cell(p["status"], 0), cell(what, 0))
		}
		pt.flush()
		fmt.Fprintln(w, "  (voltmcp status SERVER shows one in full)")
	}
	if len(issues) > 0 {
		fmt.Fprintln(w, "\nmetadata:")
		for _, is := range issues {
			var what []string
			if len(is.Dropped) > 0 {
				what = append(what, fmt.Sprintf("%d dropped", len(is.Dropped)))
			}
			if len(is.Cleaned) > 0 {
				what = append(what, fmt.Sprintf("%d cleaned", len(is.Cleaned)))
			}
			if is.PendingChanges > 0 {
				what = append(what, fmt.Sprintf("%d tool changes wait for approval", is.PendingChanges))
			}
			if is.Quarantined {
				what = append(what, "quarantined")
			}
			if is.PinError != "" {
				what = append(what, "pins: "+is.PinError)
			}
			fmt.Fprintf(w, "  %s: %s\n", clean(is.Server), clean(strings.Join(what, "; ")))
			writeItems(w, "dropped", is.Dropped)
			writeItems(w, "cleaned", is.Cleaned)
			if is.More != "" {
				fmt.Fprintf(w, "    more: %s\n", clean(is.More))
			}
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, s := range notes {
			fmt.Fprintf(w, "  - %s\n", clean(s))
		}
	}
	if len(f) > 0 {
		fmt.Fprintln(w)
		f.writeRest(w)
	}
}

// writeItems lists what discovery dropped or cleaned.
func writeItems(w io.Writer, what string, items []engine.DroppedItem) {
	for _, it := range items {
		fmt.Fprintf(w, "    %s %s %s: %s\n", what, clean(it.Kind), clean(it.Name), clean(it.Reason))
	}
}

// renderServer shows one server in full (status SERVER): a
// ServerSummary.
func renderServer(w io.Writer, f fields) {
	var s engine.ServerSummary
	raw, _ := json.Marshal(f)
	_ = json.Unmarshal(raw, &s)
	// What the summary's fields cover is taken; the rest is shown as is.
	var known map[string]json.RawMessage
	b, _ := json.Marshal(s)
	_ = json.Unmarshal(b, &known)
	for k := range known {
		delete(f, k)
	}
	id := clean(s.ID)
	t := newTable(w)
	t.row("server:", id)
	if s.DisplayName != "" && s.DisplayName != s.ID {
		t.row("title:", cell(s.DisplayName, 0))
	}
	t.row("status:", cell(string(s.Status), 0))
	// Why a server does not run, and the fix (engine's Reason and Fix).
	if s.Reason != "" {
		t.row("why:", cell(s.Reason, 0))
		if s.Fix != "" {
			t.row("fix:", cell(s.Fix, 0))
		}
	}
	t.row("enabled:", yesNo(s.Enabled))
	t.row("transport:", cell(s.Transport, 0))
	t.row("lifecycle:", cell(s.Lifecycle, 0))
	t.row("source:", cell(s.SourceLabel, 0))
	// A server that cannot run (its Reason says why) cannot be listed:
	// refresh is no advice for it.
	tools := "never listed (voltmcp refresh " + id + " lists them)"
	if s.Reason != "" {
		tools = "never listed (not until it can run: see why)"
	}
	if s.MetadataFetchedAt != nil {
		tools = fmt.Sprintf("%d cached, listed %s", s.ToolCounts.Cached, s.MetadataFetchedAt.Format(time.RFC3339))
		if s.MetadataStale && s.Reason == "" {
			tools += " (stale: voltmcp refresh " + id + ")"
		} else if s.MetadataStale {
			tools += " (stale)"
		}
	}
	t.row("tools:", tools)
	t.row("resources:", fmt.Sprint(s.Resources))
	t.row("prompts:", fmt.Sprint(s.Prompts))
	if s.LastConnectedAt != nil {
		t.row("last connected:", s.LastConnectedAt.Format(time.RFC3339))
	}
	if s.LastError != "" {
		t.row("last error:", cell(s.LastError, 0))
	}
	if s.CacheError != "" {
		t.row("cache error:", cell(s.CacheError, 0))
	}
	if s.PendingChanges > 0 {
		t.row("pending:", fmt.Sprintf("%d tool changes wait for approval (voltmcp pins %s)", s.PendingChanges, id))
	}
	if s.Quarantined {
		t.row("quarantined:", "yes: held for review (voltmcp approve "+id+")")
	}
	if s.PinError != "" {
		t.row("pin error:", cell(s.PinError, 0))
	}
	if s.LogError != "" {
		t.row("log error:", cell(s.LogError, 0))
	}
	var can []string
	for _, c := range []struct {
		ok   bool
		name string
	}{{s.Capabilities.CanEnable, "enable/disable"}, {s.Capabilities.CanConnect, "connect"}, {s.Capabilities.CanDisconnect, "disconnect"}, {s.Capabilities.CanRefresh, "refresh"}} {
		if c.ok {
			can = append(can, c.name)
		}
	}
	if len(can) > 0 {
		t.row("actions:", strings.Join(can, ", "))
	}
	t.flush()
	if len(s.MetadataNotes) > 0 {
		fmt.Fprintln(w, "\nmetadata notes:")
		for _, n := range s.MetadataNotes {
			fmt.Fprintf(w, "  - %s\n", clean(n))
		}
	}
	if len(s.Dropped)+len(s.Cleaned) > 0 {
		fmt.Fprintln(w, "\nmetadata bounds:")
		writeItems(w, "dropped", s.Dropped)
		writeItems(w, "cleaned", s.Cleaned)
	}
	if s.Stderr != "" {
		fmt.Fprintf(w, "\nstderr (the last of %d bytes; the whole log: voltmcp logs %s):\n", s.StderrBytes, id)
		writeBlock(w, s.Stderr, "  ")
	}
	writeRecentCalls(w, s.RecentCalls)
	if len(f) > 0 {
		fmt.Fprintln(w)
		f.writeRest(w)
	}
}

// writeRecentCalls prints a server's recent calls, newest first: when,
// the tool, its risk, how it ended (the audit log's word when the
// spec's does not say it), how long it took and how much it returned,
// and why a call that did not complete ended as it did.
func writeRecentCalls(w io.Writer, calls []engine.RecentCall) {
	if len(calls) == 0 {
		fmt.Fprintln(w, "\nrecent calls: none recorded")
		return
	}
	fmt.Fprintf(w, "\nrecent calls (%d, newest first):\n", len(calls))
	t := newTable(w, "  TIME", "TOOL", "RISK", "STATUS", "TOOK", "OUTPUT", "WHY")
	for _, c := range calls {
		status := c.Status
		if c.Outcome != "" {
			status += " (" + c.Outcome + ")"
		}
		took, out := "", ""
		if c.Status != "started" {
			took = (time.Duration(c.DurationMs) * time.Millisecond).String()
		}
		if c.OutputBytes > 0 {
			out = fmt.Sprintf("%d B", c.OutputBytes)
			if c.Truncated {
				out += ", cut"
			}
		}
		t.row("  "+c.Timestamp.Local().Format(time.DateTime), cell(c.Tool, 40), cell(string(c.Risk), 0), cell(status, 0), took, out, cell(c.Reason, descWidth))
	}
	t.flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func renderResources(w io.Writer, f fields, in engine.GatewayInput) {
	var server string
	var rs []engine.Resource
	var ts []engine.ResourceTemplate
	f.take("server", &server)
	f.take("resources", &rs)
	f.take("templates", &ts)
	f.drop("action")
	if len(rs) == 0 && len(ts) == 0 {
		fmt.Fprintf(w, "server %s lists no resources\n", clean(server))
	}
	if len(rs) > 0 {
		t := newTable(w, "URI", "NAME", "TYPE", "DESCRIPTION")
		for _, r := range rs {
			name := r.Name
			if r.Title != "" {
				name = r.Title
			}
			t.row(cell(r.URI, 0), cell(name, 40), cell(r.MIMEType, 0), cell(engine.PersonText(server, r.Description), descWidth))
		}
		t.flush()
	}
	if len(ts) > 0 {
		if len(rs) > 0 {
			fmt.Fprintln(w)
		}
		t := newTable(w, "URI TEMPLATE", "NAME", "TYPE", "DESCRIPTION")
		for _, r := range ts {
			name := r.Name
			if r.Title != "" {
				name = r.Title
			}
			t.row(cell(r.URITemplate, 0), cell(name, 40), cell(r.MIMEType, 0), cell(engine.PersonText(server, r.Description), descWidth))
		}
		t.flush()
	}
	writeMore(w, f, "voltmcp resources "+shellQuote(clean(server)))
	f.writeRest(w)
	if len(rs) > 0 {
		fmt.Fprintf(w, "\nread one: voltmcp read-resource %s URI\n", shellQuote(clean(server)))
	}
}

func renderPrompts(w io.Writer, f fields, in engine.GatewayInput) {
	var server string
	var ps []engine.Prompt
	f.take("server", &server)
	f.take("prompts", &ps)
	f.drop("action")
	if len(ps) == 0 {
		fmt.Fprintf(w, "server %s lists no prompts\n", clean(server))
	} else {
		t := newTable(w, "PROMPT", "ARGUMENTS", "DESCRIPTION")
		for _, p := range ps {
			var args []string
			for _, a := range p.Arguments {
				n := a.Name
				if a.Required {
					n += "*"
				}
				args = append(args, n)
			}
			desc := engine.PersonText(server, p.Description)
			if p.Title != "" {
				desc = p.Title + ": " + desc
			}
			t.row(cell(p.Name, 0), cell(strings.Join(args, ", "), 40), cell(desc, descWidth))
		}
		t.flush()
	}
	writeMore(w, f, "voltmcp prompts "+shellQuote(clean(server)))
	f.writeRest(w)
	if len(ps) > 0 {
		fmt.Fprintf(w, "\n* marks a required argument; preview one: voltmcp get-prompt %s PROMPT --args JSON\n", shellQuote(clean(server)))
	}
}

// compactJSON is v as one line of JSON, HTML characters as they are.
func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
