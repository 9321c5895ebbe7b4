package jsonwire

import "encoding/json"

// CallParams is what the engine reads of the params of a tools/call an
// agent sends.
type CallParams struct {
	Name      string                     `json:"name"`
	Arguments json.RawMessage            `json:"arguments"`
	Meta      map[string]json.RawMessage `json:"_meta"`
}

// FastDecode reads, into p, params with a plain name (see
// [PlainString]) and arguments that are an object, and no _meta, and
// reports whether it did; it declines anything else, which
// json.Unmarshal then decodes to the same params. data must be valid
// JSON: a message's params are.
func (p *CallParams) FastDecode(data []byte) bool {
	var out CallParams
	if !ObjectMembers(data, func(key string, val []byte) bool {
		switch key {
		case "name":
			s, ok := PlainString(val)
			out.Name = s
			return ok
		case "arguments":
			out.Arguments = val
			return val[0] == '{'
		}
		return key != "_meta" && !FoldsTo(key, "name", "arguments", "_meta")
	}) {
		return false
	}
	*p = out
	return true
}

// DecodeCallParams decodes the params of a tools/call, by hand when
// [CallParams.FastDecode] can, else with encoding/json.
func DecodeCallParams(data []byte) (CallParams, error) {
	var p CallParams
	if p.FastDecode(data) {
		return p, nil
	}
	err := json.Unmarshal(data, &p)
	return p, err
}

// EncodeCallParams encodes the params of a tools/call the engine sends
// a server, as json.Marshal encodes [callParamsJSON]. Arguments given as
// JSON that encoding/json would copy as they are ([CompactRaw]), with no
// _meta, the common case, are written by hand, to the same bytes.
func EncodeCallParams(tool string, args any, meta map[string]any) ([]byte, error) {
	if raw, ok := args.(json.RawMessage); ok && meta == nil && CompactRaw(raw) {
		b := make([]byte, 0, len(raw)+len(tool)+32)
		b = AppendQuoted(append(b, `{"name":`...), tool)
		b = append(append(append(b, `,"arguments":`...), raw...), '}')
		return b, nil
	}
	return json.Marshal(callParamsJSON{tool, args, meta})
}

// callParamsJSON is the wire form of a tools/call's params, in the
// go-sdk's field order.
type callParamsJSON struct {
	Name      string         `json:"name"`
	Arguments any            `json:"arguments"`
	Meta      map[string]any `json:"_meta,omitempty"`
}
