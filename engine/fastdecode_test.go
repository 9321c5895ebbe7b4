package engine

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzFastDecodes checks the hand-read form of the mcp tool's input
// against encoding/json: whenever GatewayInput.fastDecode reads an
// input, encoding/json reads the same values from it, without an error.
// (The hand reading of the tools/call around it is fuzzed in
// engine/internal/jsonwire, under the same name.)
func FuzzFastDecodes(f *testing.F) {
	for _, s := range []string{
		`{"action":"call","server":"s","tool":"echo","arguments":{"text":"hi"}}`,
		`{"action":"search","query":"read a file","server":"fs"}`,
		`{"action":"search","query":"read a file","cursor":"YzE6c2VhcmNoOjg6YWJj"}`,
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
	})
}

// BenchmarkDecodeCallInput measures how the mcp tool's input is
// decoded: by hand where it can (input), and by encoding/json alone
// (input/json). The params and the upstream's result around it are
// measured in engine/internal/jsonwire, under the same name.
func BenchmarkDecodeCallInput(b *testing.B) {
	input := []byte(`{"action":"call","server":"up","tool":"echo","arguments":{"text":"hello"}}`)
	b.Run("input", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var in GatewayInput
			if err := decodeGatewayInput(input, &in); err != nil {
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
