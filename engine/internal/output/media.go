package output

import (
	"bytes"
	"fmt"
	"mime"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The kinds of a [Media] item.
const (
	KindImage    = "image"
	KindAudio    = "audio"
	KindResource = "resource" // an embedded resource's blob
)

// Media is one binary item of a tool's content: an image, an audio clip
// or the blob of an embedded resource. Its fields are as the server sent
// them: untrusted.
type Media struct {
	// Index is the item's place in the content.
	Index int
	// Kind is KindImage, KindAudio or KindResource.
	Kind     string
	MIMEType string
	// URI is an embedded resource's.
	URI  string
	Data []byte
}

// MediaItems returns the binary items of items, in order: every image
// and audio item, and every embedded resource that holds a blob rather
// than text.
func MediaItems(items []mcp.Content) []Media {
	var out []Media
	for i, c := range items {
		switch v := c.(type) {
		case *mcp.ImageContent:
			out = append(out, Media{Index: i, Kind: KindImage, MIMEType: v.MIMEType, Data: v.Data})
		case *mcp.AudioContent:
			out = append(out, Media{Index: i, Kind: KindAudio, MIMEType: v.MIMEType, Data: v.Data})
		case *mcp.EmbeddedResource:
			if r := v.Resource; r != nil && r.Text == "" && len(r.Blob) > 0 {
				out = append(out, Media{Index: i, Kind: KindResource, MIMEType: r.MIMEType, URI: r.URI, Data: r.Blob})
			}
		}
	}
	return out
}

// ResourceMedia returns the binary items of a read resource's
// contents, in order: every one that holds a blob rather than text, as
// an item of KindResource whose Index is its place in contents.
func ResourceMedia(contents []*mcp.ResourceContents) []Media {
	var out []Media
	for i, r := range contents {
		if r != nil && r.Text == "" && len(r.Blob) > 0 {
			out = append(out, Media{Index: i, Kind: KindResource, MIMEType: r.MIMEType, URI: r.URI, Data: r.Blob})
		}
	}
	return out
}

// mediaType is one type of the allow list: its name and a check of the
// data's first bytes.
type mediaType struct {
	name  string
	magic func(b []byte) bool
}

func prefix(p string) func([]byte) bool {
	return func(b []byte) bool { return bytes.HasPrefix(b, []byte(p)) }
}

func riff(form string) func([]byte) bool {
	return func(b []byte) bool { return len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == form }
}

// mpegAudio is an MP3: an ID3 tag, or an MPEG audio frame's sync word.
func mpegAudio(b []byte) bool {
	return bytes.HasPrefix(b, []byte("ID3")) || (len(b) >= 2 && b[0] == 0xff && b[1]&0xe0 == 0xe0)
}

// adts is an AAC ADTS frame's sync word.
func adts(b []byte) bool { return len(b) >= 2 && b[0] == 0xff && b[1]&0xf6 == 0xf0 }

// mp4 is an ISO base media file: a box of type ftyp first.
func mp4(b []byte) bool { return len(b) >= 12 && string(b[4:8]) == "ftyp" }

func gif(b []byte) bool {
	return bytes.HasPrefix(b, []byte("GIF87a")) || bytes.HasPrefix(b, []byte("GIF89a"))
}

// mediaTypes is the allow list: the image and audio types that may reach
// a model, each with the magic bytes its data must start with. SVG is
// left out on purpose: it is a document that can hold scripts and
// links, not pixels.
var mediaTypes = map[string]mediaType{
	"image/png":    {"image/png", prefix("\x89PNG\r\n\x1a\n")},
	"image/jpeg":   {"image/jpeg", prefix("\xff\xd8\xff")},
	"image/jpg":    {"image/jpeg", prefix("\xff\xd8\xff")},
	"image/gif":    {"image/gif", gif},
	"image/webp":   {"image/webp", riff("WEBP")},
	"audio/wav":    {"audio/wav", riff("WAVE")},
	"audio/wave":   {"audio/wav", riff("WAVE")},
	"audio/x-wav":  {"audio/wav", riff("WAVE")},
	"audio/mpeg":   {"audio/mpeg", mpegAudio},
	"audio/mp3":    {"audio/mpeg", mpegAudio},
	"audio/ogg":    {"audio/ogg", prefix("OggS")},
	"audio/flac":   {"audio/flac", prefix("fLaC")},
	"audio/webm":   {"audio/webm", prefix("\x1a\x45\xdf\xa3")},
	"audio/aac":    {"audio/aac", adts},
	"audio/mp4":    {"audio/mp4", mp4},
	"audio/x-m4a":  {"audio/mp4", mp4},
	"audio/m4a":    {"audio/mp4", mp4},
	"audio/x-flac": {"audio/flac", prefix("fLaC")},
}

// MediaTypes returns the allow list's type names, as [CheckMedia]
// returns them, sorted.
func MediaTypes() []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range mediaTypes {
		if !seen[t.name] {
			seen[t.name] = true
			out = append(out, t.name)
		}
	}
	slices.Sort(out)
	return out
}

// CheckMedia checks an item before it may be passed on as it is: its
// declared MIME type (parameters aside, any case) must be on the allow
// list, of the item's kind (an image an image/ type, audio an audio/
// one; an embedded resource either), and its data must start with that
// type's magic bytes. It returns the type's name as the allow list
// spells it, or why the item may not pass; the reason quotes the
// declared type, which the caller must clean.
func CheckMedia(m Media) (string, error) {
	base, _, err := mime.ParseMediaType(m.MIMEType)
	if err != nil {
		base = strings.ToLower(strings.TrimSpace(m.MIMEType))
	}
	t, ok := mediaTypes[base]
	if !ok {
		return "", fmt.Errorf("%q is not an image or audio type voltmcp passes on", ClipUTF8(m.MIMEType, 64))
	}
	if m.Kind != KindResource && !strings.HasPrefix(t.name, m.Kind+"/") {
		return "", fmt.Errorf("%s content declared as %s", m.Kind, t.name)
	}
	if len(m.Data) == 0 {
		return "", fmt.Errorf("it holds no data")
	}
	if !t.magic(m.Data) {
		return "", fmt.Errorf("its data is not %s", t.name)
	}
	return t.name, nil
}
