package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/npmpeers"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// serveClient serves e over stdio (the lean path answers the mcp tool,
// the SDK's server the direct tools) to a go-sdk client.
func serveClient(t *testing.T, ctx context.Context, e *Engine) *mcp.ClientSession {
	t.Helper()
	return serveClientWith(t, ctx, e, nil)
}

// serveClientWith is serveClient with a client of opts.
func serveClientWith(t *testing.T, ctx context.Context, e *Engine, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- e.ServeStdio(ctx, sr, sw) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, opts)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); cw.Close(); <-done })
	return cs
}

// mediaCall calls the media tool of server m through the mcp tool.
func mediaCall(t *testing.T, ctx context.Context, cs *mcp.ClientSession, args map[string]any) (*mcp.CallToolResult, CallResult) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{"action": "call", "server": "m", "tool": mcptest.ToolMedia, "arguments": args}})
	if err != nil {
		t.Fatal(err)
	}
	return res, structured(t, res)
}

func structured(t *testing.T, res *mcp.CallToolResult) CallResult {
	t.Helper()
	var out CallResult
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return out
}

// attachments returns the content blocks after the text.
func attachments(t *testing.T, res *mcp.CallToolResult) []mcp.Content {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatal("no content")
	}
	if _, ok := res.Content[0].(*mcp.TextContent); !ok {
		t.Fatalf("first block %T, want text", res.Content[0])
	}
	return res.Content[1:]
}

// TestMediaReachesTheAgent: images, audio and embedded image blobs an
// upstream sends reach a go-sdk client through serve as real MCP
// content, byte for byte, from the mcp tool's call and from a direct
// tool; an item over maxItemBytes, or past maxAnswerBytes, is described
// and kept for read_cache, which reads its base64 back; an item whose
// data is not what its type says is described only.
func TestMediaReachesTheAgent(t *testing.T) {
	t.Parallel()
	e := start(t, workspace(t, map[string]server{"m": stdio(mcptest.ModeMedia, server{"directTools": []string{mcptest.ToolMedia}})},
		map[string]any{"directTools": true, "media": map[string]any{"maxItemBytes": 4000, "maxAnswerBytes": 6000}}))
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	cs := serveClient(t, ctx, e)

	png := mcptest.MediaData("png", 3000)
	res, out := mediaCall(t, ctx, cs, map[string]any{"kind": "image", "mimeType": "image/png", "bytes": 3000})
	att := attachments(t, res)
	if len(att) != 1 {
		t.Fatalf("%d attachments: %s", len(att), text(res))
	}
	if img, ok := att[0].(*mcp.ImageContent); !ok || img.MIMEType != "image/png" || !bytes.Equal(img.Data, png) {
		t.Fatalf("attachment %T %+v", att[0], att[0])
	}
	if !strings.Contains(text(res), "[image image/png, 3000 bytes: attached as image content]") || len(out.Media) != 1 || !out.Media[0].Inline {
		t.Errorf("text %q, media %+v", text(res), out.Media)
	}

	// The same through the direct tool.
	dres, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__m__media", Arguments: map[string]any{"kind": "image", "mimeType": "image/png", "bytes": 3000}})
	if err != nil {
		t.Fatal(err)
	}
	if att := attachments(t, dres); len(att) != 1 || !bytes.Equal(att[0].(*mcp.ImageContent).Data, png) {
		t.Fatalf("direct tool: %s, %d attachments", text(dres), len(att))
	}

	// Audio, and an embedded image blob.
	res, _ = mediaCall(t, ctx, cs, map[string]any{"kind": "audio", "mimeType": "audio/x-wav", "magic": "wav", "bytes": 100})
	if att := attachments(t, res); len(att) != 1 || att[0].(*mcp.AudioContent).MIMEType != "audio/wav" || !bytes.Equal(att[0].(*mcp.AudioContent).Data, mcptest.MediaData("wav", 100)) {
		t.Errorf("audio: %s", text(res))
	}
	res, _ = mediaCall(t, ctx, cs, map[string]any{"kind": "resource", "mimeType": "image/png", "bytes": 100})
	if att := attachments(t, res); len(att) != 1 || att[0].(*mcp.EmbeddedResource).Resource.URI != "mcptest://media/0" ||
		!bytes.Equal(att[0].(*mcp.EmbeddedResource).Resource.Blob, mcptest.MediaData("png", 100)) {
		t.Errorf("embedded blob: %s", text(res))
	}

	// Over the item cap: described, kept, read back.
	big := mcptest.MediaData("png", 5000)
	res, out = mediaCall(t, ctx, cs, map[string]any{"kind": "image", "mimeType": "image/png", "bytes": 5000})
	if att := attachments(t, res); len(att) != 0 || len(out.Media) != 1 || out.Media[0].Inline || out.Media[0].Cache == nil ||
		!strings.Contains(text(res), "maxItemBytes") || !strings.Contains(text(res), out.Media[0].Cache.ID) {
		t.Fatalf("over the cap: %d attachments, text %q, media %+v", len(att), text(res), out.Media)
	}
	var b64 strings.Builder
	for off := int64(0); ; {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{"action": "read_cache", "cacheId": out.Media[0].Cache.ID, "offset": off}})
		if err != nil || r.IsError {
			t.Fatalf("read_cache: %v %s", err, text(r))
		}
		var page struct {
			Content     string `json:"content"`
			NextOffset  int64  `json:"nextOffset"`
			ContentType string `json:"contentType"`
			Encoding    string `json:"encoding"`
		}
		sb, _ := json.Marshal(r.StructuredContent)
		_ = json.Unmarshal(sb, &page)
		if page.ContentType != "image/png" || page.Encoding != "base64" {
			t.Fatalf("read_cache page %s", sb)
		}
		b64.WriteString(page.Content)
		if page.NextOffset == 0 {
			break
		}
		off = page.NextOffset
	}
	if got, err := base64.StdEncoding.DecodeString(b64.String()); err != nil || !bytes.Equal(got, big) {
		t.Errorf("read back %d bytes (%v), want the %d sent", len(got), err, len(big))
	}

	// Three of 2500 bytes against 6000 an answer: two pass, one is kept.
	res, out = mediaCall(t, ctx, cs, map[string]any{"kind": "image", "mimeType": "image/png", "bytes": 2500, "count": 3})
	if att := attachments(t, res); len(att) != 2 || len(out.Media) != 3 || out.Media[2].Inline || out.Media[2].Cache == nil ||
		!strings.Contains(out.Media[2].Reason, "maxAnswerBytes") {
		t.Errorf("answer cap: %d attachments, media %+v", len(att), out.Media)
	}

	// Lies: an ELF declared as a PNG, an SVG, a PNG declared as audio.
	for _, args := range []map[string]any{
		{"kind": "image", "mimeType": "image/png", "magic": "elf", "bytes": 100},
		{"kind": "image", "mimeType": "image/svg+xml", "bytes": 100},
		{"kind": "audio", "mimeType": "image/png", "bytes": 100},
	} {
		res, out = mediaCall(t, ctx, cs, args)
		if att := attachments(t, res); len(att) != 0 || len(out.Media) != 1 || out.Media[0].Inline || out.Media[0].Cache != nil ||
			!strings.Contains(text(res), "not passed on") {
			t.Errorf("%v: %d attachments, text %q, media %+v", args, len(att), text(res), out.Media)
		}
	}
}

// TestMediaOffDescribes: with settings.media.inline false, every item
// is described as before the setting existed, and nothing is attached.
func TestMediaOffDescribes(t *testing.T) {
	t.Parallel()
	e := start(t, workspace(t, map[string]server{"m": stdio(mcptest.ModeMedia, nil)}, map[string]any{"media": map[string]any{"inline": false}}))
	ctx := testwait.Context(t)
	cs := serveClient(t, ctx, e)
	res, out := mediaCall(t, ctx, cs, map[string]any{"kind": "image", "mimeType": "image/png", "bytes": 300})
	if att := attachments(t, res); len(att) != 0 || !strings.Contains(text(res), "[image image/png, 300 bytes]") ||
		len(out.Media) != 1 || out.Media[0].Reason != "settings.media.inline is off" {
		t.Errorf("%d attachments, text %q, media %+v", len(att), text(res), out.Media)
	}
}

// TestMediaPolicy: a voltmcp.media deny keeps an item out, with its
// reason, and a policy that fails to decide keeps every item out.
func TestMediaPolicy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "media.rego"), []byte("package voltmcp.media\n\n"+
		"deny contains \"no images over 200 bytes\" if input.item.bytes > 200\n"+
		"deny contains \"x\" if { input.item.kind == \"audio\"; to_number(input.item.mime_type) > 1 }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := workspace(t, map[string]server{"m": stdio(mcptest.ModeMedia, nil)}, nil)
	opts.PolicyDirs = []string{dir}
	e := start(t, opts)
	ctx := testwait.Context(t)
	cs := serveClient(t, ctx, e)
	res, _ := mediaCall(t, ctx, cs, map[string]any{"kind": "image", "mimeType": "image/png", "bytes": 100})
	if len(attachments(t, res)) != 1 {
		t.Errorf("a small image was kept out: %s", text(res))
	}
	res, out := mediaCall(t, ctx, cs, map[string]any{"kind": "image", "mimeType": "image/png", "bytes": 300})
	if len(attachments(t, res)) != 0 || !strings.Contains(text(res), "the media policy keeps it out: no images over 200 bytes") || out.Media[0].Cache != nil {
		t.Errorf("denied: %s", text(res))
	}
	res, _ = mediaCall(t, ctx, cs, map[string]any{"kind": "audio", "mimeType": "audio/wav", "magic": "wav", "bytes": 100})
	if len(attachments(t, res)) != 0 || !strings.Contains(text(res), "the media policy could not decide") {
		t.Errorf("a failing policy: %s", text(res))
	}
	// A resource's blob is asked about as a call's.
	res, media := readResource(t, ctx, cs, "m", mcptest.MediaResource("png", 300, 1, "image/png"))
	if len(attachments(t, res)) != 0 || !strings.Contains(text(res), "the media policy keeps it out: no images over 200 bytes") || media[0].Cache != nil {
		t.Errorf("a resource denied: %s", text(res))
	}
}

// TestPeerEverythingTinyImage: server-everything's get-tiny-image
// reaches a go-sdk client through serve as the image the server sent:
// the same bytes a client of the server itself gets.
func TestPeerEverythingTinyImage(t *testing.T) {
	t.Parallel()
	srv := nodeServer(t, npmpeers.EverythingEntry, "stdio")
	e := start(t, workspace(t, map[string]server{"everything": srv}, nil))
	ctx := testwait.Context(t)

	direct := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cmd := exec.Command(npmpeers.Node(t), npmpeers.Path(t, npmpeers.EverythingEntry), "stdio")
	cmd.Env = []string{"PATH=" + filepath.Dir(npmpeers.Node(t)), "HOME=" + t.TempDir()}
	upstream, err := direct.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer upstream.Close()
	want, err := upstream.CallTool(ctx, &mcp.CallToolParams{Name: "get-tiny-image"})
	if err != nil {
		t.Fatal(err)
	}
	var sent *mcp.ImageContent
	for _, c := range want.Content {
		if img, ok := c.(*mcp.ImageContent); ok {
			sent = img
		}
	}
	if sent == nil {
		t.Fatal("server-everything sent no image")
	}

	cs := serveClient(t, ctx, e)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{"action": "call", "server": "everything", "tool": "get-tiny-image"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %s", err, text(res))
	}
	att := attachments(t, res)
	if len(att) != 1 {
		t.Fatalf("%d attachments: %s", len(att), text(res))
	}
	if img, ok := att[0].(*mcp.ImageContent); !ok || img.MIMEType != "image/png" || !bytes.Equal(img.Data, sent.Data) {
		t.Errorf("got %T, want the %d bytes of image/png the server sent", att[0], len(sent.Data))
	}
	if !strings.Contains(text(res), "Here's the image you requested:") {
		t.Errorf("text %q", text(res))
	}
}

// readResource reads uri of server m through the mcp tool.
func readResource(t *testing.T, ctx context.Context, cs *mcp.ClientSession, server, uri string) (*mcp.CallToolResult, []MediaItem) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{"action": "read_resource", "server": server, "resourceUri": uri}})
	if err != nil || res.IsError {
		t.Fatalf("read_resource %s: %v %s", uri, err, text(res))
	}
	var out struct {
		Media []MediaItem `json:"media"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return res, out.Media
}

// TestMediaResourceReachesTheAgent: the image and audio blobs of a
// resource read with read_resource are decided as a call's: passed on as
// embedded resources, byte for byte, within the caps; over them
// described and kept for read_cache; a blob whose data is not its type,
// or whose type is not on the allow list, described only and not kept.
func TestMediaResourceReachesTheAgent(t *testing.T) {
	t.Parallel()
	e := start(t, workspace(t, map[string]server{"m": stdio(mcptest.ModeMedia, nil)},
		map[string]any{"media": map[string]any{"maxItemBytes": 4000, "maxAnswerBytes": 6000}}))
	ctx := testwait.Context(t)
	cs := serveClient(t, ctx, e)

	uri := mcptest.MediaResource("png", 3000, 1, "image/png")
	res, media := readResource(t, ctx, cs, "m", uri)
	att := attachments(t, res)
	if len(att) != 1 {
		t.Fatalf("%d attachments: %s", len(att), text(res))
	}
	if r, ok := att[0].(*mcp.EmbeddedResource); !ok || r.Resource.URI != uri+"#0" || r.Resource.MIMEType != "image/png" ||
		!bytes.Equal(r.Resource.Blob, mcptest.MediaData("png", 3000)) {
		t.Fatalf("attachment %T %+v", att[0], att[0])
	}
	if !strings.Contains(text(res), "["+uri+"#0: image/png, 3000 bytes of binary data: attached as resource content]") ||
		len(media) != 1 || !media[0].Inline || media[0].Kind != "resource" {
		t.Errorf("text %q, media %+v", text(res), media)
	}

	res, _ = readResource(t, ctx, cs, "m", mcptest.MediaResource("wav", 100, 1, "audio/x-wav"))
	if att := attachments(t, res); len(att) != 1 || att[0].(*mcp.EmbeddedResource).Resource.MIMEType != "audio/wav" {
		t.Errorf("audio: %s", text(res))
	}

	// Over the item cap: described, kept under the resource's URI, read back.
	res, media = readResource(t, ctx, cs, "m", mcptest.MediaResource("png", 5000, 1, "image/png"))
	if att := attachments(t, res); len(att) != 0 || len(media) != 1 || media[0].Inline || media[0].Cache == nil ||
		!strings.Contains(text(res), "maxItemBytes") || !strings.Contains(text(res), media[0].Cache.ID) {
		t.Fatalf("over the cap: %d attachments, text %q, media %+v", len(att), text(res), media)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{"action": "read_cache", "cacheId": media[0].Cache.ID}})
	if err != nil || r.IsError {
		t.Fatalf("read_cache: %v %s", err, text(r))
	}
	if sb, _ := json.Marshal(r.StructuredContent); !strings.Contains(string(sb), `"contentType":"image/png"`) ||
		!strings.Contains(string(sb), base64.StdEncoding.EncodeToString(mcptest.MediaData("png", 5000))[:64]) {
		t.Errorf("read_cache page %.300s", sb)
	}

	// Three of 2500 bytes against 6000 an answer: two pass, one is kept.
	res, media = readResource(t, ctx, cs, "m", mcptest.MediaResource("png", 2500, 3, "image/png"))
	if att := attachments(t, res); len(att) != 2 || len(media) != 3 || media[2].Inline || media[2].Cache == nil ||
		!strings.Contains(media[2].Reason, "maxAnswerBytes") {
		t.Errorf("answer cap: %d attachments, media %+v", len(att), media)
	}

	// Lies and types off the list: described, not kept.
	for _, uri := range []string{mcptest.MediaResource("elf", 100, 1, "image/png"), mcptest.MediaResource("png", 100, 1, "image/svg+xml"),
		mcptest.MediaResource("png", 100, 1, "application/octet-stream")} {
		res, media = readResource(t, ctx, cs, "m", uri)
		if att := attachments(t, res); len(att) != 0 || len(media) != 1 || media[0].Inline || media[0].Cache != nil ||
			!strings.Contains(text(res), "not passed on") {
			t.Errorf("%s: %d attachments, text %q, media %+v", uri, len(att), text(res), media)
		}
	}
}

// TestMediaResourceOffDescribes: with settings.media.inline false a
// resource's blob is described as before the setting existed.
func TestMediaResourceOffDescribes(t *testing.T) {
	t.Parallel()
	e := start(t, workspace(t, map[string]server{"m": stdio(mcptest.ModeMedia, nil)}, map[string]any{"media": map[string]any{"inline": false}}))
	ctx := testwait.Context(t)
	cs := serveClient(t, ctx, e)
	uri := mcptest.MediaResource("png", 300, 1, "image/png")
	res, media := readResource(t, ctx, cs, "m", uri)
	if att := attachments(t, res); len(att) != 0 || text(res) != "["+uri+"#0: image/png, 300 bytes of binary data]" ||
		len(media) != 1 || media[0].Reason != "settings.media.inline is off" {
		t.Errorf("%d attachments, text %q, media %+v", len(att), text(res), media)
	}
}

// TestPeerEverythingBlobResource: server-everything's dynamic blob
// resource, base64 of text declared text/plain, reaches the agent
// described, not passed on: its type is not an image or audio type.
func TestPeerEverythingBlobResource(t *testing.T) {
	t.Parallel()
	srv := nodeServer(t, npmpeers.EverythingEntry, "stdio")
	e := start(t, workspace(t, map[string]server{"everything": srv}, nil))
	ctx := testwait.Context(t)
	cs := serveClient(t, ctx, e)
	res, media := readResource(t, ctx, cs, "everything", "demo://resource/dynamic/blob/1")
	if att := attachments(t, res); len(att) != 0 || len(media) != 1 || media[0].Inline || media[0].Cache != nil ||
		!strings.Contains(text(res), `not passed on: "text/plain" is not an image or audio type voltmcp passes on`) {
		t.Errorf("%d attachments, text %q, media %+v", len(att), text(res), media)
	}
}
