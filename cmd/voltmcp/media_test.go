package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/internal/mcptest"
)

// TestCallDescribesMedia: voltmcp call prints a description line for an
// image, never its bytes; one over the cap names 'voltmcp read-cache
// ID', which prints its base64; --json shows the structured result.
// voltmcp read-resource does the same for a resource's blobs.
func TestCallDescribesMedia(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	cmd, args, env := mcptest.Command(mcptest.ModeMedia)
	doc := map[string]any{"version": 1, "settings": map[string]any{"media": map[string]any{"maxItemBytes": 1000}},
		"servers": map[string]any{"m": map[string]any{"command": cmd, "args": args, "env": env}}}
	data, _ := json.Marshal(doc)
	os.MkdirAll(filepath.Join(project, ".volt"), 0o755)
	if err := os.WriteFile(filepath.Join(project, ".volt", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	fenv := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
	cli := func(args ...string) cliResult {
		return runCLI(t, fenv, append(args, "--home", home, "--project", project, "--approve")...)
	}
	r := cli("call", "m", "media", "--args", `{"kind":"image","mimeType":"image/png","bytes":300}`)
	if r.code != exitOK || !strings.Contains(r.stdout, "[image image/png, 300 bytes: attached as image content]\n") || strings.Contains(r.stdout, "PNG") {
		t.Fatalf("call:\n%s", r)
	}
	r = cli("call", "m", "media", "--args", `{"kind":"image","mimeType":"image/png","bytes":3000}`)
	m := regexp.MustCompile(`maxItemBytes \(1000 bytes\); its base64 is kept: voltmcp read-cache (mcpout_[a-z2-7]+)\]`).FindStringSubmatch(r.stdout)
	if r.code != exitOK || m == nil {
		t.Fatalf("an image over the cap:\n%s", r)
	}
	if r := cli("read-cache", m[1]); r.code != exitOK || !strings.HasPrefix(r.stdout, "iVBORw0KGgo") || !strings.Contains(r.stdout, "[base64 of image/png data]") {
		t.Errorf("read-cache of the image:\n%s", r)
	}
	r = cli("call", "m", "media", "--args", `{"kind":"image","mimeType":"image/png","bytes":300}`, "--json")
	var res struct {
		Media []struct {
			Kind   string `json:"kind"`
			Bytes  int    `json:"bytes"`
			Inline bool   `json:"inline"`
		} `json:"media"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); r.code != exitOK || err != nil || len(res.Media) != 1 || !res.Media[0].Inline || res.Media[0].Bytes != 300 {
		t.Errorf("call --json (%v):\n%s", err, r)
	}

	// A resource's blobs likewise, through read-resource.
	r = cli("read-resource", "m", mcptest.MediaResource("png", 300, 1, "image/png"))
	if r.code != exitOK || !strings.Contains(r.stdout, ": image/png, 300 bytes of binary data: attached as resource content]\n") || strings.Contains(r.stdout, "PNG") {
		t.Errorf("read-resource:\n%s", r)
	}
	r = cli("read-resource", "m", mcptest.MediaResource("png", 3000, 1, "image/png"))
	if m := regexp.MustCompile(`maxItemBytes \(1000 bytes\); its base64 is kept: voltmcp read-cache (mcpout_[a-z2-7]+)\]`).FindStringSubmatch(r.stdout); r.code != exitOK || m == nil {
		t.Errorf("read-resource of a blob over the cap:\n%s", r)
	}
}
