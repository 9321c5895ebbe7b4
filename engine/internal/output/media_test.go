package output

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCheckMedia(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nrest")
	wav := []byte("RIFF\x00\x00\x00\x00WAVEfmt ")
	for _, c := range []struct {
		m    Media
		want string // the type, or "" for refused
		why  string // in the reason
	}{
		{Media{Kind: KindImage, MIMEType: "image/png", Data: png}, "image/png", ""},
		{Media{Kind: KindImage, MIMEType: "IMAGE/PNG; x=y", Data: png}, "image/png", ""},
		{Media{Kind: KindAudio, MIMEType: "audio/x-wav", Data: wav}, "audio/wav", ""},
		{Media{Kind: KindResource, MIMEType: "image/png", Data: png}, "image/png", ""},
		{Media{Kind: KindImage, MIMEType: "image/jpeg", Data: []byte("\xff\xd8\xff\xe0")}, "image/jpeg", ""},
		{Media{Kind: KindAudio, MIMEType: "audio/mpeg", Data: []byte("ID3\x04")}, "audio/mpeg", ""},
		// An ELF claiming to be a PNG.
		{Media{Kind: KindImage, MIMEType: "image/png", Data: []byte("\x7fELF\x02\x01\x01")}, "", "its data is not image/png"},
		{Media{Kind: KindImage, MIMEType: "image/svg+xml", Data: []byte("<svg/>")}, "", "not an image or audio type"},
		{Media{Kind: KindImage, MIMEType: "application/x-executable", Data: png}, "", "not an image or audio type"},
		{Media{Kind: KindImage, MIMEType: "audio/wav", Data: wav}, "", "image content declared as audio/wav"},
		{Media{Kind: KindImage, MIMEType: "image/png"}, "", "no data"},
		{Media{Kind: KindResource, MIMEType: "application/zip", Data: []byte("PK\x03\x04")}, "", "not an image or audio type"},
	} {
		got, err := CheckMedia(c.m)
		if got != c.want || (err == nil) != (c.why == "") || (err != nil && !strings.Contains(err.Error(), c.why)) {
			t.Errorf("%s %q: %q, %v; want %q, %q", c.m.Kind, c.m.MIMEType, got, err, c.want, c.why)
		}
	}
	if ts := MediaTypes(); len(ts) == 0 || ts[0] != "audio/aac" {
		t.Errorf("MediaTypes = %v", ts)
	}
}

func TestMediaItemsAndRenderNoted(t *testing.T) {
	items := []mcp.Content{
		&mcp.TextContent{Text: "hi"},
		&mcp.ImageContent{MIMEType: "image/png", Data: []byte{1, 2, 3}},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///t", Text: "text"}},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b", MIMEType: "audio/ogg", Blob: []byte{4}}},
		&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte{5, 6}},
	}
	ms := MediaItems(items)
	if len(ms) != 3 || ms[0].Index != 1 || ms[1].Kind != KindResource || ms[1].URI != "file:///b" || ms[2].Kind != KindAudio {
		t.Fatalf("MediaItems = %+v", ms)
	}
	got := RenderNoted(items, map[int]string{1: ": attached", 3: ": kept"})
	want := "hi\n[image image/png, 3 bytes: attached]\ntext\n[resource file:///b, audio/ogg, 1 bytes: kept]\n[audio audio/wav, 2 bytes]"
	if got != want {
		t.Errorf("RenderNoted = %q, want %q", got, want)
	}
}

func TestPutMediaReadsBackAsBase64(t *testing.T) {
	s := NewStore(t.TempDir(), "ws", nil)
	data := []byte("\x89PNG\r\n\x1a\n\x00\xff binary")
	id, err := s.PutMedia(Source{Server: "srv"}, "shot", "image/png", data)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Read(id, ReadRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r.ContentType != "image/png" || r.Encoding != "base64" || r.Content != base64.StdEncoding.EncodeToString(data) {
		t.Errorf("read %+v", r)
	}
	if r, err := s.Read(mustPut(t, s, "text"), ReadRequest{}); err != nil || r.Encoding != "" || r.ContentType != "" {
		t.Errorf("a text output reads as %+v, %v", r, err)
	}
	small := NewStore(t.TempDir(), "ws", &StoreOptions{MaxBytes: 1 << 20})
	if _, err := small.PutMedia(Source{Server: "srv"}, "shot", "image/png", make([]byte, 1<<20)); err == nil {
		t.Error("an item over the quota was kept, cut")
	}
}
