package mcptest

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ModeMedia (SDK, also over HTTP) is behave plus the tool [ToolMedia],
// which answers with images, audio or embedded blobs of a chosen size,
// type and content, lies included, and the resource template
// [MediaResourceTemplate], whose resources are such blobs.
const ModeMedia = "media"

// ToolMedia answers with a text, then Count items (1 when not given)
// of MediaIn's kind, type and size, each holding [MediaData] of its
// magic.
const ToolMedia = "media"

// MediaIn is the input of [ToolMedia].
type MediaIn struct {
	// Kind is "image", "audio" or "resource" (an embedded blob).
	Kind string `json:"kind" jsonschema:"image, audio or resource"`
	// MIMEType is the type the item declares.
	MIMEType string `json:"mimeType" jsonschema:"the MIME type the item declares"`
	// Magic names what the data really is: png, jpeg, wav or elf.
	Magic string `json:"magic,omitempty" jsonschema:"what the data really is: png (the default), jpeg, wav or elf"`
	// Bytes is the size of each item's data.
	Bytes int `json:"bytes" jsonschema:"the size of each item's data"`
	Count int `json:"count,omitempty" jsonschema:"how many items (default 1)"`
}

// mediaMagic are the first bytes of the data of each Magic.
var mediaMagic = map[string]string{
	"png":  "\x89PNG\r\n\x1a\n",
	"jpeg": "\xff\xd8\xff\xe0",
	"wav":  "RIFF\x24\x00\x00\x00WAVEfmt ",
	"elf":  "\x7fELF\x02\x01\x01\x00",
}

// MediaData returns n bytes that start with the magic bytes of magic
// (png, jpeg, wav or elf; "" is png) and then cycle through every byte
// value: the data of each item [ToolMedia] answers with.
func MediaData(magic string, n int) []byte {
	if magic == "" {
		magic = "png"
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	copy(b, mediaMagic[magic])
	return b
}

// MediaResourceTemplate is the URI template of mode media's blob
// resources: Count blobs of MIMEType, each Bytes of MediaData(Magic).
const MediaResourceTemplate = "mcptest://media/{magic}/{bytes}/{count}/{+mimeType}"

// MediaResource is the URI of mode media's resource that holds count
// blobs declared as mimeType, each the n bytes of MediaData(magic).
func MediaResource(magic string, n, count int, mimeType string) string {
	return fmt.Sprintf("mcptest://media/%s/%d/%d/%s", magic, n, count, mimeType)
}

// mediaResource reads a resource of MediaResourceTemplate.
func mediaResource(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	parts := strings.SplitN(strings.TrimPrefix(req.Params.URI, "mcptest://media/"), "/", 4)
	if len(parts) != 4 {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	n, err1 := strconv.Atoi(parts[1])
	count, err2 := strconv.Atoi(parts[2])
	if _, ok := mediaMagic[parts[0]]; !ok || err1 != nil || err2 != nil || n < 0 || n > maxBigBytes || count < 1 || count > 100 {
		return nil, fmt.Errorf("mcptest: a media resource is %s: a known magic, bytes up to %d, count 1 to 100", MediaResourceTemplate, maxBigBytes)
	}
	res := &mcp.ReadResourceResult{}
	for i := range count {
		res.Contents = append(res.Contents, &mcp.ResourceContents{URI: fmt.Sprintf("%s#%d", req.Params.URI, i), MIMEType: parts[3], Blob: MediaData(parts[0], n)})
	}
	return res, nil
}

// addMedia adds the tool and the resource template of mode media.
func addMedia(s *mcp.Server) {
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: MediaResourceTemplate, Name: "media",
		Description: "Blobs of a chosen type, content, size and number."}, mediaResource)
	mcp.AddTool(s, &mcp.Tool{
		Name:        ToolMedia,
		Description: "Returns images, audio or embedded blobs of a chosen kind, type, content and size.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in MediaIn) (*mcp.CallToolResult, any, error) {
		if in.Bytes < 0 || in.Bytes > maxBigBytes || in.Count < 0 || in.Count > 100 {
			return nil, nil, fmt.Errorf("mcptest: bytes must be between 0 and %d, count between 0 and 100", maxBigBytes)
		}
		if _, ok := mediaMagic[in.Magic]; !ok && in.Magic != "" {
			return nil, nil, fmt.Errorf("mcptest: unknown magic %q", in.Magic)
		}
		n := max(in.Count, 1)
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%d %s items follow", n, in.Kind)}}}
		for i := range n {
			data := MediaData(in.Magic, in.Bytes)
			switch in.Kind {
			case "image":
				res.Content = append(res.Content, &mcp.ImageContent{MIMEType: in.MIMEType, Data: data})
			case "audio":
				res.Content = append(res.Content, &mcp.AudioContent{MIMEType: in.MIMEType, Data: data})
			case "resource":
				res.Content = append(res.Content, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
					URI: fmt.Sprintf("mcptest://media/%d", i), MIMEType: in.MIMEType, Blob: data}})
			default:
				return nil, nil, fmt.Errorf("mcptest: unknown kind %q", in.Kind)
			}
		}
		return res, nil, nil
	})
}
