package output

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Render turns a tool's or a prompt's content items into the text a
// model reads, one item a line. Text is kept as it is (Clean runs
// after); images, audio and blobs are described by type and size, never
// inlined; a resource link by its URI.
func Render(items []mcp.Content) string { return RenderNoted(items, nil) }

// RenderNoted is [Render] with a note on binary items: the description
// of the item at index i (an image, audio, or an embedded resource's
// blob) ends with notes[i], when there is one, inside its brackets.
func RenderNoted(items []mcp.Content, notes map[int]string) string {
	var parts []string
	for i, c := range items {
		switch v := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, v.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes%s]", v.MIMEType, len(v.Data), notes[i]))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes%s]", v.MIMEType, len(v.Data), notes[i]))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link %s]", v.URI))
		case *mcp.EmbeddedResource:
			if v.Resource == nil {
				continue
			}
			if v.Resource.Text != "" {
				parts = append(parts, v.Resource.Text)
			} else {
				parts = append(parts, fmt.Sprintf("[resource %s, %s, %d bytes%s]", v.Resource.URI, v.Resource.MIMEType, len(v.Resource.Blob), notes[i]))
			}
		default:
			parts = append(parts, "[content of an unknown type]")
		}
	}
	return strings.Join(parts, "\n")
}

// RenderResource turns the contents of a read resource into text, one
// item a line: text is kept, binary data described by URI, MIME type
// and size.
func RenderResource(contents []*mcp.ResourceContents) string {
	return RenderResourceNoted(contents, nil)
}

// RenderResourceNoted is [RenderResource] with a note on binary items:
// the description of the item at index i ends with notes[i], when there
// is one, inside its brackets.
func RenderResourceNoted(contents []*mcp.ResourceContents, notes map[int]string) string {
	var parts []string
	for i, c := range contents {
		if c == nil {
			continue
		}
		if c.Text != "" || len(c.Blob) == 0 {
			parts = append(parts, c.Text)
		} else {
			parts = append(parts, fmt.Sprintf("[%s: %s, %d bytes of binary data%s]", c.URI, c.MIMEType, len(c.Blob), notes[i]))
		}
	}
	return strings.Join(parts, "\n")
}
