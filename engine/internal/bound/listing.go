package bound

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Item is something a server listed that a [Listing] left out, or kept
// only after cleaning or clipping it, with the reason in words.
type Item struct {
	// Kind is "tool", "resource", "resource template" or "prompt".
	Kind string
	// Name is the item's name (a resource's URI), cleaned and clipped for
	// display: it may not be the name the server sent.
	Name string
	// Reason says why it was dropped, or what was cleaned.
	Reason string
}

// Resource is the part of a resource's metadata that bounding looks at.
// The engine converts its own resource type to and from this one.
type Resource struct {
	URI         string
	Name        string
	Title       string
	Description string
	MIMEType    string
	Size        int64
}

// ResourceTemplate is the part of a resource template's metadata that
// bounding looks at.
type ResourceTemplate struct {
	URITemplate string
	Name        string
	Title       string
	Description string
	MIMEType    string
}

// Prompt is the part of a prompt's metadata that bounding looks at.
type Prompt struct {
	Name        string
	Title       string
	Description string
	Arguments   []PromptArgument
}

// PromptArgument is one argument of a [Prompt].
type PromptArgument struct {
	Name        string
	Description string
	Required    bool
}

// Bounds on what a [Listing] records of the items it bounds.
const (
	// MaxListedItems bounds [Listing.Dropped] and [Listing.Cleaned]; the
	// rest are counted in [Listing.Notes].
	MaxListedItems = 100
	// MaxURIBytes bounds a resource URI or URI template; a longer one
	// drops its resource.
	MaxURIBytes = 4096
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

// Listing applies a server's limits to what one discovery lists, page by
// page, and records what it dropped or cleaned: tools with [Listing.AddTools]
// and [Listing.Tools], then resources, resource templates and prompts. The
// zero Listing is not usable; make one with [NewListing].
type Listing struct {
	server string
	l      Limits

	tools     []Tool
	toolNames map[string]struct{}

	dropped, cleaned []Item
	droppedN         int // every dropped item, listed or not
	cleanedN         int
}

// NewListing returns a Listing of server's metadata under l. Zero fields
// of l are defaults.
func NewListing(server string, l Limits) *Listing {
	return &Listing{server: server, l: l.norm(), toolNames: map[string]struct{}{}}
}

// drop records a dropped item.
func (b *Listing) drop(kind, name, reason string) {
	b.droppedN++
	if len(b.dropped) < MaxListedItems {
		display, _ := SanitizeText(name, maxDisplayName)
		b.dropped = append(b.dropped, Item{Kind: kind, Name: display, Reason: reason})
	}
}

// clean records an item kept after cleaning; r says what was changed.
func (b *Listing) clean(kind, name string, r Report) {
	if !r.Changed() {
		return
	}
	b.cleanedN++
	if len(b.cleaned) < MaxListedItems {
		display, _ := SanitizeText(name, maxDisplayName)
		b.cleaned = append(b.cleaned, Item{Kind: kind, Name: display, Reason: r.String()})
	}
}

// AddTools bounds one page of tools: names checked, text cleaned and
// clipped, schemas bounded (see [Tools]), duplicates across pages
// dropped. The MaxTools cut is made by [Listing.Tools], over every page,
// so that the subset kept does not depend on paging; meanwhile the tools
// kept are trimmed whenever they reach pageCapFactor times MaxTools.
func (b *Listing) AddTools(page []Tool) {
	l := b.l
	l.MaxTools = math.MaxInt32 / 4 // counted over every page, in trimTools
	kept, dropped := Tools(b.server, page, l)
	for _, d := range dropped {
		b.droppedN++
		if len(b.dropped) < MaxListedItems {
			b.dropped = append(b.dropped, Item{Kind: "tool", Name: d.Name, Reason: d.Reason})
		}
	}
	for _, k := range kept {
		if _, dup := b.toolNames[k.Name]; dup {
			b.drop("tool", k.Name, "duplicate name: the first tool of that name is kept")
			continue
		}
		b.toolNames[k.Name] = struct{}{}
		b.tools = append(b.tools, k)
		b.clean("tool", k.Name, k.Report)
	}
	if len(b.tools) >= pageCapFactor*b.l.MaxTools {
		b.trimTools()
	}
}

// Tools applies the MaxTools cut to the tools added so far and returns
// those kept, in listed order, each with its Report.
func (b *Listing) Tools() []Tool {
	b.trimTools()
	return b.tools
}

// trimTools keeps the first MaxTools tools by name, in listed order, and
// drops the rest, as [Tools] does within one list.
func (b *Listing) trimTools() {
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
func (b *Listing) text(s string, maxChars int, r *Report) string {
	out, rr := SanitizeText(s, maxChars)
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
	out, r := SanitizeText(s, 0)
	return out == s && !r.Changed()
}

// Resources bounds a server's resources: a URI that is empty, over 4 KiB
// or holds control, invisible or excess white-space characters drops its
// resource; names, titles and descriptions are cleaned and clipped; at
// most MaxTools are kept, the first by URI.
func (b *Listing) Resources(in []Resource) []Resource {
	var out []Resource
	for _, x := range in {
		if b.uriEntry("resource", "URI", x.URI, &x.Name, &x.Title, &x.Description, &x.MIMEType) {
			out = append(out, x)
		}
	}
	return CapBy(out, b.l.MaxTools, func(x Resource) string { return x.URI }, func(x Resource) {
		b.drop("resource", x.URI, fmt.Sprintf("over the limit of %d resources; the first %d by URI are kept", b.l.MaxTools, b.l.MaxTools))
	})
}

// uriEntry checks the URI of a resource or template (what names it, so
// it is dropped, never rewritten, when unclean) and cleans and clips its
// texts in place. It reports whether the entry stays.
func (b *Listing) uriEntry(kind, what, uri string, name, title, desc, mime *string) bool {
	if !exact(uri, MaxURIBytes) {
		b.drop(kind, uri, "invalid "+what+": empty, over 4096 bytes, or with control or invisible characters")
		return false
	}
	var r Report
	*name = b.text(*name, b.l.MaxTitleChars, &r)
	*title = b.text(*title, b.l.MaxTitleChars, &r)
	*desc = b.text(*desc, b.l.MaxDescriptionChars, &r)
	*mime = b.text(*mime, maxMIMEChars, &r)
	b.clean(kind, uri, r)
	return true
}

// Templates bounds a server's resource templates like [Listing.Resources].
func (b *Listing) Templates(in []ResourceTemplate) []ResourceTemplate {
	var out []ResourceTemplate
	for _, x := range in {
		if b.uriEntry("resource template", "URI template", x.URITemplate, &x.Name, &x.Title, &x.Description, &x.MIMEType) {
			out = append(out, x)
		}
	}
	return CapBy(out, b.l.MaxTools, func(x ResourceTemplate) string { return x.URITemplate }, func(x ResourceTemplate) {
		b.drop("resource template", x.URITemplate, fmt.Sprintf("over the limit of %d resource templates; the first %d by URI template are kept", b.l.MaxTools, b.l.MaxTools))
	})
}

// Prompts bounds a server's prompts: a name or argument name that is
// empty, over 256 bytes or not clean drops its prompt, as do more than 64
// arguments or an argument named twice; titles and descriptions are
// cleaned and clipped; at most MaxTools are kept, the first by name. A
// prompt kept without arguments has nil Arguments.
func (b *Listing) Prompts(in []Prompt) []Prompt {
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
		var r Report
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
	return CapBy(out, b.l.MaxTools, func(p Prompt) string { return p.Name }, func(p Prompt) {
		b.drop("prompt", p.Name, fmt.Sprintf("over the limit of %d prompts; the first %d by name are kept", b.l.MaxTools, b.l.MaxTools))
	})
}

// CapBy keeps the first n items by key (keys being unique enough: ties at
// the cut are all kept up to n), in their order, calling dropped for the
// rest.
func CapBy[T any](items []T, n int, key func(T) string, dropped func(T)) []T {
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

// Dropped returns the first [MaxListedItems] items left out so far, in
// the order they were; nil when there are none.
func (b *Listing) Dropped() []Item { return b.dropped }

// Cleaned returns the first [MaxListedItems] items kept after cleaning so
// far; nil when there are none.
func (b *Listing) Cleaned() []Item { return b.cleaned }

// Notes count the items dropped or cleaned past those [Listing.Dropped]
// and [Listing.Cleaned] list.
func (b *Listing) Notes() []string {
	var notes []string
	if n := b.droppedN - len(b.dropped); n > 0 {
		notes = append(notes, fmt.Sprintf("dropped %d more items than listed", n))
	}
	if n := b.cleanedN - len(b.cleaned); n > 0 {
		notes = append(notes, fmt.Sprintf("cleaned %d more items than listed", n))
	}
	return notes
}
