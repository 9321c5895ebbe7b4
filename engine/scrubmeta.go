package engine

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/voltmcp/voltmcp/engine/internal/bound"
	"github.com/voltmcp/voltmcp/engine/internal/transport"
)

// The reasons recorded for an item whose metadata held a secret value of
// the server's definition: dropped for its name, cleaned for its texts.
const (
	secretNameReason = "its name holds a secret value of the server's configuration"
	secretTextReason = "removed a secret value of the server's configuration"
)

// scrubMetadata removes the secret values sc knows, in every form it
// knows them (see [redact.Forms]), from every text of m: the server's
// name, title, version and capabilities; each tool's name, title,
// description, task support, schemas (property names, descriptions,
// enum values, defaults: every key and string) and annotations, the
// held tools too; each resource's and template's URI, name, title,
// description and MIME type; each prompt's name, title, description and
// arguments; the notes and the dropped and cleaned items; the reasons of
// the stored risk ratings. It is the one place metadata is scrubbed:
// discovery calls it on what it listed before anything is pinned,
// cached, indexed or shown, and the engine on what it reads from the
// cache. An item whose identifier (a tool's or
// prompt's name, a prompt argument's name, a resource's URI or URI
// template) holds a secret is dropped, since it could be neither shown
// nor used as sent; an item whose other texts held one is kept scrubbed,
// and listed as cleaned. Metadata without any secret is left as it is,
// without copying.
func scrubMetadata(m *Metadata, sc *transport.Scrubber) {
	if m == nil {
		return
	}
	text := sc.Text
	for _, p := range []*string{&m.Name, &m.Title, &m.Version, &m.ProtocolVersion, &m.Transport} {
		*p = text(*p)
	}
	m.Capabilities = scrubJSON(m.Capabilities, sc)
	for i := range m.Notes {
		m.Notes[i] = text(m.Notes[i])
	}
	for _, items := range [][]DroppedItem{m.Dropped, m.Cleaned} {
		for i := range items {
			items[i].Name, items[i].Reason = text(items[i].Name), text(items[i].Reason)
		}
	}
	if m.Ratings != nil {
		for h, r := range m.Ratings.Tools {
			if t := text(r.Reason); t != r.Reason {
				r.Reason = t
				m.Ratings.Tools[h] = r
			}
		}
	}
	m.Tools = scrubTools(m, m.Tools, sc, true)
	m.Held = scrubTools(m, m.Held, sc, false)
	m.Hash = metadataHash(m.Tools)
	m.Resources = scrubItems(m, sc, "resource", m.Resources, func(r Resource) string { return r.URI },
		func(r Resource) Resource {
			r.Name, r.Title, r.Description, r.MIMEType = text(r.Name), text(r.Title), text(r.Description), text(r.MIMEType)
			return r
		})
	m.ResourceTemplates = scrubItems(m, sc, "resource template", m.ResourceTemplates, func(r ResourceTemplate) string { return r.URITemplate },
		func(r ResourceTemplate) ResourceTemplate {
			r.Name, r.Title, r.Description, r.MIMEType = text(r.Name), text(r.Title), text(r.Description), text(r.MIMEType)
			return r
		})
	prompts := m.Prompts[:0]
next:
	for _, p := range m.Prompts {
		if text(p.Name) != p.Name {
			m.dropSecret("prompt", p.Name, sc)
			continue
		}
		n := p
		n.Title, n.Description = text(p.Title), text(p.Description)
		changed := n.Title != p.Title || n.Description != p.Description
		if p.Arguments != nil {
			n.Arguments = make([]PromptArgument, len(p.Arguments))
			for i, a := range p.Arguments {
				if text(a.Name) != a.Name {
					m.dropSecret("prompt", p.Name, sc)
					continue next
				}
				n.Arguments[i] = PromptArgument{Name: a.Name, Description: text(a.Description), Required: a.Required}
				changed = changed || n.Arguments[i].Description != a.Description
			}
		}
		if changed {
			m.cleanedSecret("prompt", n.Name)
		}
		prompts = append(prompts, n)
	}
	m.Prompts = prompts
}

// scrubItems scrubs items of one kind (resources, resource templates) in
// place as [scrubMetadata] does: an item whose identifier (id) holds a
// secret is dropped, the others pass through scrub, and those it changed
// are listed as cleaned.
func scrubItems[T comparable](m *Metadata, sc *transport.Scrubber, kind string, items []T, id func(T) string, scrub func(T) T) []T {
	out := items[:0]
	for _, r := range items {
		if sc.Text(id(r)) != id(r) {
			m.dropSecret(kind, id(r), sc)
			continue
		}
		n := scrub(r)
		if n != r {
			m.cleanedSecret(kind, id(n))
		}
		out = append(out, n)
	}
	return out
}

// scrubTools scrubs tools as [scrubMetadata] does, dropping those whose
// name holds a secret and rehashing those changed; report records both in
// m (the held tools are not reported: their listed version is).
func scrubTools(m *Metadata, in []Tool, sc *transport.Scrubber, report bool) []Tool {
	text := sc.Text
	out := in[:0]
	for _, t := range in {
		if text(t.Name) != t.Name {
			if report {
				m.dropSecret("tool", t.Name, sc)
			}
			continue
		}
		n := t
		n.Title, n.Description, n.TaskSupport = text(t.Title), text(t.Description), text(t.TaskSupport)
		n.InputSchema, n.OutputSchema, n.Annotations = scrubJSON(t.InputSchema, sc), scrubJSON(t.OutputSchema, sc), scrubJSON(t.Annotations, sc)
		if n.Title != t.Title || n.Description != t.Description || n.TaskSupport != t.TaskSupport ||
			!bytes.Equal(n.InputSchema, t.InputSchema) || !bytes.Equal(n.OutputSchema, t.OutputSchema) || !bytes.Equal(n.Annotations, t.Annotations) {
			if t.Hash != "" {
				n.Hash = toolHash(n)
			}
			if report {
				m.cleanedSecret("tool", n.Name)
			}
		}
		out = append(out, n)
	}
	return out
}

// dropSecret records an item dropped for a secret in its identifier,
// named scrubbed.
func (m *Metadata) dropSecret(kind, name string, sc *transport.Scrubber) {
	if len(m.Dropped) < bound.MaxListedItems {
		m.Dropped = append(m.Dropped, DroppedItem{Kind: kind, Name: sc.Text(name), Reason: secretNameReason})
	}
}

// cleanedSecret records an item kept with a secret removed from its texts.
func (m *Metadata) cleanedSecret(kind, name string) {
	if len(m.Cleaned) < bound.MaxListedItems {
		m.Cleaned = append(m.Cleaned, DroppedItem{Kind: kind, Name: name, Reason: secretTextReason})
	}
}

// scrubJSON returns raw with every string and object key that holds a
// secret sc knows scrubbed; raw itself when none does. JSON without a
// backslash, whose strings are as written, is looked at as text and
// decoded only when it holds a secret; JSON with escapes is decoded, since
// an escape can hide a value from a look at the text. JSON that does not
// decode (no bounded schema is such) is returned scrubbed as text when
// that is still JSON, else dropped.
func scrubJSON(raw json.RawMessage, sc *transport.Scrubber) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	s := string(raw)
	if sc.Text(s) == s && !strings.Contains(s, `\`) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if t := sc.Text(s); json.Valid([]byte(t)) {
			return json.RawMessage(t)
		}
		return nil
	}
	v, changed := scrubValue(v, sc)
	if !changed {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return out
}

// scrubValue scrubs every string and object key of a decoded JSON value,
// and reports whether it changed any.
func scrubValue(v any, sc *transport.Scrubber) (any, bool) {
	switch x := v.(type) {
	case string:
		out := sc.Text(x)
		return out, out != x
	case []any:
		changed := false
		for i := range x {
			var c bool
			x[i], c = scrubValue(x[i], sc)
			changed = changed || c
		}
		return x, changed
	case map[string]any:
		out := make(map[string]any, len(x))
		changed := false
		for k, e := range x {
			sk := sc.Text(k)
			se, c := scrubValue(e, sc)
			changed = changed || c || sk != k
			out[sk] = se
		}
		return out, changed
	}
	return v, false
}
