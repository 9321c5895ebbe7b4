package cue

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/voltmcp/voltmcp/redact"
)

// Config is the effective configuration after the layers merge: plain Go
// data, with every default filled in and every ${env:NAME} reference still
// a reference. The engine consumes it; nothing in it is resolved from the
// host environment.
type Config struct {
	Settings Settings `json:"settings"`
	// Policies are the Rego files and directories the loaded layers add
	// to the policy bundle (settings.policies), in layer order, made
	// absolute. Unlike other settings they add up across layers, so a
	// project cannot drop a user's policy.
	Policies []PolicySource `json:"policies,omitempty"`
	// Servers are sorted by ID.
	Servers []Server `json:"servers"`
	// Sources maps a field path of the effective config, such as
	// "settings.maxOutputBytes" or "servers.github.args", to where its
	// value came from. Built-in defaults have Layer "default".
	Sources map[string]Origin `json:"-"`
}

// ServerSource returns where a field of a server's effective definition
// came from (Sources), such as the "enabled" that disables it.
func (c *Config) ServerSource(id, field string) (Origin, bool) {
	o, ok := c.Sources[childPath(childPath("servers", NormalizeID(id)), field)]
	return o, ok
}

// Server returns the server with the given id, normalized first.
func (c *Config) Server(id string) (Server, bool) {
	id = NormalizeID(id)
	i := sort.Search(len(c.Servers), func(i int) bool { return c.Servers[i].ID >= id })
	if i < len(c.Servers) && c.Servers[i].ID == id {
		return c.Servers[i], true
	}
	return Server{}, false
}

// PolicySource is one entry of settings.policies.
type PolicySource struct {
	// Path is the file or directory, absolute.
	Path string `json:"path"`
	// Layer is the layer that named it. Policies from project layers may
	// only deny.
	Layer Layer `json:"layer"`
	// At is where the entry is written.
	At Position `json:"at"`
	// Files are, for an entry of a project layer, the policy files read
	// under Path when the config was loaded (readPolicySource), with
	// their content: project trust covers each, and the policy set loads
	// these bytes, not the files as they are later. A user layer's
	// entries are read by the policy loader from Path.
	Files []PolicyFile `json:"files,omitempty"`
	// Err is, for an entry of a project layer, why its files could not be
	// read; it names the file or directory and the limit. The policy set
	// fails closed with it.
	Err error `json:"-"`
	// dirs are the directories walked under Path.
	dirs []string
}

// Origin is where a value of the effective config came from.
type Origin struct {
	Layer Layer `json:"layer"`
	Position
}

// String renders the origin as "layer file:line:col".
func (o Origin) String() string {
	if o.Layer == LayerDefault || o.File == "" {
		return string(o.Layer)
	}
	return fmt.Sprintf("%s %s:%d:%d", o.Layer, o.File, o.Line, o.Col)
}

// Settings are the gateway-wide settings. docs/config.md documents each.
type Settings struct {
	Enabled             bool   `json:"enabled"`
	Mode                string `json:"mode"`
	DefaultProjectTrust string `json:"defaultProjectTrust"`
	ConnectTimeoutMs    int64  `json:"connectTimeoutMs"`
	DiscoveryTimeoutMs  int64  `json:"discoveryTimeoutMs"`
	CallTimeoutMs       int64  `json:"callTimeoutMs"`
	AuthTimeoutMs       int64  `json:"authTimeoutMs"`
	IdleTimeoutMs       int64  `json:"idleTimeoutMs"`
	MetadataRefreshMs   int64  `json:"metadataRefreshMs"`
	MaxOutputBytes      int64  `json:"maxOutputBytes"`
	MaxOutputLines      int64  `json:"maxOutputLines"`
	OutputCacheTtlMs    int64  `json:"outputCacheTtlMs"`
	OutputCacheMaxBytes int64  `json:"outputCacheMaxBytes"`
	DirectTools         bool   `json:"directTools"`
	// Media says which images and audio reach the agent as they are.
	Media     Media  `json:"media"`
	Resources string `json:"resources"`
	Prompts   string `json:"prompts"`
	// ListAtStart lists servers with no cached metadata when serve starts.
	ListAtStart bool `json:"listAtStart"`
	// Plugins come from user layers only; paths are absolute.
	Plugins Plugins `json:"plugins"`
	// Limits are the gateway-wide bounds on what servers send.
	Limits Limits `json:"limits"`
	// Audit comes from user layers only.
	Audit Audit `json:"audit"`
}

// Media is settings.media: which images, audio and embedded image or
// audio blobs of a tool's answer are passed to the agent as MCP content.
type Media struct {
	// Inline passes them on, up to the caps; false describes each (its
	// type and size) in the text instead.
	Inline bool `json:"inline"`
	// MaxItemBytes caps one item's data, before base64; a larger item is
	// described and kept in the output store.
	MaxItemBytes int64 `json:"maxItemBytes"`
	// MaxAnswerBytes caps the data of all the items of one answer.
	MaxAnswerBytes int64 `json:"maxAnswerBytes"`
}

// Audit is settings.audit.
type Audit struct {
	// OnFailure is what happens to calls while the audit log cannot be
	// written: "refuse-risky" (refuse write, destructive and unknown
	// risk) or "allow".
	OnFailure string `json:"onFailure"`
}

// Plugins is settings.plugins: the WebAssembly classifiers and shapers.
type Plugins struct {
	// Builtin runs the built-in module after the listed ones.
	Builtin     bool     `json:"builtin"`
	Classifiers []Plugin `json:"classifiers"`
	Shapers     []Plugin `json:"shapers"`
}

// Plugin is one module of settings.plugins.
type Plugin struct {
	// Path is the .wasm file, absolute.
	Path string `json:"path"`
	// SHA256 pins the module's content.
	SHA256      string `json:"sha256"`
	TimeoutMs   int64  `json:"timeoutMs,omitempty"`
	MemoryPages int64  `json:"memoryPages,omitempty"`
}

// Limits bound what an upstream server may send. In a Server they are
// the effective limits: the server's own where lower, else the settings'.
type Limits struct {
	MaxTools            int64 `json:"maxTools"`
	MaxDescriptionChars int64 `json:"maxDescriptionChars"`
	MaxSchemaBytes      int64 `json:"maxSchemaBytes"`
	MaxSchemaDepth      int64 `json:"maxSchemaDepth"`
	MaxEnumValues       int64 `json:"maxEnumValues"`
	MaxResultBytes      int64 `json:"maxResultBytes"`
	MaxMessageBytes     int64 `json:"maxMessageBytes"`
}

// Min returns the lower of each field, a zero field counting as unset.
func (l Limits) Min(o Limits) Limits {
	m := func(a, b int64) int64 {
		if a == 0 || (b != 0 && b < a) {
			return b
		}
		return a
	}
	return Limits{m(l.MaxTools, o.MaxTools), m(l.MaxDescriptionChars, o.MaxDescriptionChars), m(l.MaxSchemaBytes, o.MaxSchemaBytes),
		m(l.MaxSchemaDepth, o.MaxSchemaDepth), m(l.MaxEnumValues, o.MaxEnumValues), m(l.MaxResultBytes, o.MaxResultBytes),
		m(l.MaxMessageBytes, o.MaxMessageBytes)}
}

// The transports a server can use.
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// Server is one effective server definition. Timeouts are effective
// values: the server's own, or else the gateway setting.
type Server struct {
	// ID is the normalized server id (see NormalizeID).
	ID string `json:"id"`
	// Key is the name the defining file used, before normalization.
	Key string `json:"key"`
	// Layer is the layer whose definition is in effect.
	Layer Layer `json:"layer"`
	// File is the file of that layer.
	File string `json:"file"`
	// BaseDir is the directory a relative cwd resolves against: the
	// project root for project layers, the home directory for user layers,
	// the file's directory for a standalone file.
	BaseDir string `json:"baseDir"`

	// Invalid is true when the definition has errors. An invalid server is
	// disabled: a half-valid definition never runs.
	Invalid bool `json:"invalid,omitempty"`
	// Problem is, for an invalid server, the first error in its
	// definition as file:line:col: severity[code]: message (see
	// [Diagnostic.String]); `voltmcp vet` lists them all.
	Problem string `json:"problem,omitempty"`

	Title     string `json:"title,omitempty"`
	Enabled   bool   `json:"enabled"`
	Transport string `json:"transport,omitempty"`
	// TransportAuto is true when a URL server named no transport: connect
	// with Streamable HTTP and fall back to SSE.
	TransportAuto bool   `json:"transportAuto,omitempty"`
	Lifecycle     string `json:"lifecycle"`
	// Limits are the server's effective limits (Limits.Min of its own
	// and the settings').
	Limits       Limits      `json:"limits"`
	IncludeTools []string    `json:"includeTools,omitempty"`
	ExcludeTools []string    `json:"excludeTools,omitempty"`
	DirectTools  DirectTools `json:"directTools"`

	ConnectTimeoutMs   int64 `json:"connectTimeoutMs"`
	DiscoveryTimeoutMs int64 `json:"discoveryTimeoutMs"`
	CallTimeoutMs      int64 `json:"callTimeoutMs"`
	IdleTimeoutMs      int64 `json:"idleTimeoutMs"`
	MetadataRefreshMs  int64 `json:"metadataRefreshMs"`

	// TrustToolHints is true when a user layer trusts the server's
	// annotations (readOnlyHint, destructiveHint) to lower the risk of
	// its tools; a project layer's value is dropped. Unset, a hint can
	// only raise a tool's risk.
	TrustToolHints bool `json:"trustToolHints,omitempty"`

	Command      string            `json:"command,omitempty"`
	Args         []string          `json:"args,omitempty"`
	Cwd          string            `json:"cwd,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
	EnvAllowlist []string          `json:"envAllowlist,omitempty"`

	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Auth    *Auth             `json:"auth,omitempty"`
}

// IsStdio reports whether the server is a local process.
func (s Server) IsStdio() bool { return s.Transport == TransportStdio }

// WorkDir returns the directory to start a stdio server in: its cwd
// resolved against BaseDir, or BaseDir when cwd is unset. A cwd holding
// an ${env:NAME} reference must be expanded by the caller first.
func (s Server) WorkDir(cwd string) string {
	if cwd == "" {
		return s.BaseDir
	}
	if filepath.IsAbs(cwd) {
		return filepath.Clean(cwd)
	}
	return filepath.Join(s.BaseDir, cwd)
}

// DirectTools is the directTools field: true exposes every tool, a list
// exposes the tools it names.
type DirectTools struct {
	All   bool
	Tools []string
}

// Enabled reports whether any tool is exposed directly.
func (d DirectTools) Enabled() bool { return d.All || len(d.Tools) > 0 }

// MarshalJSON writes true, false or the list.
func (d DirectTools) MarshalJSON() ([]byte, error) {
	if len(d.Tools) > 0 {
		return json.Marshal(d.Tools)
	}
	return json.Marshal(d.All)
}

// UnmarshalJSON reads a boolean or a list of names.
func (d *DirectTools) UnmarshalJSON(b []byte) error {
	*d = DirectTools{}
	if err := json.Unmarshal(b, &d.All); err == nil {
		return nil
	}
	return json.Unmarshal(b, &d.Tools)
}

// Auth is how to authenticate to an HTTP or SSE server. Which fields
// apply depends on Type: "none", "bearer" (Token), "env" (Variable,
// Header, Scheme) or "oauth" (the rest).
type Auth struct {
	Type     string `json:"type"`
	Token    string `json:"token,omitempty"`
	Variable string `json:"variable,omitempty"`
	Header   string `json:"header,omitempty"`
	// Scheme is nil when unset (meaning "Bearer"); "" sends the bare token.
	Scheme                  *string `json:"scheme,omitempty"`
	Flow                    string  `json:"flow,omitempty"`
	Scope                   string  `json:"scope,omitempty"`
	ClientID                string  `json:"clientId,omitempty"`
	ClientSecret            string  `json:"clientSecret,omitempty"`
	ClientMetadataURL       string  `json:"clientMetadataUrl,omitempty"`
	ResourceMetadataURL     string  `json:"resourceMetadataUrl,omitempty"`
	TokenEndpointAuthMethod string  `json:"tokenEndpointAuthMethod,omitempty"`
	// Issuer is the issuer identifier of the authorization server that
	// issued ClientID and ClientSecret: they are sent to no other. Empty:
	// only an authorization server at the origin of the server's URL.
	Issuer string `json:"issuer,omitempty"`
	// AllowInsecureLoopback lets OAuth discovery and the token requests
	// use plain http, and connect, to loopback addresses (local
	// development, the conformance suite). Zero: https only, and never a
	// loopback, private or link-local address the server names.
	AllowInsecureLoopback bool `json:"allowInsecureLoopback,omitempty"`
}

// Redacted returns a copy of the config fit to print: literal secrets in
// env, headers, args, URLs and auth are replaced, and ${env:NAME}
// references are kept, since they name a secret without holding it.
func (c *Config) Redacted() *Config {
	out := *c
	out.Servers = make([]Server, len(c.Servers))
	for i, s := range c.Servers {
		s.Env = redactMap(s.Env)
		s.Headers = redactMap(s.Headers)
		s.Args = redact.Args(s.Args)
		s.URL = redact.URL(s.URL)
		if s.Auth != nil {
			a := *s.Auth
			if redact.LiteralPart(a.Token) != "" {
				a.Token = redact.KeepRefs(a.Token)
			}
			if redact.LiteralPart(a.ClientSecret) != "" {
				a.ClientSecret = redact.KeepRefs(a.ClientSecret)
			}
			s.Auth = &a
		}
		out.Servers[i] = s
	}
	return &out
}

func redactMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = redact.Value(k, v)
	}
	return out
}
