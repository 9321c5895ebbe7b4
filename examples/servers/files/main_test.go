package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tree makes a root directory with a few files, a symbolic link inside it
// and two that lead out of it, next to a secret file outside the root.
func tree(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	write := func(name, text string) {
		p := filepath.Join(base, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("secret.txt", "top secret\n")
	write("root/readme.md", "# Hello\n")
	write("root/docs/guide.md", "Read me first.\n")
	write("root/bin.dat", "\x00\x01\x02")
	for link, target := range map[string]string{
		"root/guide-link.md": "docs/guide.md",
		"root/escape.txt":    "../secret.txt",
		"root/docs/up":       "../..",
	} {
		if err := os.Symlink(target, filepath.Join(base, filepath.FromSlash(link))); err != nil {
			t.Skip("cannot make symbolic links here:", err)
		}
	}
	return root
}

// session serves a files server rooted at root in memory.
func session(t *testing.T, root string) *mcp.ClientSession {
	t.Helper()
	b, err := newBrowser(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := newServer(b).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait(); b.root.Close() })
	return cs
}

// call calls a tool with a path and returns its text and whether it is a
// tool error.
func call(t *testing.T, cs *mcp.ClientSession, tool, path string) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"path": path}})
	if err != nil {
		t.Fatalf("%s %q: %v", tool, path, err)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

func TestBrowse(t *testing.T) {
	root := tree(t)
	cs := session(t, root)

	text, isErr := call(t, cs, "list_dir", "")
	var list listOutput
	if isErr || json.Unmarshal([]byte(text), &list) != nil {
		t.Fatalf("list_dir: %s", text)
	}
	var names []string
	for _, e := range list.Entries {
		names = append(names, e.Name+":"+e.Type)
	}
	if got, want := strings.Join(names, " "), "bin.dat:file docs:dir escape.txt:symlink guide-link.md:symlink readme.md:file"; got != want {
		t.Errorf("list_dir entries: %s, want %s", got, want)
	}

	if text, _ := call(t, cs, "read_file", "readme.md"); text != "# Hello\n" {
		t.Errorf("read_file readme.md: %q", text)
	}
	if text, _ := call(t, cs, "read_file", "guide-link.md"); text != "Read me first.\n" {
		t.Errorf("read_file through a link inside the root: %q", text)
	}
	if text, _ := call(t, cs, "read_file", filepath.Join(root, "docs", "guide.md")); text != "Read me first.\n" {
		t.Errorf("read_file by absolute path inside the root: %q", text)
	}
	if text, isErr := call(t, cs, "read_file", "bin.dat"); !isErr || !strings.Contains(text, "binary") {
		t.Errorf("read_file bin.dat: %q", text)
	}

	text, _ = call(t, cs, "file_info", "docs/guide.md")
	var info infoOutput
	if err := json.Unmarshal([]byte(text), &info); err != nil || info.Path != "docs/guide.md" || info.Type != "file" || info.Size != 15 {
		t.Errorf("file_info: %s", text)
	}
}

func TestRefusesEscapes(t *testing.T) {
	cs := session(t, tree(t))
	for _, tc := range []struct{ tool, path, want string }{
		{"read_file", "../secret.txt", "outside the root"},
		{"read_file", "docs/../../secret.txt", "outside the root"},
		{"read_file", "/etc/passwd", "outside the root"},
		{"read_file", "escape.txt", "through a symbolic link"},
		{"list_dir", "docs/up", "through a symbolic link"},
		{"file_info", "docs/up/secret.txt", "through a symbolic link"},
		{"read_file", "missing.txt", "does not exist"},
		{"list_dir", "readme.md", "not a directory"},
	} {
		text, isErr := call(t, cs, tc.tool, tc.path)
		if !isErr || !strings.Contains(text, tc.want) {
			t.Errorf("%s %q: error %v, %q; want an error with %q", tc.tool, tc.path, isErr, text, tc.want)
		}
		if strings.Contains(text, "top secret") {
			t.Errorf("%s %q leaked the secret: %q", tc.tool, tc.path, text)
		}
	}
}

func TestTools(t *testing.T) {
	cs := session(t, t.TempDir())
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 3 {
		t.Errorf("%d tools, want 3", len(res.Tools))
	}
	for _, tool := range res.Tools {
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("%s is not marked read-only", tool.Name)
		}
	}
}
