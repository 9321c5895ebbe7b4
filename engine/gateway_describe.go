package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/voltmcp/voltmcp/engine/internal/bound"
	"github.com/voltmcp/voltmcp/engine/internal/output"
)

// maxSchema bounds each schema describe returns, in bytes of compact
// JSON: a larger one is cut to fit (see [bound.FitSchema]) and kept whole
// in the output store.
const maxSchema = 16384

// DescribeResult is the describe action's answer.
type DescribeResult struct {
	Server      string `json:"server"`
	Tool        string `json:"tool"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Risk        Risk   `json:"risk"`
	RiskReason  string `json:"riskReason,omitempty"`
	// InputSchema is the tool's input schema, at most 16 KiB: a larger
	// one keeps its top levels and summarizes the rest, Warning says so
	// and Cache points at the whole one.
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// OutputSchema is the schema of the tool's structured result, when
	// it has one, bounded like InputSchema.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// TaskSupport is the tool's execution.taskSupport ("forbidden",
	// "optional" or "required"), when the server said it (see
	// [Tool.TaskSupport]).
	TaskSupport string `json:"taskSupport,omitempty"`
	// Annotations are the server's hints (readOnlyHint, destructiveHint,
	// ...): evidence the server gives, which the risk weighs, not a
	// promise.
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	MetadataHash string          `json:"metadataHash"`
	Warning      string          `json:"warning,omitempty"`
	// Cache points at the whole schemas, {"inputSchema":...,
	// "outputSchema":...}, when one was cut.
	Cache *CacheRef `json:"cache,omitempty"`
	Call  string    `json:"call"`
}

func (e *Engine) gwDescribe(ctx context.Context, in GatewayInput) GatewayResult {
	s, bad := e.needServer(in)
	if bad != nil {
		return *bad
	}
	t, _, _, _, bad := e.findTool(ctx, s, in.Tool, false)
	if bad != nil {
		return *bad
	}
	risk, why := e.risk(ctx, s.cfg.ID, t)
	d := DescribeResult{Server: s.cfg.ID, Tool: t.Name, Title: t.Title, Description: modelText(s.cfg.ID, t.Description), Risk: risk, RiskReason: why,
		InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, TaskSupport: t.TaskSupport, Annotations: t.Annotations,
		MetadataHash: "sha256:" + t.Hash,
		Call:         fmt.Sprintf(`mcp({"action":"call","server":%q,"tool":%q,"arguments":{...}})`, s.cfg.ID, t.Name)}
	e.fitSchemas(s.source(), t, &d)
	if s.stale() {
		s.refreshAsync("describe of stale metadata")
	}
	return gwOK(d, jsonText(d))
}

// fitSchemas keeps d's schemas within maxSchema: when one is larger,
// both whole go to the output store, and each larger one is cut to fit,
// its summaries naming the cache id, with a warning saying what was cut.
func (e *Engine) fitSchemas(src output.Source, t Tool, d *DescribeResult) {
	if len(t.InputSchema) <= maxSchema && len(t.OutputSchema) <= maxSchema {
		return
	}
	whole, _ := json.Marshal(struct {
		InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
		OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	}{t.InputSchema, t.OutputSchema}) // valid JSON from the cache
	note := ""
	if id, err := e.outputs().Put(src, t.Name+" schemas", whole); err != nil {
		e.log.Warn("output sidecar", "err", err)
	} else {
		d.Cache = cacheRefOf(id, 0)
		note = ", see read_cache " + id
	}
	var warns []string
	fit := func(which string, raw json.RawMessage) json.RawMessage {
		if len(raw) <= maxSchema {
			return raw
		}
		out, f := bound.FitSchema(raw, maxSchema, note)
		switch {
		case f.Members > 0:
			warns = append(warns, fmt.Sprintf("the %s schema is %d bytes, over the %d shown: only what fits of its top level is shown, %d members left out", which, f.Bytes, maxSchema, f.Members))
		case f.Levels > 0:
			warns = append(warns, fmt.Sprintf("the %s schema is %d bytes, over the %d shown: subschemas below level %d are summarized", which, f.Bytes, maxSchema, f.Levels))
		}
		return out
	}
	d.InputSchema = fit("input", t.InputSchema)
	d.OutputSchema = fit("output", t.OutputSchema)
	if d.Cache != nil {
		warns = append(warns, "the whole schemas: "+d.Cache.Read)
	}
	d.Warning = strings.Join(warns, "; ")
}
