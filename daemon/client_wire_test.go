package daemon

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzPlainResult checks the client's fast reading of an answer: when
// plainResult takes a line, encoding/json reads the same id and result
// from it, and an answer it does not take is left to encoding/json.
func FuzzPlainResult(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"grüße <b>"}],"isError":true}}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}` + "\n",
		`{"jsonrpc":"2.0","id":7,"result":{},"error":{"code":1,"message":"m"}}`,
		`{"jsonrpc":"2.0","id":07,"result":1}`,
		`{"jsonrpc":"2.0","id":-1,"result":1}`,
		`{"jsonrpc":"2.0","id":1,"result":"a}`,
		`{"jsonrpc":"2.0","id":1,"result":[1,2]} `,
		`{"jsonrpc":"2.0","id":99999999999999999999,"result":1}`,
		`{"jsonrpc":"2.0","method":"mcp_event","params":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		id, result, ok := plainResult(line)
		if !ok {
			return
		}
		var m struct {
			ID     *int64          `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("plainResult took %q, which does not decode: %v", line, err)
		}
		if m.ID == nil || *m.ID != id || m.Error != nil || !bytes.Equal(m.Result, result) {
			t.Fatalf("plainResult read %q as id %d result %q; encoding/json reads %+v", line, id, result, m)
		}
	})
}
