package engine

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/internal/bound"
)

// DroppedItem is something a server listed that discovery left out, or
// kept only after cleaning or clipping it, with the reason in words.
type DroppedItem struct {
	// Kind is "tool", "resource", "resource template" or "prompt".
	Kind string `json:"kind"`
	// Name is the item's name (a resource's URI), cleaned and clipped for
	// display: it may not be the name the server sent.
	Name string `json:"name"`
	// Reason says why it was dropped, or what was cleaned.
	Reason string `json:"reason"`
}

// Bounds on what discovery records of the items it bounds.
const (
	// maxListedItems bounds Metadata.Dropped and Metadata.Cleaned; the
	// rest are counted in a note.
	maxListedItems = 100
	// maxURIBytes bounds a resource URI or URI template; a longer one
	// drops its resource.
	maxURIBytes = 4096
	// maxPromptName bounds a prompt's name, in bytes.
	maxPromptName = 256
	// maxPromptArgs bounds a prompt's arguments; a prompt with more is
	// dropped.
	maxPromptArgs = 64
	// maxMIMEChars bounds a MIME type, in characters.
	maxMIMEChars = 128
	// pageCapFactor: while listing, the tools kept so far are trimmed to
	// MaxTools once they reach this many times MaxTools, so that a server
	// paging forever costs bounded memory.
	pageCapFactor = 2
)

// modelText returns a description from server ready to reach a model: the
// provenance prefix of [bound.Provenance] saying it is third-party text,
// then the description, which discovery has already cleaned and clipped.
// An empty description stays empty.
func modelText(server, desc string) string {
	if desc == "" {
		return ""
	}
	return bound.Provenance(server) + desc
}

// limits returns the bounds of server srv: the built-in defaults, then
// the config's limits (the settings' and the server's own, the lower of
// the two, as cue computes them), then the VOLTMCP_MAX_* environment
// variables read through lookup, which may only lower them further. The
// notes report environment values that were ignored as invalid.
func limits(srv cue.Server, lookup func(string) (string, bool)) (bound.Limits, []string) {
	l := bound.DefaultLimits().Merge(bound.Limits{
		MaxTools:            clampInt(srv.Limits.MaxTools),
		MaxDescriptionChars: clampInt(srv.Limits.MaxDescriptionChars),
		MaxSchemaBytes:      clampInt(srv.Limits.MaxSchemaBytes),
		MaxSchemaDepth:      clampInt(srv.Limits.MaxSchemaDepth),
		MaxEnumValues:       clampInt(srv.Limits.MaxEnumValues),
		MaxResultBytes:      srv.Limits.MaxResultBytes,
		MaxMessageBytes:     srv.Limits.MaxMessageBytes,
	})
	env, errs := bound.FromEnv(lookup)
	l = l.Lower(env)
	var notes []string
	for _, err := range errs {
		notes = append(notes, "limits: ignored "+err.Error())
	}
	return l, notes
}

// clampInt converts a config count to an int, saturating.
func clampInt(n int64) int {
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	if n < 0 {
		return 0
	}
	return int(n)
}

// messageCap returns the largest JSON-RPC message to read from a server
// with limits l: MaxMessageBytes, within what an int holds.
func messageCap(l bound.Limits) int {
	if l.MaxMessageBytes <= 0 || l.MaxMessageBytes > math.MaxInt32 {
		return maxLineLength
	}
	return int(l.MaxMessageBytes)
}

// bounder applies a server's limits to what discovery lists, page by
// page, and records what it dropped or cleaned. The zero bounder is not
// usable; make one with newBounder.
type bounder struct {
	server string
	l      bound.Limits

	tools     []Tool
	toolNames map[string]struct{}

	dropped, cleaned []DroppedItem
	droppedN         int // every dropped item, listed or not
	cleanedN         int
}

func newBounder(server string, l bound.Limits) *bounder {
	return &bounder{server: server, l: l, toolNames: map[string]struct{}{}}
}

// drop records a dropped item.
func (b *bounder) drop(kind, name, reason string) {
	b.droppedN++
	if len(b.dropped) < maxListedItems {
		display, _ := bound.SanitizeText(name, 64)
		b.dropped = append(b.dropped, DroppedItem{Kind: kind, Name: display, Reason: reason})
	}
}

// clean records an item kept after cleaning; r says what was changed.
func (b *bounder) clean(kind, name string, r bound.Report) {
	if !r.Changed() {
		return
	}
	b.cleanedN++
	if len(b.cleaned) < maxListedItems {
		display, _ := bound.SanitizeText(name, 64)
		b.cleaned = append(b.cleaned, DroppedItem{Kind: kind, Name: display, Reason: r.String()})
	}
}

// addTools bounds one page of tools: names checked, text cleaned and
// clipped, schemas bounded (see [bound.Tools]), duplicates across pages
// dropped. The MaxTools cut is made by finish, over every page, so that
// the subset kept does not depend on paging; meanwhile the tools kept are
// trimmed whenever they reach pageCapFactor times MaxTools.
func (b *bounder) addTools(page []Tool) {
	in := make([]bound.Tool, 0, len(page))
	for _, t := range page {
		in = append(in, bound.Tool{Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations})
	}
	l := b.l
	l.MaxTools = math.MaxInt32 / 4 // counted over every page, in trimTools
	kept, dropped := bound.Tools(b.server, in, l)
	for _, d := range dropped {
		b.droppedN++
		if len(b.dropped) < maxListedItems {
			b.dropped = append(b.dropped, DroppedItem{Kind: "tool", Name: d.Name, Reason: d.Reason})
		}
	}
	for _, k := range kept {
		if _, dup := b.toolNames[k.Name]; dup {
			b.drop("tool", k.Name, "duplicate name: the first tool of that name is kept")
			continue
		}
		b.toolNames[k.Name] = struct{}{}
		t := Tool{Name: k.Name, Title: k.Title, Description: k.Description, InputSchema: k.InputSchema,
			OutputSchema: k.OutputSchema, Annotations: k.Annotations}
		t.Hash = toolHash(t)
		b.tools = append(b.tools, t)
		b.clean("tool", k.Name, k.Report)
	}
	if len(b.tools) >= pageCapFactor*b.l.MaxTools {
		b.trimTools()
	}
}

// trimTools keeps the first MaxTools tools by name, in listed order, and
// drops the rest, as [bound.Tools] does within one list.
func (b *bounder) trimTools() {
	n := b.l.MaxTools
	if len(b.tools) <= n {
		return
	}
	names := make([]string, len(b.tools))
	for i, t := range b.tools {
		names[i] = t.Name
	}
	slices.Sort(names)
	cutoff := names[n-1]
	kept := b.tools[:0]
	for _, t := range b.tools {
		if t.Name <= cutoff {
			kept = append(kept, t)
			continue
		}
		b.drop("tool", t.Name, fmt.Sprintf("over the limit of %d tools; the first %d by name are kept", n, n))
	}
	clear(b.tools[len(kept):])
	b.tools = kept
}

// text cleans and clips one text field of a resource or prompt.
func (b *bounder) text(s string, maxChars int, r *bound.Report) string {
	out, rr := bound.SanitizeText(s, maxChars)
	r.Add(rr)
	return out
}

// exact reports whether s is usable as an identifier a model must send
// back as is (a URI, a prompt or argument name): not empty, at most max
// bytes, without tabs or line breaks, and unchanged by cleaning.
func exact(s string, maxBytes int) bool {
	if s == "" || len(s) > maxBytes || strings.ContainsAny(s, "\t\n\r") {
		return false
	}
	out, r := bound.SanitizeText(s, 0)
	return out == s && !r.Changed()
}

// resources bounds a server's resources: a URI that is empty, over 4 KiB
// or holds control, invisible or excess white-space characters drops its
// resource; names, titles and descriptions are cleaned and clipped; at
// most MaxTools are kept, the first by URI.
func (b *bounder) resources(in []Resource) []Resource {
	var out []Resource
	for _, x := range in {
		if b.uriEntry("resource", "URI", x.URI, &x.Name, &x.Title, &x.Description, &x.MIMEType) {
			out = append(out, x)
		}
	}
	return capBy(out, b.l.MaxTools, func(x Resource) string { return x.URI }, func(x Resource) {
		b.drop("resource", x.URI, fmt.Sprintf("over the limit of %d resources; the first %d by URI are kept", b.l.MaxTools, b.l.MaxTools))
	})
}

// uriEntry checks the URI of a resource or template (what names it, so
// it is dropped, never rewritten, when unclean) and cleans and clips its
// texts in place. It reports whether the entry stays.
func (b *bounder) uriEntry(kind, what, uri string, name, title, desc, mime *string) bool {
	if !exact(uri, maxURIBytes) {
		b.drop(kind, uri, "invalid "+what+": empty, over 4096 bytes, or with control or invisible characters")
		return false
	}
	var r bound.Report
	*name = b.text(*name, b.l.MaxTitleChars, &r)
	*title = b.text(*title, b.l.MaxTitleChars, &r)
	*desc = b.text(*desc, b.l.MaxDescriptionChars, &r)
	*mime = b.text(*mime, maxMIMEChars, &r)
	b.clean(kind, uri, r)
	return true
}

// templates bounds a server's resource templates like resources.
func (b *bounder) templates(in []ResourceTemplate) []ResourceTemplate {
	var out []ResourceTemplate
	for _, x := range in {
		if b.uriEntry("resource template", "URI template", x.URITemplate, &x.Name, &x.Title, &x.Description, &x.MIMEType) {
			out = append(out, x)
		}
	}
	return capBy(out, b.l.MaxTools, func(x ResourceTemplate) string { return x.URITemplate }, func(x ResourceTemplate) {
		b.drop("resource template", x.URITemplate, fmt.Sprintf("over the limit of %d resource templates; the first %d by URI template are kept", b.l.MaxTools, b.l.MaxTools))
	})
}

// prompts bounds a server's prompts: a name or argument name that is
// empty, over 256 bytes or not clean drops its prompt, as do more than 64
// arguments or an argument named twice; titles and descriptions are
// cleaned and clipped; at most MaxTools are kept, the first by name.
func (b *bounder) prompts(in []Prompt) []Prompt {
	var out []Prompt
	seen := map[string]bool{}
next:
	for _, p := range in {
		switch {
		case !exact(p.Name, maxPromptName):
			b.drop("prompt", p.Name, "invalid name: empty, over 256 bytes, or with control or invisible characters")
			continue
		case seen[p.Name]:
			b.drop("prompt", p.Name, "duplicate name: the first prompt of that name is kept")
			continue
		case len(p.Arguments) > maxPromptArgs:
			b.drop("prompt", p.Name, fmt.Sprintf("%d arguments, over the limit of %d", len(p.Arguments), maxPromptArgs))
			continue
		}
		var r bound.Report
		args := make([]PromptArgument, 0, len(p.Arguments))
		argSeen := map[string]bool{}
		for _, a := range p.Arguments {
			if !exact(a.Name, maxPromptName) || argSeen[a.Name] {
				b.drop("prompt", p.Name, "an argument name is empty, repeated, over 256 bytes, or has control or invisible characters")
				continue next
			}
			argSeen[a.Name] = true
			a.Description = b.text(a.Description, b.l.MaxDescriptionChars, &r)
			args = append(args, a)
		}
		seen[p.Name] = true
		if len(args) == 0 {
			args = nil
		}
		p.Arguments = args
		p.Title = b.text(p.Title, b.l.MaxTitleChars, &r)
		p.Description = b.text(p.Description, b.l.MaxDescriptionChars, &r)
		b.clean("prompt", p.Name, r)
		out = append(out, p)
	}
	return capBy(out, b.l.MaxTools, func(p Prompt) string { return p.Name }, func(p Prompt) {
		b.drop("prompt", p.Name, fmt.Sprintf("over the limit of %d prompts; the first %d by name are kept", b.l.MaxTools, b.l.MaxTools))
	})
}

// capBy keeps the first n items by key (keys being unique enough: ties at
// the cut are all kept up to n), in their order, calling dropped for the
// rest.
func capBy[T any](items []T, n int, key func(T) string, dropped func(T)) []T {
	if len(items) <= n {
		return items
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(key(items[a]), key(items[b])) })
	keep := make([]bool, len(items))
	for _, i := range idx[:n] {
		keep[i] = true
	}
	out := make([]T, 0, n)
	for i, x := range items {
		if keep[i] {
			out = append(out, x)
		} else {
			dropped(x)
		}
	}
	return out
}

// finish applies the MaxTools cut to the tools, bounds the resources,
// templates and prompts of m, and records in m what was dropped or
// cleaned, with a note for items past the listed ones.
func (b *bounder) finish(m *Metadata) {
	b.trimTools()
	m.Tools = b.tools
	if m.Tools == nil {
		m.Tools = []Tool{}
	}
	m.Resources = b.resources(m.Resources)
	m.ResourceTemplates = b.templates(m.ResourceTemplates)
	m.Prompts = b.prompts(m.Prompts)
	m.Dropped, m.Cleaned = b.dropped, b.cleaned
	if n := b.droppedN - len(b.dropped); n > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("dropped %d more items than listed", n))
	}
	if n := b.cleanedN - len(b.cleaned); n > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("cleaned %d more items than listed", n))
	}
	m.Hash = metadataHash(m.Tools)
}

// boundsSummary says in one line what discovery dropped and cleaned, for
// an event: "" when nothing was.
func boundsSummary(m *Metadata) string {
	var parts []string
	if n := len(m.Dropped); n > 0 {
		parts = append(parts, fmt.Sprintf("dropped %s", countItems(m.Dropped)))
	}
	if n := len(m.Cleaned); n > 0 {
		parts = append(parts, fmt.Sprintf("cleaned %s", countItems(m.Cleaned)))
	}
	return strings.Join(parts, "; ")
}

// countItems counts items by kind: "3 tools, 1 prompt".
func countItems(items []DroppedItem) string {
	counts := map[string]int{}
	var kinds []string
	for _, it := range items {
		if counts[it.Kind] == 0 {
			kinds = append(kinds, it.Kind)
		}
		counts[it.Kind]++
	}
	var parts []string
	for _, k := range kinds {
		n := counts[k]
		if n == 1 {
			parts = append(parts, "1 "+k)
		} else {
			parts = append(parts, fmt.Sprintf("%d %ss", n, k))
		}
	}
	return strings.Join(parts, ", ")
}

// limitsKey fingerprints the limits that bound metadata, for
// Metadata.Limits.
func limitsKey(l bound.Limits) string {
	return fmt.Sprintf("v1:%d:%d:%d:%d:%d:%d:%d", l.MaxTools, l.MaxNameLen, l.MaxDescriptionChars, l.MaxTitleChars,
		l.MaxSchemaBytes, l.MaxSchemaDepth, l.MaxEnumValues)
}

// reboundCached bounds metadata read from the cache again when it was
// bounded with other limits than l (or by a version that did not bound):
// lowered limits apply without a refresh. What it drops or cleans is added
// to what discovery recorded.
func reboundCached(m *Metadata, server string, l bound.Limits) {
	key := limitsKey(l)
	if m == nil || m.Limits == key {
		return
	}
	dropped, cleaned := m.Dropped, m.Cleaned
	b := newBounder(server, l)
	b.addTools(m.Tools)
	held := m.Held
	b.finish(m)
	m.Dropped = append(dropped, m.Dropped...)[:min(len(dropped)+len(m.Dropped), maxListedItems)]
	m.Cleaned = append(cleaned, m.Cleaned...)[:min(len(cleaned)+len(m.Cleaned), maxListedItems)]
	if len(held) > 0 {
		hb := newBounder(server, l)
		hb.addTools(held)
		hb.trimTools()
		m.Held = hb.tools
	}
	m.Limits = key
}

// modelResources returns resources and templates of server as a model
// should see them: each description with the provenance prefix (see
// modelText). The inputs are not modified.
func modelResources(server string, rs []Resource, ts []ResourceTemplate) ([]Resource, []ResourceTemplate) {
	outR := make([]Resource, len(rs))
	for i, r := range rs {
		r.Description = modelText(server, r.Description)
		outR[i] = r
	}
	outT := make([]ResourceTemplate, len(ts))
	for i, t := range ts {
		t.Description = modelText(server, t.Description)
		outT[i] = t
	}
	return outR, outT
}

// modelPrompts returns prompts of server as a model should see them: each
// prompt's description with the provenance prefix (see modelText); the
// arguments' descriptions, like the property descriptions inside a tool's
// schema, go without it. The input is not modified.
func modelPrompts(server string, ps []Prompt) []Prompt {
	out := make([]Prompt, len(ps))
	for i, p := range ps {
		p.Description = modelText(server, p.Description)
		out[i] = p
	}
	return out
}
