package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/safefile"
)

// cacheFormat is the version of the metadata cache files. A file of
// another version is ignored, as if absent. Version 2 is keyed by the
// server's identity (cue.Server.Identity) instead of its name.
const cacheFormat = 2

// maxCacheFile bounds a cache file read at start.
const maxCacheFile = 64 << 20

// Metadata is what voltmcp knows of a server without connecting to it:
// the result of its last discovery, as stored in the cache.
type Metadata struct {
	Format int `json:"format"`
	// Server is the server id; Identity is the identity of the
	// definition the metadata was fetched with (cue.Server.Identity),
	// which also names the file. Metadata of another identity is not
	// used.
	Server   string `json:"server"`
	Identity string `json:"identity"`

	Name            string          `json:"name,omitempty"`
	Title           string          `json:"title,omitempty"`
	Version         string          `json:"version,omitempty"`
	ProtocolVersion string          `json:"protocolVersion,omitempty"`
	Transport       string          `json:"transport,omitempty"`
	Capabilities    json.RawMessage `json:"capabilities,omitempty"`

	Tools             []Tool             `json:"tools"`
	Resources         []Resource         `json:"resources,omitempty"`
	ResourceTemplates []ResourceTemplate `json:"resourceTemplates,omitempty"`
	Prompts           []Prompt           `json:"prompts,omitempty"`

	// Hash is the sha256 of the tools' hashes, in order: one value that
	// changes when any tool does.
	Hash string `json:"hash"`
	// Notes say what discovery cut short (a page limit, a repeated cursor)
	// and what else a person should know of it (ignored limits, pins).
	Notes     []string  `json:"notes,omitempty"`
	FetchedAt time.Time `json:"fetchedAt"`

	// Dropped lists the items the server listed that discovery left out
	// (an invalid tool name, a schema over the limits, tools over
	// maxTools), and Cleaned those it kept after removing hidden
	// characters or clipping text, each with the reason; at most 100
	// each, a note counting the rest.
	Dropped []DroppedItem `json:"dropped,omitempty"`
	Cleaned []DroppedItem `json:"cleaned,omitempty"`
	// Held holds the tools, as the server lists them now, whose change
	// since they were pinned waits for approval (schema-breaking or
	// escalation): Tools shows their pinned version meanwhile, and an
	// approval swaps these in. Never shown to a model.
	Held []Tool `json:"held,omitempty"`
	// Limits fingerprints the bounds the metadata was bounded with; a
	// cache bounded otherwise is bounded again when read.
	Limits string `json:"limits,omitempty"`
	// Ratings are the risks the engine rated the tools with when the
	// listing was written (see guard.rateListing), so that an engine
	// started later answers a search without running a classifier. A
	// rating is used only while the classifiers it was made with and
	// the tool's hash are unchanged; absent or stale, the tool is rated
	// again.
	Ratings *Ratings `json:"ratings,omitempty"`
}

// Ratings are the stored risk ratings of a server's tools.
type Ratings struct {
	// Classifier fingerprints what rated the tools for this server (see
	// guard.ratingKey): the engine's rating rules, each classifier
	// module's sha256 and limits in chain order, the server and whether
	// its config trusts its tool hints. Ratings of another fingerprint
	// are not used.
	Classifier string `json:"classifier"`
	// Tools maps a tool's hash (Tool.Hash, which covers everything a
	// classifier is shown of the tool) to its rating.
	Tools map[string]Rating `json:"tools"`
}

// Rating is the risk of one tool and why, as the classifiers answered
// without a fault.
type Rating struct {
	Risk   Risk   `json:"risk"`
	Reason string `json:"reason,omitempty"`
}

// Tool is one tool of a server, as listed.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	// TaskSupport is the tool's execution.taskSupport, "forbidden",
	// "optional" or "required", when the server listed one (MCP
	// 2025-11-25 tasks): whether the tool may, or must, be called as a
	// task. It is read from the raw listing of a stdio server; the go-sdk
	// does not decode it.
	TaskSupport string `json:"taskSupport,omitempty"`
	// Hash is the sha256 of the tool's canonical name, title,
	// description, schemas, annotations and task support.
	Hash string `json:"hash"`
}

// Resource is one resource of a server.
type Resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
	Size        int64  `json:"size,omitempty"`
}

// ResourceTemplate is one resource template of a server.
type ResourceTemplate struct {
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
}

// Prompt is one prompt of a server.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// Stale reports whether the metadata is older than maxAge; a maxAge of 0
// never goes stale.
func (m *Metadata) Stale(maxAge time.Duration, now time.Time) bool {
	return maxAge > 0 && now.Sub(m.FetchedAt) > maxAge
}

// toolHash hashes a tool's canonical JSON: its fields in a fixed order,
// schemas and annotations with sorted keys.
func toolHash(t Tool) string {
	canon := struct {
		Name         string `json:"name"`
		Title        string `json:"title"`
		Description  string `json:"description"`
		InputSchema  any    `json:"inputSchema"`
		OutputSchema any    `json:"outputSchema"`
		Annotations  any    `json:"annotations"`
		// Omitted when empty: the hash of a tool without it is what it
		// was before task support was read.
		TaskSupport string `json:"taskSupport,omitempty"`
	}{t.Name, t.Title, t.Description, canonical(t.InputSchema), canonical(t.OutputSchema), canonical(t.Annotations), t.TaskSupport}
	b, _ := json.Marshal(canon) // plain data; cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// canonical decodes JSON into plain values, which encoding/json writes
// back with sorted object keys.
func canonical(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	return v
}

// metadataHash combines the tool hashes.
func metadataHash(tools []Tool) string {
	h := sha256.New()
	for _, t := range tools {
		io.WriteString(h, t.Hash)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// cacheStore reads and writes the per-server metadata files under
// <agent-dir>/mcp/cache, one a server identity: <identity>.json.
type cacheStore struct{ dir string }

// path is the file of the server whose identity is ident.
func (c cacheStore) path(ident string) string { return filepath.Join(c.dir, ident+".json") }

// load reads a server's metadata. A missing file is (nil, nil); a file
// that is unreadable, corrupt, of another format or of another definition
// is an error that says so, and the server starts cold.
func (c cacheStore) load(srv cue.Server) (*Metadata, error) {
	ident := srv.Identity()
	data, err := safefile.ReadFile(c.path(ident), &safefile.ReadOptions{MaxSize: maxCacheFile})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, fmt.Errorf("metadata cache: file over %d bytes ignored", maxCacheFile)
	case err != nil:
		return nil, fmt.Errorf("metadata cache: %w", err)
	}
	var m Metadata
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("metadata cache: corrupt file ignored: %v", strings.TrimPrefix(err.Error(), "json: "))
	}
	switch {
	case m.Format != cacheFormat:
		return nil, fmt.Errorf("metadata cache: format %d ignored (want %d)", m.Format, cacheFormat)
	case m.Server != srv.ID || m.Identity != ident:
		return nil, errors.New("metadata cache: fetched for another definition of the server; ignored")
	}
	return &m, nil
}

// save writes a server's metadata atomically, 0600.
func (c cacheStore) save(m *Metadata) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("metadata cache: %w", err)
	}
	if err := safefile.WriteFile(c.path(m.Identity), data, nil); err != nil {
		return fmt.Errorf("metadata cache: %w", err)
	}
	return nil
}
