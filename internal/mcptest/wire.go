package mcptest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"unicode/utf16"
)

// ModeHostileWire is a raw server whose every text outside tool metadata
// is hostile: its serverInfo fields (name, version and title, each with
// 10 KiB of letters after the hostile text, and instructions of
// HostileInstructionsBytes), its JSON-RPC error messages and
// its stderr carry terminal escapes (colour, OSC 8 hyperlinks, a window
// title, ESC ( B), C1 controls, bidi overrides, tag characters and
// zero-width characters. On start it writes to stderr its arguments and, and in the error
// of every tools/call it quotes, the value of every environment variable
// whose name starts with WireSecretPrefix: as is, URL-encoded, and
// base64-encoded inside "user:VALUE" (as Basic credentials are), the
// way a careless server echoes its configuration.
const ModeHostileWire = "hostile-wire"

// Mode hostile-wire.
const (
	// WireSecretPrefix starts the names of the variables whose values mode
	// hostile-wire echoes.
	WireSecretPrefix = "WIRE_SECRET"
	// ToolWireFail is a tool of mode hostile-wire; every call of it is
	// answered with a JSON-RPC error.
	ToolWireFail = "wire_fail"
	// ToolWireStructured is a tool of mode hostile-wire that answers a
	// clean text with structured content whose strings carry WireHostile,
	// raw and again as JSON \u escapes.
	ToolWireStructured = "wire_structured"
	// WireStderrMarker is plain text in the stderr of mode hostile-wire.
	WireStderrMarker = "wire-stderr-line"
	// WireErrorMarker is plain text in each JSON-RPC error message of mode
	// hostile-wire.
	WireErrorMarker = "wire-error-text"
	// WireExitEnv, set to any value, makes mode hostile-wire exit with
	// status 3 right after writing its stderr, before it answers anything.
	WireExitEnv = "WIRE_EXIT"
	// HostileInstructionsBytes is the length of mode hostile-wire's
	// serverInfo instructions.
	HostileInstructionsBytes = 200 << 10
)

// WireHostile is the hostile text mode hostile-wire puts in its fields:
// every kind of escape and invisible character voltmcp removes, around
// visible words.
const WireHostile = "\x1b[31mred\x1b[0m \x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\ \x1b]0;title\x07" +
	"\x1b(Bplain \u009b2Jc1 \u202eevil\u202c \u2066iso\u2069 tag\U000E0041\U000E0042 zero\u200bwidth \u00adsoft"

// wireSecrets returns the values mode hostile-wire echoes, sorted.
func wireSecrets() []string {
	var out []string
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, WireSecretPrefix) {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// wireEcho is the text that quotes every secret in its three forms.
func wireEcho() string {
	var b strings.Builder
	for _, v := range wireSecrets() {
		fmt.Fprintf(&b, " plain=%s url=%s basic=%s", v, url.QueryEscape(v), base64.StdEncoding.EncodeToString([]byte("user:"+v)))
	}
	return b.String()
}

// wireStart writes mode hostile-wire's stderr: the hostile text, the
// secrets and the process's arguments.
func wireStart() {
	fmt.Fprintf(os.Stderr, "argv %s\n%s %s%s\n", strings.Join(os.Args[1:], " "), WireStderrMarker, WireHostile, wireEcho())
	if _, ok := os.LookupEnv(WireExitEnv); ok {
		os.Exit(3)
	}
}

// wireServerInfo is mode hostile-wire's serverInfo.
func wireServerInfo() map[string]any {
	instr := strings.Repeat(WireHostile+" ", HostileInstructionsBytes/len(WireHostile)+1)
	return map[string]any{
		"name": "wire" + WireHostile + strings.Repeat("n", 10<<10), "version": "1.0\x1b[2J" + WireHostile + strings.Repeat("v", 10<<10),
		"title":      "Wire " + WireHostile + strings.Repeat("t", 10<<10),
		"websiteUrl": "https://x.example/\x1b]8;;evil\x07", "instructions": instr,
	}
}

// wireError is the message of mode hostile-wire's JSON-RPC errors.
func wireError() string {
	return WireErrorMarker + " " + WireHostile + wireEcho()
}

// wireCall answers a tools/call of mode hostile-wire.
func wireCall(params json.RawMessage) (any, *rawError) {
	var p struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(params, &p)
	if p.Name != ToolWireStructured {
		return nil, &rawError{Code: -32000, Message: wireError()}
	}
	// The escaped form: every non-ASCII character and control as \uXXXX,
	// which a JSON decoder turns back into the same characters.
	var esc strings.Builder
	for _, r := range WireHostile {
		if r < 0x20 || r >= 0x7f {
			if r > 0xffff {
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(&esc, "\\u%04x\\u%04x", r1, r2)
				continue
			}
			fmt.Fprintf(&esc, "\\u%04x", r)
			continue
		}
		if r == '\\' || r == '"' {
			esc.WriteByte('\\')
		}
		esc.WriteRune(r)
	}
	return verbatim(`{"content":[{"type":"text","text":"` + WireStructuredText + `"}],"structuredContent":{"raw":` +
		strconvQuote(WireHostile) + `,"escaped":"` + esc.String() + `"}}`), nil
}

// WireStructuredText is the clean text of ToolWireStructured's answer.
const WireStructuredText = "structured answer"

// strconvQuote is s as a JSON string, its non-ASCII characters as they are.
func strconvQuote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
