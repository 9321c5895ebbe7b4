package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// readMessages reads r until it fails, and returns each message encoded,
// then the error.
func readMessages(r *lineReader) []string {
	var out []string
	for range 1000 {
		m, err := r.message()
		if err != nil {
			return append(out, "error: "+err.Error())
		}
		b, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			b = []byte("unencodable: " + err.Error())
		}
		out = append(out, string(b))
	}
	return out
}

// FuzzLineReader checks that reading a line at a time, with the envelope
// read by hand, gives the messages and the error that encoding/json's
// stream decoder gives (the reader's slow mode, and what the SDK's
// transport does), whether the input comes at once or a byte at a time.
func FuzzLineReader(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}` + "\n",
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\r\n\n",
		`{"jsonrpc":"2.0","id":"voltmcp-3","result":{"content":[{"type":"text","text":"a\"b\\n"}]}}` + "\n",
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no such method"}}` + "\n",
		"{\"jsonrpc\":\"2.0\",\n \"id\":2,\n \"method\":\"\"}\n",
		`{"jsonrpc":"2.0","id":1,"method":"a"} {"jsonrpc":"2.0","id":2,"method":"b"}` + "\n",
		`{"jsonrpc":"2.0","id":1,"method":"no newline"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"batch"}]` + "\n",
		`{"jsonrpc":"1.0","id":1,"method":"x"}` + "\n",
		`{"jsonrpc":"2.0","ID":1,"Method":"x"}` + "\n",
		`{"jsonrpc":"2.0","id":1.5,"method":"x","method":"y"}` + "\n",
		`{"jsonrpc":"2.0","id":null,"result":null}` + "\n",
		`{"jsonrpc":"2.0","id":{"a":1},"result":{}}` + "\n",
		`{"jsonrpc":"2.0","id":1e400,"method":"x"}` + "\n",
		`{"jsonrpc":"2.0","id":"\u00e9\ud800","method":"\xff"}` + "\n",
		`{"jsonrpc":"2.0","id":1,"method":"x","params":[1,{"}":"]"}]}` + "\n",
		"not json\n",
		`{"jsonrpc":"2.0","id":1,"method":"x"` + "\n" + `}` + "\n",
		"\n\n  \n",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		ref := newLineReader(strings.NewReader(input), 0)
		ref.slow()
		want := readMessages(ref)
		for name, src := range map[string]io.Reader{
			"at once":          strings.NewReader(input),
			"a byte at a time": iotest.OneByteReader(strings.NewReader(input)),
		} {
			got := readMessages(newLineReader(src, 0))
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("%s: %q\n got %q\nwant %q", name, input, got, want)
			}
		}
	})
}

// TestLineReaderBounds checks that a message over the bound fails with
// errMessageTooLarge however it arrives, and that one at the bound is
// read.
func TestLineReaderBounds(t *testing.T) {
	msg := `{"jsonrpc":"2.0","id":1,"method":"x","params":{"p":"` + strings.Repeat("a", 100) + `"}}`
	for _, tc := range []struct {
		name, input string
		max         int
		ok          bool
	}{
		{"at the bound", msg + "\n", len(msg), true},
		{"over the bound", msg + "\n", len(msg) - 1, false},
		{"no newline, over the bound", msg[:len(msg)-1] + strings.Repeat(" ", 10), len(msg) - 5, false},
		{"spread over lines, over the bound", strings.Replace(msg, ",", ",\n", -1) + "\n", 50, false},
	} {
		for _, src := range []io.Reader{strings.NewReader(tc.input), iotest.OneByteReader(strings.NewReader(tc.input))} {
			_, err := newLineReader(src, tc.max).message()
			if tc.ok != (err == nil) || (!tc.ok && !errors.Is(err, errMessageTooLarge)) {
				t.Errorf("%s: %v", tc.name, err)
			}
		}
	}
}

// FuzzFastDecodes checks the hand-read forms of what a lean call decodes
// against encoding/json: whenever GatewayInput.fastDecode or
// leanCallParams.fastDecode reads an input, encoding/json reads the same
// values from it, without an error.
func FuzzFastDecodes(f *testing.F) {
	for _, s := range []string{
		`{"action":"call","server":"s","tool":"echo","arguments":{"text":"hi"}}`,
		`{"action":"search","query":"read a file","server":"fs"}`,
		`{"action":"read_cache","cacheId":"mcpout_x","pattern":"a.c","limit":3}`,
		`{"action":"call","argumentsJson":"{\"a\":1}","arguments":null}`,
		`{"action":"call","arguments":[1],"arguments":{"b":[{}]}}`,
		`{"action":"status","arguments":null}`,
		`{"action":"call","arguments":[1]}`,
		`{"name":"mcp","arguments":null}`,
		`{"Action":"status"}`,
		`{"action":"status","extra":1}`,
		`{"action":"st\u0061tus","prompt":"\xff"}`,
		` { "action" : "describe" , "tool" : "t" } `,
		`{"name":"mcp","arguments":{"action":"status"}}`,
		`{"name":"mcp","arguments":{},"_meta":{"progressToken":1}}`,
		`{"NAME":"mcp","arguments":{}}`,
		`{"name":"mcp","arguments":"{}","other":[1,2]}`,
		`{}`,
		`[]`,
		`"x"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		raw := []byte(input)
		if !json.Valid(raw) {
			return
		}
		var fast GatewayInput
		if fast.fastDecode(raw) {
			var slow GatewayInput
			if err := decodeGatewayInputJSON(raw, &slow); err != nil {
				t.Fatalf("%q: read by hand, but encoding/json fails: %v", input, err)
			}
			if !bytes.Equal(fast.rawArgs, slow.rawArgs) {
				t.Fatalf("%q: arguments %q by hand, %q by encoding/json", input, fast.rawArgs, slow.rawArgs)
			}
			fast.rawArgs, slow.rawArgs = nil, nil
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("%q: by hand %+v, by encoding/json %+v", input, fast, slow)
			}
		}
		var p leanCallParams
		if p.fastDecode(raw) {
			var q leanCallParams
			if err := json.Unmarshal(raw, &q); err != nil {
				t.Fatalf("%q: read by hand, but encoding/json fails: %v", input, err)
			}
			if p.Name != q.Name || !bytes.Equal(p.Arguments, q.Arguments) || q.Meta != nil {
				t.Fatalf("%q: by hand %+v, by encoding/json %+v", input, p, q)
			}
		}
	})
}

// BenchmarkDecodeCallInput measures what the lean path decodes of a
// tools/call of the mcp tool: the params, read by hand, the gateway
// input, and the upstream's result, each read by hand or (json) by
// encoding/json alone.
func BenchmarkDecodeCallInput(b *testing.B) {
	params := []byte(`{"name":"mcp","arguments":{"action":"call","server":"up","tool":"echo","arguments":{"text":"hello"}}}`)
	input := []byte(`{"action":"call","server":"up","tool":"echo","arguments":{"text":"hello"}}`)
	b.Run("params", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p leanCallParams
			if !p.fastDecode(params) {
				b.Fatal("not read by hand")
			}
		}
	})
	b.Run("input", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var in GatewayInput
			if err := decodeGatewayInput(input, &in); err != nil {
				b.Fatal(err)
			}
		}
	})
	result := []byte(`{"content":[{"type":"text","text":"hello world\nsecond line"}],"structuredContent":{"text":"hello world\nsecond line"}}`)
	b.Run("result", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeToolResult(result); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("result/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeToolResultJSON(result); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("input/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var in GatewayInput
			if err := decodeGatewayInputJSON(input, &in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzFastDecodeToolResult checks the hand reading of a tools/call
// result against encoding/json: whenever fastDecodeToolResult reads a
// result, decodeToolResultJSON reads the same one, without an error.
func FuzzFastDecodeToolResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hello"}]}`,
		`{"content":[{"type":"text","text":"a\nb \u00e9 \ud83d\ude00"},{"type":"text","text":""}],"isError":true}`,
		`{"content":[{"type":"text","text":"x"}],"structuredContent":{"n":1.50,"s":"\u003c"},"resultType":"complete"}`,
		`{"content":[],"structuredContent":null,"isError":false}`,
		`{"content":[{"type":"text","text":"x","annotations":{"priority":1}}]}`,
		`{"content":[{"type":"text","text":"x","_meta":{"a":1}}],"_meta":{"b":2}}`,
		`{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}`,
		`{"content":[{"type":"text"}]}`,
		`{"content":[{"Type":"text","text":"x"}]}`,
		`{"content":[{"type":"text","text":null}]}`,
		`{"content":null,"isError":null}`,
		`{"Content":[{"type":"text","text":"x"}]}`,
		`{"content":[{"type":"text","text":"\xff\xfe"}],"structuredContent":{"s":"\xff"}}`,
		`{"content":[{"type":"text","text":"a"}],"content":[{"type":"text","text":"b"}],"other":[1,{"}":"]"}]}`,
		`{"content":[{"type":"text","text":"a"}],"resultType":"incomplete","inputRequests":{}}`,
		`{"isError":"yes"}`,
		`{"content":{"type":"text"}}`,
		`[]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		raw := []byte(input)
		if !json.Valid(raw) {
			return
		}
		fast, ok := fastDecodeToolResult(raw)
		if !ok {
			return
		}
		slow, err := decodeToolResultJSON(raw)
		if err != nil {
			t.Fatalf("%q: read by hand, but encoding/json fails: %v", input, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: by hand %+v, by encoding/json %+v", input, fast, slow)
		}
	})
}

// FuzzUnquote checks unquote against encoding/json's decoding of a
// string.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\nb\t\"c\"\\\/"`, `"\b\f\r"`, `"\u00e9"`, "\"\xff\"", `""`, `"x\\"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		// unquote takes a value as objectMembers hands it: no space
		// around it.
		input = string(trimJSONSpace([]byte(input)))
		if !json.Valid([]byte(input)) {
			return
		}
		got, ok := unquote([]byte(input))
		if !ok {
			return
		}
		var want string
		if err := json.Unmarshal([]byte(input), &want); err != nil {
			t.Fatalf("%q: unquoted, but encoding/json fails: %v", input, err)
		}
		if got != want {
			t.Fatalf("%q: unquote gives %q, encoding/json %q", input, got, want)
		}
	})
}

// FuzzEncodeCallAnswer checks that a call's answer written by hand
// (appendCallAnswer) is, byte for byte, what encoding/json writes, for
// any text, names, notes and structured content; and that it is written
// by hand whenever the structured content is compact JSON that needs no
// escaping.
func FuzzEncodeCallAnswer(f *testing.F) {
	f.Add("hello, gateway", "up", "echo", []byte(`{"text":"hello, gateway"}`), "", false, false, false)
	f.Add("<b>&\u2028 \x00 \xff é\t\"\\\b\f\r\u2029\n", "s\x7f", "t", []byte(nil), "note<>", true, true, true)
	f.Add("z", "s", "t", []byte(`{"a": "<&>"}`), "", false, false, false)
	f.Add("z", "s", "t", []byte(`{"a": 1}`), "", false, false, false)
	f.Add("z", "s", "t", []byte(`{"a":"\t\" \\"}`), "", false, false, false)
	f.Add("x", "", "", []byte(`[1,2.5e3,"\u2029",null,{"k":"\\u003c"}]`), "", true, false, true)
	f.Add("", "s", "t", []byte(`not json`), "", false, true, false)
	f.Add("y", "s", "t", []byte(nil), "a\nb", false, false, false)
	f.Fuzz(func(t *testing.T, text, server, tool string, structured []byte, note string, truncated, isError, complete bool) {
		d := CallResult{Server: server, Tool: tool, Status: "completed", Risk: Risk(tool), Content: text}
		if structured != nil {
			d.Structured = json.RawMessage(structured)
		}
		if note != "" {
			d.Notes = []string{note, text}
		}
		if truncated {
			d.Truncation = &Truncation{Truncated: true, ReturnedBytes: len(text), TotalBytes: 2 * len(text), ReturnedLines: 1, TotalLines: 7}
			d.Cache = &CacheRef{ID: "mcpout_" + note, Read: server}
		}
		r := GatewayResult{Data: d, Text: text, IsError: isError}
		got, ok := appendCallAnswer(nil, r, d, complete)
		want, err := encodeLeanResultJSON(r, complete)
		if !ok {
			// Declined: right only if encoding/json would change the
			// structured content (or fail on it).
			if b, err := json.Marshal(json.RawMessage(structured)); structured != nil && err == nil && string(b) == string(structured) {
				t.Fatalf("declined structured content that encoding/json copies as it is: %q", structured)
			}
			return
		}
		if err != nil {
			t.Fatalf("written by hand, but encoding/json fails: %v", err)
		}
		if string(got) != string(want) {
			t.Fatalf("by hand:\n%s\nencoding/json:\n%s", got, want)
		}
	})
}

// TestEncodeCallParams checks that a tools/call's params written by hand
// are the bytes encoding/json writes, and that the arguments it would
// change (spaces, HTML characters) or cannot encode take its way.
func TestEncodeCallParams(t *testing.T) {
	for _, c := range []struct {
		tool string
		args any
		meta map[string]any
	}{
		{"echo", json.RawMessage(`{"text":"hello, gateway"}`), nil},
		{"<t>&\u2028", json.RawMessage(`{"a":[1,null,{"b":"\u00e9\\u0041"}]}`), nil},
		{"echo", json.RawMessage(`{ "a" : 1 }`), nil},
		{"echo", json.RawMessage(`{"a":"<&>"}`), nil},
		{"echo", json.RawMessage(`{"a":1}`), map[string]any{"progressToken": "p"}},
		{"echo", map[string]any{"z": 1, "a": "<"}, nil},
	} {
		want, err := json.Marshal(struct {
			Name      string         `json:"name"`
			Arguments any            `json:"arguments"`
			Meta      map[string]any `json:"_meta,omitempty"`
		}{c.tool, c.args, c.meta})
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeCallParams(c.tool, c.args, c.meta)
		if err != nil || string(got) != string(want) {
			t.Errorf("encodeCallParams(%q, %v) = %s, %v; want %s", c.tool, c.args, got, err, want)
		}
	}
	if _, err := encodeCallParams("t", json.RawMessage(`{"a":`), nil); err == nil {
		t.Error("invalid arguments were encoded")
	}
}
