// Command files is a small MCP server over stdio: a read-only browser of
// one directory tree, the root, given as its first argument.
//
//	files DIR
//
// Its tools list_dir, read_file and file_info take paths relative to the
// root ("" or "." is the root itself; an absolute path must lie inside
// it). A path that leaves the root, by ".." or through a symbolic link, is
// refused.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/pollio"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("files: ")
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: files DIR")
		os.Exit(2)
	}
	b, err := newBrowser(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	defer b.root.Close()
	// Stdio through Go's poller, as in examples/servers/clock.
	in, out, restore := pollio.Stdio()
	err = newServer(b).Run(context.Background(), &mcp.IOTransport{Reader: in, Writer: out})
	restore()
	if err != nil {
		log.Fatal(err)
	}
}

// Limits of what one call returns.
const (
	maxReadBytes = 256 << 10
	maxEntries   = 1000
)

// A browser reads files under one directory.
type browser struct {
	dir  string   // the root: absolute, clean, symbolic links resolved
	root *os.Root // the same directory; opening through it cannot escape it
}

// newBrowser returns a browser rooted at dir.
func newBrowser(dir string) (*browser, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, err
	}
	return &browser{dir: abs, root: root}, nil
}

// inside reports whether the clean, absolute path p is the root or below it.
func (b *browser) inside(p string) bool {
	return p == b.dir || strings.HasPrefix(p, strings.TrimSuffix(b.dir, string(filepath.Separator))+string(filepath.Separator))
}

// resolve turns a path given by a client into a path relative to the root,
// with symbolic links resolved, and refuses one that leaves the root.
func (b *browser) resolve(p string) (string, error) {
	full := filepath.Join(b.dir, filepath.FromSlash(p)) // Join cleans: "a/../.." stays a path to check
	if filepath.IsAbs(p) {
		full = filepath.Clean(p)
	}
	if !b.inside(full) {
		return "", fmt.Errorf("path %q is outside the root", p)
	}
	real, err := filepath.EvalSymlinks(full)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("path %q does not exist", p)
	}
	if err != nil {
		return "", fmt.Errorf("path %q: %v", p, b.hide(err))
	}
	if !b.inside(real) {
		return "", fmt.Errorf("path %q leads outside the root through a symbolic link", p)
	}
	rel, err := filepath.Rel(b.dir, real)
	if err != nil {
		return "", err
	}
	return rel, nil
}

// hide replaces the root's absolute path in an error with ".", so errors
// do not tell the client where the root is.
func (b *browser) hide(err error) string {
	return strings.ReplaceAll(err.Error(), b.dir, ".")
}

// kind names the type of a file.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "dir"
	case m.IsRegular():
		return "file"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "other"
}

type pathInput struct {
	Path string `json:"path,omitempty" jsonschema:"a path relative to the root, with / between names; empty or . for the root"`
}

type entry struct {
	Name string `json:"name"`
	Type string `json:"type"` // file, dir, symlink or other
	Size int64  `json:"size,omitempty"`
}

type listOutput struct {
	Path      string  `json:"path"`
	Entries   []entry `json:"entries"`
	Truncated bool    `json:"truncated,omitempty"`
}

type infoOutput struct {
	Path     string `json:"path"`
	Type     string `json:"type"`
	Size     int64  `json:"size"`
	Mode     string `json:"mode"`
	Modified string `json:"modified"`
}

func readOnly() *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
}

// newServer returns the files server over b.
func newServer(b *browser) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "files", Title: "Files", Version: "0.1.0"}, nil)

	mcp.AddTool(s, &mcp.Tool{
		Name:        "list_dir",
		Description: fmt.Sprintf("List a directory under the root: each entry's name, type (file, dir, symlink) and size; at most %d entries.", maxEntries),
		Annotations: readOnly(),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in pathInput) (*mcp.CallToolResult, listOutput, error) {
		rel, err := b.resolve(in.Path)
		if err != nil {
			return nil, listOutput{}, err
		}
		f, err := b.root.Open(rel)
		if err != nil {
			return nil, listOutput{}, errors.New(b.hide(err))
		}
		defer f.Close()
		list, err := f.ReadDir(-1)
		if err != nil {
			return nil, listOutput{}, fmt.Errorf("path %q is not a directory", in.Path)
		}
		slices.SortFunc(list, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		out := listOutput{Path: filepath.ToSlash(rel), Entries: []entry{}}
		for _, d := range list {
			if len(out.Entries) == maxEntries {
				out.Truncated = true
				break
			}
			e := entry{Name: d.Name(), Type: kind(d.Type())}
			if info, err := d.Info(); err == nil && e.Type == "file" {
				e.Size = info.Size()
			}
			out.Entries = append(out.Entries, e)
		}
		return nil, out, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "read_file",
		Description: fmt.Sprintf("Read a text file under the root. Returns its text, at most %d KiB of it; binary files are refused.", maxReadBytes>>10),
		Annotations: readOnly(),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in pathInput) (*mcp.CallToolResult, any, error) {
		rel, err := b.resolve(in.Path)
		if err != nil {
			return nil, nil, err
		}
		f, err := b.root.Open(rel)
		if err != nil {
			return nil, nil, errors.New(b.hide(err))
		}
		defer f.Close()
		if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
			return nil, nil, fmt.Errorf("path %q is not a regular file", in.Path)
		}
		data, err := io.ReadAll(io.LimitReader(f, maxReadBytes+1))
		if err != nil {
			return nil, nil, errors.New(b.hide(err))
		}
		more := len(data) > maxReadBytes
		if more {
			data = data[:maxReadBytes]
			for range utf8.UTFMax - 1 { // drop a character the cut split
				if r, n := utf8.DecodeLastRune(data); r != utf8.RuneError || n != 1 {
					break
				}
				data = data[:len(data)-1]
			}
		}
		if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
			return nil, nil, fmt.Errorf("path %q is a binary file; file_info describes it", in.Path)
		}
		text := string(data)
		if more {
			text += fmt.Sprintf("\n[… cut at %d KiB]\n", maxReadBytes>>10)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "file_info",
		Description: "Describe a file or directory under the root: type, size, permissions and modification time.",
		Annotations: readOnly(),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in pathInput) (*mcp.CallToolResult, infoOutput, error) {
		rel, err := b.resolve(in.Path)
		if err != nil {
			return nil, infoOutput{}, err
		}
		info, err := b.root.Stat(rel)
		if err != nil {
			return nil, infoOutput{}, errors.New(b.hide(err))
		}
		return nil, infoOutput{
			Path: filepath.ToSlash(rel), Type: kind(info.Mode()), Size: info.Size(),
			Mode: info.Mode().Perm().String(), Modified: info.ModTime().UTC().Format(time.RFC3339),
		}, nil
	})
	return s
}
