package jsonwire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzFastDecodes checks the hand-read forms of a message's envelope and
// of a tools/call's params against encoding/json: whenever
// Envelope.FastDecode or CallParams.FastDecode reads an input,
// encoding/json reads the same values from it, without an error; and
// DecodeMessage gives the message, or the error, that decoding with
// encoding/json alone gives.
func FuzzFastDecodes(f *testing.F) {
	for _, s := range []string{
		`{"name":"mcp","arguments":null}`,
		`{"name":"mcp","arguments":{"action":"status"}}`,
		`{"name":"mcp","arguments":{},"_meta":{"progressToken":1}}`,
		`{"NAME":"mcp","arguments":{}}`,
		`{"name":"mcp","arguments":"{}","other":[1,2]}`,
		`{"name":"m\u0063p","arguments":{}}`,
		` { "name" : "mcp" , "arguments" : { } } `,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"voltmcp-3","result":{"content":[{"type":"text","text":"a\"b\\n"}]}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no such method"}}`,
		`{"jsonrpc":"1.0","id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","ID":1,"Method":"x"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"x","method":"y"}`,
		`{"jsonrpc":"2.0","id":null,"result":null}`,
		`{"jsonrpc":"2.0","id":{"a":1},"result":{}}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"x"}`,
		`{"jsonrpc":"2.0","id":-0,"method":"x","params":[1,{"}":"]"}]}`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"\u00e9\",\"method\":\"\xff\"}",
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
		var p CallParams
		if p.FastDecode(raw) {
			var q CallParams
			if err := json.Unmarshal(raw, &q); err != nil {
				t.Fatalf("%q: read by hand, but encoding/json fails: %v", input, err)
			}
			if p.Name != q.Name || !bytes.Equal(p.Arguments, q.Arguments) || q.Meta != nil {
				t.Fatalf("%q: by hand %+v, by encoding/json %+v", input, p, q)
			}
		}
		var w Envelope
		if w.FastDecode(raw) {
			var v Envelope
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatalf("%q: read by hand, but encoding/json fails: %v", input, err)
			}
			if !reflect.DeepEqual(w, v) {
				t.Fatalf("%q: by hand %+v, by encoding/json %+v", input, w, v)
			}
		}
		got, gotErr := DecodeMessage(raw)
		want, wantErr := decodeMessageJSON(raw)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("%q: error %v, by encoding/json %v", input, gotErr, wantErr)
		}
		if gotErr == nil {
			g, _ := jsonrpc.EncodeMessage(got)
			w, _ := jsonrpc.EncodeMessage(want)
			if !bytes.Equal(g, w) {
				t.Fatalf("%q: decoded to %s, by encoding/json to %s", input, g, w)
			}
		}
	})
}

// decodeMessageJSON is DecodeMessage without the hand reading.
func decodeMessageJSON(data []byte) (jsonrpc.Message, error) {
	var w Envelope
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, WireError(err)
	}
	return w.Message()
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

// FuzzUnquote checks Unquote against encoding/json's decoding of a
// string.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\nb\t\"c\"\\\/"`, `"\b\f\r"`, `"\u00e9"`, "\"\xff\"", `""`, `"x\\"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		// Unquote takes a value as ObjectMembers hands it: no space
		// around it.
		input = string(TrimSpace([]byte(input)))
		if !json.Valid([]byte(input)) {
			return
		}
		got, ok := Unquote([]byte(input))
		if !ok {
			return
		}
		var want string
		if err := json.Unmarshal([]byte(input), &want); err != nil {
			t.Fatalf("%q: unquoted, but encoding/json fails: %v", input, err)
		}
		if got != want {
			t.Fatalf("%q: Unquote gives %q, encoding/json %q", input, got, want)
		}
	})
}

// TestDecodeToolResultMatchesSDK compares DecodeToolResult with the
// SDK's decoder on the results servers send.
func TestDecodeToolResultMatchesSDK(t *testing.T) {
	for _, raw := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[{"type":"text","text":""},{"type":"text","text":"two","annotations":{"audience":["user"],"priority":0.5}}],"isError":true}`,
		`{"content":[],"structuredContent":{"sum":3,"list":[1,"a",null,true]}}`,
		`{"content":[],"structuredContent":{"bad":"\xff\xfe","big":12345678901234567890}}`,
		`{"content":[],"structuredContent":null}`,
		`{"content":null}`,
		`{}`,
		`{"_meta":{"k":"v"},"content":[{"type":"text","text":"m","_meta":{"x":1}}]}`,
		`{"content":[{"type":"text","text":"ok"}],"resultType":"complete"}`,
		`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"text","text":"after"}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///a","text":"body"}}]}`,
		`{"content":[{"type":"resource_link","uri":"file:///a","name":"a"}]}`,
		`{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object"}}}}}`,
		`{"content":[{"type":"nope"}]}`,
		`{"content":"text"}`,
		`[1]`,
	} {
		var want mcp.CallToolResult
		wantErr := json.Unmarshal([]byte(raw), &want)
		got, err := DecodeToolResult(json.RawMessage(raw))
		if (err == nil) != (wantErr == nil) {
			t.Errorf("%s: error %v, the SDK's %v", raw, err, wantErr)
			continue
		}
		if err != nil {
			continue
		}
		// resultType is unexported: it shows in NeedsInput, and in the
		// encoding, where the SDK's server sets its own anyway.
		if got.NeedsInput() != want.NeedsInput() {
			t.Errorf("%s: NeedsInput %v, the SDK's %v", raw, got.NeedsInput(), want.NeedsInput())
		}
		if g, w := plainJSON(t, got), plainJSON(t, &want); !reflect.DeepEqual(g, w) {
			t.Errorf("%s:\ngot  %v\nwant %v", raw, g, w)
		}
	}
}

func plainJSON(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "resultType")
	return m
}

// TestDecodeToolResultErrors checks that a result that is not valid
// JSON, or not a result, fails to decode as it does with encoding/json.
func TestDecodeToolResultErrors(t *testing.T) {
	for _, raw := range []string{`{"content":`, `{"content":[{"type":"text","text":1}]}`, `{"isError":"yes"}`} {
		if _, err := DecodeToolResult(json.RawMessage(raw)); err == nil {
			t.Errorf("%s: decoded", raw)
		}
		if _, err := decodeToolResultJSON(json.RawMessage(raw)); err == nil {
			t.Errorf("%s: decoded by encoding/json", raw)
		}
	}
}

// BenchmarkDecodeCallInput measures what the lean path decodes of a
// tools/call of the mcp tool by hand: the params, and the upstream's
// result, each read by hand or (json) by encoding/json alone.
func BenchmarkDecodeCallInput(b *testing.B) {
	params := []byte(`{"name":"mcp","arguments":{"action":"call","server":"up","tool":"echo","arguments":{"text":"hello"}}}`)
	b.Run("params", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p CallParams
			if !p.FastDecode(params) {
				b.Fatal("not read by hand")
			}
		}
	})
	result := []byte(`{"content":[{"type":"text","text":"hello world\nsecond line"}],"structuredContent":{"text":"hello world\nsecond line"}}`)
	b.Run("result", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeToolResult(result); err != nil {
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
}
