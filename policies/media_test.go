package policies

import (
	"context"
	"strings"
	"testing"
)

func screenshot(bytes int) MediaInput {
	return MediaInput{Server: MediaServer{ID: "shots", Scope: "user"}, Tool: "screenshot", Risk: "read", Surface: "serve",
		Item: MediaItem{Kind: "image", MIMEType: "image/png", Bytes: bytes}}
}

// TestMediaDecision: the default lets an item through; a user or project
// deny keeps it out with its reason; a rule that fails to evaluate keeps
// it out too, with the error.
func TestMediaDecision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if d := mustLoad(t, nil).Media(ctx, screenshot(4033)); !d.Inline || d.Err != nil || len(d.Reasons) != 1 || d.Reasons[0].Rule != "default" {
		t.Errorf("default: %+v", d)
	}
	src := "package voltmcp.media\n\ndeny contains \"no large images\" if input.item.bytes > 1000\n"
	for _, opts := range []func(string) *Options{
		func(dir string) *Options { return &Options{Dirs: []string{dir}} },
		func(dir string) *Options { return &Options{ProjectFiles: projectFiles(t, dir)} },
	} {
		dir, file := writePolicy(t, "media.rego", src)
		p := mustLoad(t, opts(dir))
		if d := p.Media(ctx, screenshot(4033)); d.Inline || len(d.Reasons) != 1 || d.Reasons[0] != (Reason{Message: "no large images", Rule: "deny", File: file, Line: 3}) {
			t.Errorf("deny: %+v", d)
		}
		if d := p.Media(ctx, screenshot(10)); !d.Inline {
			t.Errorf("a small image was kept out: %+v", d)
		}
	}
	dir, file := writePolicy(t, "typo.rego", "package voltmcp.media\n\ndeny contains \"x\" if {\n\tto_number(input.item.mime_type) > 1\n}\n")
	d := mustLoad(t, &Options{Dirs: []string{dir}}).Media(ctx, screenshot(10))
	if d.Inline || d.Err == nil || len(d.Reasons) != 1 || d.Reasons[0].File != file || !strings.Contains(d.Reasons[0].Message, "failed closed") {
		t.Errorf("a failing rule: %+v", d)
	}
	raw, _, err := mustLoad(t, nil).Eval(ctx, AreaMedia, []byte(`{"item":{"kind":"image"}}`), false)
	if err != nil || !strings.Contains(string(raw), `"inline": false`) || !strings.Contains(string(raw), "mime_type must be string") {
		t.Errorf("eval of a bad input: %s, %v", raw, err)
	}
}
