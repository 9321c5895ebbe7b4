package output

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestRender(t *testing.T) {
	got := Render([]mcp.Content{
		&mcp.TextContent{Text: "hello"},
		&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 3)},
		&mcp.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 2)},
		&mcp.ResourceLink{URI: "file:///a"},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b", Text: "inline"}},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///c", MIMEType: "application/zip", Blob: make([]byte, 4)}},
		&mcp.EmbeddedResource{},
	})
	want := "hello\n[image image/png, 3 bytes]\n[audio audio/wav, 2 bytes]\n[resource link file:///a]\ninline\n[resource file:///c, application/zip, 4 bytes]"
	if got != want {
		t.Errorf("Render = %q, want %q", got, want)
	}
	if Render(nil) != "" {
		t.Error("no content rendered as text")
	}
}

func TestRenderResource(t *testing.T) {
	got := RenderResource([]*mcp.ResourceContents{
		{URI: "file:///a", Text: "text"},
		nil,
		{URI: "file:///b", MIMEType: "image/png", Blob: make([]byte, 5)},
		{URI: "file:///c"},
	})
	if want := "text\n[file:///b: image/png, 5 bytes of binary data]\n"; got != want {
		t.Errorf("RenderResource = %q, want %q", got, want)
	}
}
