package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/internal/output"
	"github.com/voltmcp/voltmcp/engine/internal/turn"
	"github.com/voltmcp/voltmcp/policies"
)

// Attachment is an image, an audio clip or an embedded resource's blob
// that a result passes to the agent as MCP content, after its text
// (settings.media). Its type is from the gateway's allow list and its
// data was checked against that type's magic bytes.
type Attachment struct {
	// Kind is "image", "audio" or "resource".
	Kind     string
	MIMEType string
	// URI is an embedded resource's, cleaned.
	URI  string
	Data []byte
}

// MediaItem says what became of one binary item of a call's content:
// passed on as an [Attachment], or described, with why, and for an item
// over the caps where it was kept.
type MediaItem struct {
	Kind string `json:"kind"`
	// MIMEType is as the server declared it, cleaned.
	MIMEType string `json:"mimeType"`
	// Bytes is the size of the data, before base64.
	Bytes  int  `json:"bytes"`
	Inline bool `json:"inline"`
	// Reason says why an item was not passed on.
	Reason string `json:"reason,omitempty"`
	// Cache holds the base64 of an item over the caps.
	Cache *CacheRef `json:"cache,omitempty"`
}

// content is the MCP content of a result: its text, then its
// attachments. Both codecs encode it (toolResult, encodeLeanResultJSON).
func (r GatewayResult) content() []mcp.Content {
	out := make([]mcp.Content, 0, 1+len(r.Attachments))
	out = append(out, &mcp.TextContent{Text: r.Text})
	for _, a := range r.Attachments {
		switch a.Kind {
		case output.KindImage:
			out = append(out, &mcp.ImageContent{MIMEType: a.MIMEType, Data: a.Data})
		case output.KindAudio:
			out = append(out, &mcp.AudioContent{MIMEType: a.MIMEType, Data: a.Data})
		default:
			out = append(out, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: a.URI, MIMEType: a.MIMEType, Blob: a.Data}})
		}
	}
	return out
}

// media decides, for each binary item of an answer (a call's content,
// output.MediaItems, or a read resource's contents, output.ResourceMedia),
// whether it is passed on as it is: settings.media.inline must be on; its declared
// type must be on the allow list, of its kind, and match its data's
// magic bytes (output.CheckMedia); the voltmcp.media policy must let it
// through (an error keeps it out); and it must fit maxItemBytes and,
// with the items before it, maxAnswerBytes. An item over a cap is kept
// in the output store, as base64, for read_cache. notes are what the
// text says of each item (output.RenderNoted, output.RenderResourceNoted).
// tool is "" for a resource read: the policy is asked with no tool, and
// an item kept is labelled with its resource's URI.
func (e *Engine) media(ctx context.Context, s *supervisor, tool string, risk Risk, ms []output.Media) (notes map[int]string, items []MediaItem, attach []Attachment) {
	if len(ms) == 0 {
		return nil, nil, nil
	}
	set := e.Config().Settings.Media
	notes = map[int]string{}
	var total int64
	for _, m := range ms {
		it := MediaItem{Kind: m.Kind, MIMEType: output.CleanText(m.MIMEType, 128), Bytes: len(m.Data)}
		refuse := func(why string) {
			it.Reason = output.CleanText(why, 512)
			notes[m.Index] = ": not passed on: " + it.Reason
		}
		typ, err := output.CheckMedia(m)
		switch {
		case !set.Inline:
			// As before settings.media: described, nothing more.
			it.Reason = "settings.media.inline is off"
		case err != nil:
			refuse(err.Error())
		default:
			if ok, why := e.mediaAllowed(ctx, s, tool, risk, m, typ); !ok {
				refuse(why)
				break
			}
			n := int64(len(m.Data))
			if n > set.MaxItemBytes || total+n > set.MaxAnswerBytes {
				cap := fmt.Sprintf("over settings.media.maxItemBytes (%d bytes)", set.MaxItemBytes)
				if n <= set.MaxItemBytes {
					cap = fmt.Sprintf("over what is left of settings.media.maxAnswerBytes (%d bytes an answer)", set.MaxAnswerBytes)
				}
				it.Reason = cap
				turn.Yield(ctx) // the store waits for the disk
				label := tool
				if label == "" {
					label = "resource:" + m.URI
				}
				id, err := e.outputs().PutMedia(s.source(), label, typ, m.Data)
				if err != nil {
					e.log.Warn("output sidecar", "err", err)
					notes[m.Index] = ": not passed on: " + cap + "; it could not be kept: " + output.CleanText(err.Error(), 256)
					break
				}
				it.Cache = &CacheRef{ID: id, Read: fmt.Sprintf(`mcp({"action":"read_cache","cacheId":%q})`, id)}
				notes[m.Index] = ": not passed on: " + cap + "; its base64 is kept: " + it.Cache.Read
				break
			}
			total += n
			it.Inline = true
			notes[m.Index] = fmt.Sprintf(": attached as %s content", m.Kind)
			attach = append(attach, Attachment{Kind: m.Kind, MIMEType: typ, URI: output.CleanText(m.URI, 2048), Data: m.Data})
		}
		items = append(items, it)
	}
	return notes, items, attach
}

// mediaAllowed asks the voltmcp.media policy whether an item may pass,
// when policy files are configured; the built-in policy lets every item
// through, so without them nothing is evaluated. A decision that fails
// keeps the item out.
func (e *Engine) mediaAllowed(ctx context.Context, s *supervisor, tool string, risk Risk, m output.Media, typ string) (bool, string) {
	g := e.guard.Load()
	if g == nil || (!g.custom && e.opts.Policies == nil) {
		return true, ""
	}
	scope := "user"
	if s.cfg.Layer.IsProject() {
		scope = "project"
	}
	turn.Yield(ctx) // the guard may still be loading the policies
	d := g.policies().Media(ctx, policies.MediaInput{Server: policies.MediaServer{ID: s.cfg.ID, Scope: scope}, Tool: tool,
		Risk: string(risk), Surface: string(e.opts.Surface),
		Item: policies.MediaItem{Kind: m.Kind, MIMEType: typ, Bytes: len(m.Data), URI: m.URI}})
	if d.Inline {
		return true, ""
	}
	var why []string
	for _, r := range d.Reasons {
		why = append(why, r.String())
	}
	if d.Err != nil {
		e.recordPolicyError(ctx, policies.AreaMedia, d.Err, map[string]any{"server": s.cfg.ID, "tool": tool})
		return false, "the media policy could not decide: " + strings.Join(why, "; ")
	}
	return false, "the media policy keeps it out: " + strings.Join(why, "; ")
}
