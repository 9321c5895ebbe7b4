package jsonwire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzEncodeCallAnswer checks that a call's answer written by hand
// (AppendCallAnswer) is, byte for byte, what encoding/json writes, for
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
		d := CallData{Server: server, Tool: tool, Status: "completed", Risk: tool, Content: text, Structured: structured}
		if note != "" {
			d.Notes = []string{note, text}
		}
		if truncated {
			d.Truncation = &Truncation{Truncated: true, ReturnedBytes: len(text), TotalBytes: 2 * len(text), ReturnedLines: 1, TotalLines: 7}
			d.Cache = &CacheRef{ID: "mcpout_" + note, Read: server, Offset: int64(len(text)) - int64(len(note))}
		}
		a := CallAnswer{Text: text, IsError: isError, Complete: complete, Data: d}
		got, ok := AppendCallAnswer(nil, a)
		want, err := marshalCallAnswer(a)
		if !ok {
			// Declined: right only if encoding/json would change the
			// structured content (or fail on it).
			if b, err := json.Marshal(json.RawMessage(structured)); structured != nil && err == nil && string(b) == string(structured) {
				t.Fatalf("declined structured content that encoding/json copies as it is: %q", structured)
			}
			if got != nil {
				t.Fatalf("declined, but appended %q", got)
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
		got, err := EncodeCallParams(c.tool, c.args, c.meta)
		if err != nil || string(got) != string(want) {
			t.Errorf("EncodeCallParams(%q, %v) = %s, %v; want %s", c.tool, c.args, got, err, want)
		}
	}
	if _, err := EncodeCallParams("t", json.RawMessage(`{"a":`), nil); err == nil {
		t.Error("invalid arguments were encoded")
	}
}

// FuzzEncodeMessages checks the JSON-RPC messages and params written by
// hand against encoding/json and the go-sdk: a tools/call's params
// (EncodeCallParams) against json.Marshal, a request (AppendRequest) and
// a response (AppendResponse, with a string or a number id, a result or
// an error) against jsonrpc.EncodeMessage, for compact JSON (CompactRaw,
// which must not decline JSON that encoding/json copies as it is).
func FuzzEncodeMessages(f *testing.F) {
	f.Add("echo", "voltmcp-1", int64(1), []byte(`{"text":"hi"}`), "")
	f.Add("<t>&\u2028\xff", "a\"b", int64(-7), []byte(`{"a":[1,null,{"b":"\u00e9\\u0041"}]}`), "no such tool")
	f.Add("echo", "", int64(0), []byte(`{ "a" : 1 }`), "<bad>")
	f.Add("echo", "x", int64(1<<53), []byte(`"\u2028"`), "")
	f.Add("t", "\x00", int64(2), []byte(`not json`), "")
	f.Fuzz(func(t *testing.T, name, sid string, nid int64, raw []byte, errMsg string) {
		compact := CompactRaw(raw)
		if b, err := json.Marshal(json.RawMessage(raw)); !compact && len(raw) > 0 && err == nil && bytes.Equal(b, raw) {
			t.Fatalf("CompactRaw declined %q, which encoding/json copies as it is", raw)
		}
		if compact {
			if b, err := json.Marshal(json.RawMessage(raw)); err != nil || !bytes.Equal(b, raw) {
				t.Fatalf("CompactRaw took %q, which encoding/json writes as %q (%v)", raw, b, err)
			}
		}
		// The params of a tools/call.
		got, err := EncodeCallParams(name, json.RawMessage(raw), nil)
		want, wantErr := json.Marshal(callParamsJSON{name, json.RawMessage(raw), nil})
		if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("EncodeCallParams(%q, %q) = %s, %v; encoding/json %s, %v", name, raw, got, err, want, wantErr)
		}
		if !compact {
			return
		}
		// A request, as the engine's own calls send it.
		id, _ := jsonrpc.MakeID(sid)
		req, err := jsonrpc.EncodeMessage(&jsonrpc.Request{ID: id, Method: name, Params: raw})
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendRequest(nil, sid, name, raw); !bytes.Equal(got, req) {
			t.Fatalf("request by hand %s, by the go-sdk %s", got, req)
		}
		// Responses, with either kind of id, a result or an error.
		nID, _ := jsonrpc.MakeID(float64(nid))
		if float64(nid) != float64(nID.Raw().(int64)) {
			return // not an id the go-sdk keeps
		}
		for _, id := range []jsonrpc.ID{id, nID} {
			var jerr *jsonrpc.Error
			for range 2 {
				resp := &jsonrpc.Response{ID: id, Result: raw}
				if jerr != nil {
					resp = &jsonrpc.Response{ID: id, Error: jerr}
				}
				want, err := jsonrpc.EncodeMessage(resp)
				if err != nil {
					t.Fatal(err)
				}
				if got := AppendResponse(nil, id, raw, jerr); !bytes.Equal(got, want) {
					t.Fatalf("response by hand %s, by the go-sdk %s", got, want)
				}
				jerr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: errMsg}
			}
		}
	})
}

// FuzzQuote checks the string writers against encoding/json:
// AppendQuoted against json.Marshal, AppendQuotedNoHTML against an
// encoder that does not escape HTML, RoundTripString against a
// json.Marshal and json.Unmarshal round trip, and IsNumber against
// json.Marshal's check of a json.Number.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"plain", "<b>&\u2028 \x00 \xff é\t\"\\\b\f\r\u2029\n", "\x7f\xc3", "", "1.5e+3", "-0", "01", "1.", "1e", "+1", "\u00e9\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendQuoted([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("AppendQuoted(%q) = %s, json.Marshal %s", s, got[1:], want)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if got := AppendQuotedNoHTML(nil, s); string(got)+"\n" != buf.String() {
			t.Fatalf("AppendQuotedNoHTML(%q) = %s, the encoder %s", s, got, buf.String())
		}
		var back string
		if err := json.Unmarshal(want, &back); err != nil {
			t.Fatal(err)
		}
		if got := RoundTripString(s); got != back {
			t.Fatalf("RoundTripString(%q) = %q, the round trip %q", s, got, back)
		}
		if utf8.ValidString(s) && RoundTripString(s) != s {
			t.Fatalf("RoundTripString(%q) changed valid UTF-8", s)
		}
		_, err = json.Marshal(json.Number(s))
		if got := IsNumber(s); got != (err == nil) && s != "" {
			t.Fatalf("IsNumber(%q) = %v; json.Marshal of the number: %v", s, got, err)
		}
		if strings.TrimSpace(s) == s && IsNumber(s) && !json.Valid([]byte(s)) {
			t.Fatalf("IsNumber(%q), but it is not valid JSON", s)
		}
	})
}
