package line

import (
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// readMessages reads r until it fails, and returns each message encoded,
// then the error.
func readMessages(r *reader) []string {
	var out []string
	for range 1000 {
		m, _, err := r.message()
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
		ref := newReader(strings.NewReader(input), 0, nil)
		ref.slow()
		want := readMessages(ref)
		for name, src := range map[string]io.Reader{
			"at once":          strings.NewReader(input),
			"a byte at a time": iotest.OneByteReader(strings.NewReader(input)),
		} {
			got := readMessages(newReader(src, 0, nil))
			if sameMessages(got) != sameMessages(want) {
				t.Fatalf("%s: %q\n got %q\nwant %q", name, input, got, want)
			}
		}
	})
}

// quotedPart is a part of an error message that quotes the input.
var quotedPart = regexp.MustCompile("`[^`]*`")

// sameMessages joins messages for comparison, with the parts of an
// error that quote the input left out: from Go 1.27, encoding/json's
// stream decoder quotes as much of a bad escape as it has read, which
// depends on how the input arrives; the error is the same one.
func sameMessages(msgs []string) string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		if strings.HasPrefix(m, "error: ") {
			m = quotedPart.ReplaceAllString(m, "`…`")
		}
		out[i] = m
	}
	return strings.Join(out, "\n")
}

// TestLineReaderBounds checks that a message over the bound fails with
// ErrMessageTooLarge however it arrives, and that one at the bound is
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
			_, _, err := newReader(src, tc.max, nil).message()
			if tc.ok != (err == nil) || (!tc.ok && !errors.Is(err, ErrMessageTooLarge)) {
				t.Errorf("%s: %v", tc.name, err)
			}
		}
	}
}
