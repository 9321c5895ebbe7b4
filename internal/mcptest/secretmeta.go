package mcptest

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
)

// ModeSecretMeta is a raw server that writes the value of every
// environment variable whose name starts with [MetaSecretPrefix], and its
// own arguments, into every field of its metadata, the way a careless
// server builds its descriptions from its configuration: its serverInfo
// (name, title, version), instructions and experimental capabilities;
// the title, description, input and output schemas (property names,
// descriptions, enum values, defaults, examples) and annotations of tool
// [ToolMetaEcho]; the names, titles, descriptions and MIME types of a
// resource ([MetaResource]), a resource template and a prompt
// ([MetaPrompt]) and the prompt's argument descriptions. Each value is
// written in each of [MetaForms]'s forms. It also lists items whose
// identifier holds the first value: a tool named "leak_VALUE", a
// resource and a template whose URIs hold it, a prompt named
// "leak_VALUE" and a prompt with an argument so named. Every call
// answers "ok"; reads and prompts are refused.
const ModeSecretMeta = "secret-meta"

// Mode secret-meta.
const (
	// MetaSecretPrefix starts the names of the variables whose values
	// mode secret-meta writes into its metadata.
	MetaSecretPrefix = "META_SECRET"
	// ToolMetaEcho is the tool of mode secret-meta whose every field
	// carries the values; ToolMetaPlain is one that carries none.
	ToolMetaEcho  = "meta_echo"
	ToolMetaPlain = "meta_plain"
	// MetaResource is the URI of the resource whose texts carry the
	// values, and MetaPrompt the name of such a prompt.
	MetaResource = "mcptest://meta/plain"
	MetaPrompt   = "meta_prompt"
	// MetaLeakPrefix starts the identifiers of the items that hold the
	// first value in their names.
	MetaLeakPrefix = "leak_"
)

// MetaForms returns v in each form mode secret-meta writes it: as is,
// URL-encoded (query and path), base64-encoded inside "user:v" and on its
// own in the URL alphabet, hex-encoded (both cases) and
// base32-encoded. The JSON-escaped form comes with the JSON.
func MetaForms(v string) []string {
	return []string{v, url.QueryEscape(v), url.PathEscape(v), base64.StdEncoding.EncodeToString([]byte("user:" + v)),
		base64.RawURLEncoding.EncodeToString([]byte(v)), hex.EncodeToString([]byte(v)),
		strings.ToUpper(hex.EncodeToString([]byte(v))), base32.StdEncoding.EncodeToString([]byte(v))}
}

// metaSecrets returns the values mode secret-meta writes, sorted.
func metaSecrets() []string {
	var out []string
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, MetaSecretPrefix) {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// metaEcho is the text that carries every value in every form, and the
// process's arguments.
func metaEcho() string {
	var b strings.Builder
	for _, v := range metaSecrets() {
		for i, f := range MetaForms(v) {
			fmt.Fprintf(&b, " f%d=%s", i, f)
		}
	}
	fmt.Fprintf(&b, " argv=%s", strings.Join(os.Args[1:], " "))
	return b.String()
}

// metaEchoSchema is a JSON schema that carries the values in every place
// a schema has text: a property name, descriptions, titles, enum values,
// a default and examples.
func metaEchoSchema(echo string) map[string]any {
	enum := []any{"none"} // without a value, still a schema
	var key string
	for _, v := range metaSecrets() {
		for _, f := range MetaForms(v) {
			enum = append(enum, f)
		}
		key += "_" + v
	}
	return map[string]any{"type": "object", "description": echo, "title": echo,
		"properties": map[string]any{
			"text":    map[string]any{"type": "string", "description": echo, "enum": enum, "default": enum[0], "examples": enum},
			"k" + key: map[string]any{"type": "string", "title": echo},
		}}
}

// metaLeak is the first value, for the identifiers that hold it.
func metaLeak() string {
	if s := metaSecrets(); len(s) > 0 {
		return s[0]
	}
	return "none"
}

// metaInitialize is mode secret-meta's initialize result.
func metaInitialize(version string) map[string]any {
	echo := metaEcho()
	return map[string]any{
		"protocolVersion": version,
		"capabilities": map[string]any{"tools": map[string]any{}, "resources": map[string]any{}, "prompts": map[string]any{},
			"experimental": map[string]any{"echo": map[string]any{"text": echo}}},
		"serverInfo":   map[string]any{"name": "meta" + echo, "title": "Meta" + echo, "version": "1.0" + echo},
		"instructions": "Instructions" + echo,
	}
}

// metaList answers the tools/list, resources/list,
// resources/templates/list and prompts/list of mode secret-meta, or
// reports false for another method.
func metaList(method string) (map[string]any, bool) {
	echo, leak := metaEcho(), metaLeak()
	switch method {
	case "tools/list":
		t := rawTool(ToolMetaEcho, "Echoes."+echo, metaEchoSchema(echo))
		t["title"] = "Echo" + echo
		t["outputSchema"] = metaEchoSchema(echo)
		t["annotations"] = map[string]any{"title": "Echo" + echo, "readOnlyHint": true}
		return map[string]any{"tools": []any{t, rawTool(ToolMetaPlain, "Plain.", objectSchema()),
			rawTool(MetaLeakPrefix+leak, "Its name holds a secret.", objectSchema())}}, true
	case "resources/list":
		return map[string]any{"resources": []any{
			map[string]any{"uri": MetaResource, "name": "plain" + echo, "title": "Plain" + echo, "description": "Plain." + echo, "mimeType": "text/plain" + echo},
			map[string]any{"uri": "mcptest://meta/" + leak, "name": "leaky"},
		}}, true
	case "resources/templates/list":
		return map[string]any{"resourceTemplates": []any{
			map[string]any{"uriTemplate": "mcptest://meta/{id}", "name": "tpl" + echo, "title": "Tpl" + echo, "description": "Tpl." + echo},
			map[string]any{"uriTemplate": "mcptest://" + leak + "/{id}", "name": "leaky"},
		}}, true
	case "prompts/list":
		return map[string]any{"prompts": []any{
			map[string]any{"name": MetaPrompt, "title": "Prompt" + echo, "description": "Prompt." + echo,
				"arguments": []any{map[string]any{"name": "a", "description": "Arg." + echo}}},
			map[string]any{"name": MetaLeakPrefix + leak},
			map[string]any{"name": "meta_arg", "arguments": []any{map[string]any{"name": "a_" + leak}}},
		}}, true
	}
	return nil, false
}
