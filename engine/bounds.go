package engine

import (
	"fmt"
	"math"
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

// PersonText returns a description from a gateway result as a person
// reads it: without the provenance prefix the model's copy carries (see
// [GatewayResult]; the CLI's human output shows the server in a column
// of its own). Text without the prefix is returned as it is.
func PersonText(server, desc string) string {
	return strings.TrimPrefix(desc, bound.Provenance(server))
}

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

// bounder applies a server's limits to what discovery lists (see
// [bound.Listing]), converting the engine's metadata types to and from
// the package's. The zero bounder is not usable; make one with
// newBounder.
type bounder struct{ l *bound.Listing }

func newBounder(server string, l bound.Limits) *bounder {
	return &bounder{l: bound.NewListing(server, l)}
}

// addTools bounds one page of tools (see [bound.Listing.AddTools]).
func (b *bounder) addTools(page []Tool) {
	in := make([]bound.Tool, 0, len(page))
	for _, t := range page {
		in = append(in, bound.Tool{Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations, TaskSupport: t.TaskSupport})
	}
	b.l.AddTools(in)
}

// tools applies the MaxTools cut and returns the tools kept, each with
// its hash; nil when none is.
func (b *bounder) tools() []Tool {
	kept := b.l.Tools()
	if kept == nil {
		return nil
	}
	out := make([]Tool, len(kept))
	for i, k := range kept {
		out[i] = Tool{Name: k.Name, Title: k.Title, Description: k.Description, InputSchema: k.InputSchema,
			OutputSchema: k.OutputSchema, Annotations: k.Annotations, TaskSupport: k.TaskSupport}
		out[i].Hash = toolHash(out[i])
	}
	return out
}

// finish applies the MaxTools cut to the tools, bounds the resources,
// templates and prompts of m, and records in m what was dropped or
// cleaned, with a note for items past the listed ones.
func (b *bounder) finish(m *Metadata) {
	m.Tools = b.tools()
	if m.Tools == nil {
		m.Tools = []Tool{}
	}
	rs := b.l.Resources(convertEach(m.Resources, func(r Resource) bound.Resource { return bound.Resource(r) }))
	m.Resources = convertEach(rs, func(r bound.Resource) Resource { return Resource(r) })
	ts := b.l.Templates(convertEach(m.ResourceTemplates, func(t ResourceTemplate) bound.ResourceTemplate { return bound.ResourceTemplate(t) }))
	m.ResourceTemplates = convertEach(ts, func(t bound.ResourceTemplate) ResourceTemplate { return ResourceTemplate(t) })
	m.Prompts = convertEach(b.l.Prompts(convertEach(m.Prompts, boundPrompt)), promptOf)
	m.Dropped = convertEach(b.l.Dropped(), func(it bound.Item) DroppedItem { return DroppedItem(it) })
	m.Cleaned = convertEach(b.l.Cleaned(), func(it bound.Item) DroppedItem { return DroppedItem(it) })
	m.Notes = append(m.Notes, b.l.Notes()...)
	m.Hash = metadataHash(m.Tools)
}

// boundPrompt is p as [bound.Listing.Prompts] takes it.
func boundPrompt(p Prompt) bound.Prompt {
	return bound.Prompt{Name: p.Name, Title: p.Title, Description: p.Description,
		Arguments: convertEach(p.Arguments, func(a PromptArgument) bound.PromptArgument { return bound.PromptArgument(a) })}
}

// promptOf is the engine's prompt of p.
func promptOf(p bound.Prompt) Prompt {
	return Prompt{Name: p.Name, Title: p.Title, Description: p.Description,
		Arguments: convertEach(p.Arguments, func(a bound.PromptArgument) PromptArgument { return PromptArgument(a) })}
}

// convertEach converts each item of in; nil stays nil.
func convertEach[T, U any](in []T, f func(T) U) []U {
	if in == nil {
		return nil
	}
	out := make([]U, len(in))
	for i, x := range in {
		out[i] = f(x)
	}
	return out
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
	m.Dropped = append(dropped, m.Dropped...)[:min(len(dropped)+len(m.Dropped), bound.MaxListedItems)]
	m.Cleaned = append(cleaned, m.Cleaned...)[:min(len(cleaned)+len(m.Cleaned), bound.MaxListedItems)]
	if len(held) > 0 {
		hb := newBounder(server, l)
		hb.addTools(held)
		m.Held = hb.tools()
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
