package policies

import (
	"encoding/json"
	"fmt"

	"github.com/voltmcp/voltmcp/redact"
)

// ToolInputRecord is a [ToolInput] in the flat form a log of tool calls
// keeps, such as the engine's audit log: the server id, the tool name,
// the risk and the surface, which a call record has fields of its own
// for, and the rest of the input as named details. [ToolInput.Record]
// makes it and [ToolInputRecord.Input] reads it back, both from one
// table of details, so that a replay of a recorded call decides on the
// input the live decision was made on, field for field.
type ToolInputRecord struct {
	// Server is Server.ID, Tool is Tool.Name; Risk and Surface are the
	// input's.
	Server  string
	Tool    string
	Risk    string
	Surface string
	// Detail holds every other field of the input under its detail name:
	// risk_reason, pin_state, pin_change, quarantined, server_scope,
	// transport, command, args, url, include_tools, exclude_tools, title
	// and annotations (title and annotations only when not empty). A
	// log may add details of its own; Input ignores them.
	Detail map[string]any
}

// toolDetail is one field of a ToolInput as a detail of its record. Each
// has exactly one of str, strs, flag and raw, which returns the field.
type toolDetail struct {
	name string
	// omitEmpty leaves an empty value out of the record.
	omitEmpty bool
	str       func(*ToolInput) *string
	strs      func(*ToolInput) *[]string
	flag      func(*ToolInput) *bool
	raw       func(*ToolInput) *json.RawMessage
}

// argsDetail is the name of the server's arguments, which a record keeps
// with their literal credentials replaced (recordArgs).
const argsDetail = "args"

// toolDetails is the one list of the details of a ToolInputRecord. A
// field added to ToolInput needs a line here: TestToolInputRecordKeepsEveryField
// fails until it has one.
var toolDetails = [...]toolDetail{
	{name: "risk_reason", str: func(in *ToolInput) *string { return &in.RiskReason }},
	{name: "pin_state", str: func(in *ToolInput) *string { return &in.Pin.State }},
	{name: "pin_change", str: func(in *ToolInput) *string { return &in.Pin.Change }},
	{name: "quarantined", flag: func(in *ToolInput) *bool { return &in.Quarantined }},
	{name: "server_scope", str: func(in *ToolInput) *string { return &in.Server.Scope }},
	{name: "transport", str: func(in *ToolInput) *string { return &in.Server.Transport }},
	{name: "command", str: func(in *ToolInput) *string { return &in.Server.Command }},
	{name: argsDetail, strs: func(in *ToolInput) *[]string { return &in.Server.Args }},
	{name: "url", str: func(in *ToolInput) *string { return &in.Server.URL }},
	{name: "include_tools", strs: func(in *ToolInput) *[]string { return &in.IncludeTools }},
	{name: "exclude_tools", strs: func(in *ToolInput) *[]string { return &in.ExcludeTools }},
	{name: "title", omitEmpty: true, str: func(in *ToolInput) *string { return &in.Tool.Title }},
	{name: "annotations", omitEmpty: true, raw: func(in *ToolInput) *json.RawMessage { return &in.Tool.Annotations }},
}

// Record returns the input in the flat form of a call record. It is
// meant for a log, which must never hold a literal secret: the server's
// arguments encode to JSON with their literal credentials replaced
// (--token V, a URL's query, an Authorization header passed as an
// argument; see [redact.Args]), which the live decision saw as
// configured. Everything else is as the policy sees it, the URL with its
// credentials already redacted by whoever built the input. The slices
// of the record share the input's.
func (in ToolInput) Record() ToolInputRecord {
	r := ToolInputRecord{Server: in.Server.ID, Tool: in.Tool.Name, Risk: in.Risk, Surface: in.Surface,
		Detail: make(map[string]any, len(toolDetails)+1)}
	for _, d := range toolDetails {
		var v any
		empty := false
		switch {
		case d.str != nil:
			s := *d.str(&in)
			v, empty = s, s == ""
		case d.strs != nil:
			v = *d.strs(&in)
			if d.name == argsDetail {
				v = recordArgs(*d.strs(&in))
			}
		case d.flag != nil:
			v = *d.flag(&in)
		case d.raw != nil:
			raw := *d.raw(&in)
			v, empty = raw, len(raw) == 0
		}
		if d.omitEmpty && empty {
			continue
		}
		r.Detail[d.name] = v
	}
	return r
}

// recordArgs is a server's arguments in a record. They encode with
// their literal credentials replaced (redact.Args) when the log encodes
// the record, which a log that caches encoded details does once per
// tool rather than once per call.
type recordArgs []string

// MarshalJSON writes the arguments with their literal credentials
// replaced.
func (a recordArgs) MarshalJSON() ([]byte, error) { return json.Marshal(redact.Args(a)) }

// Input reads the tools input back from its record: the Detail as Record
// made it, or as JSON decoded it (strings, booleans, lists of strings
// as []any, annotations as any JSON value). A detail that is missing
// reads as the field's zero value; one of the wrong type is an error
// that names it, for a replay must not decide on another input than the
// live decision did. Details Input does not know are ignored.
func (r ToolInputRecord) Input() (ToolInput, error) {
	in := ToolInput{Server: Server{ID: r.Server}, Tool: Tool{Name: r.Tool}, Risk: r.Risk, Surface: r.Surface}
	for _, d := range toolDetails {
		v, ok := r.Detail[d.name]
		if !ok || v == nil {
			continue
		}
		var err error
		switch {
		case d.str != nil:
			err = readDetail(d.name, v, d.str(&in), "a string")
		case d.strs != nil:
			*d.strs(&in), err = detailStrings(d.name, v)
		case d.flag != nil:
			err = readDetail(d.name, v, d.flag(&in), "a boolean")
		case d.raw != nil:
			*d.raw(&in), err = detailJSON(d.name, v)
		}
		if err != nil {
			return ToolInput{}, err
		}
	}
	return in, nil
}

// readDetail sets *dst to v when v is a T.
func readDetail[T any](name string, v any, dst *T, want string) error {
	t, ok := v.(T)
	if !ok {
		return fmt.Errorf("detail %q is not %s", name, want)
	}
	*dst = t
	return nil
}

// detailStrings reads a list of strings.
func detailStrings(name string, v any) ([]string, error) {
	switch v := v.(type) {
	case []string:
		return v, nil
	case recordArgs:
		return []string(v), nil
	case []any:
		out := make([]string, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("detail %q is not a list of strings", name)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("detail %q is not a list of strings", name)
}

// detailJSON reads a JSON value, such as the MCP annotations, re-encoding
// it when JSON decoded it.
func detailJSON(name string, v any) (json.RawMessage, error) {
	if raw, ok := v.(json.RawMessage); ok {
		return raw, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("detail %q is not JSON", name)
	}
	return b, nil
}
