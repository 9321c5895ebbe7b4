package cue

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// fourLayers50 builds four layers that together define 50 servers: 20 in
// each user layer, 10 in the project layers, plus overrides and
// adjustments across layers, in all three dialects.
func fourLayers50() map[Layer]string {
	var us, u, ps, p strings.Builder
	us.WriteString(`{"mcpServers":{`)
	for i := 0; i < 20; i++ {
		if i > 0 {
			us.WriteString(",")
		}
		fmt.Fprintf(&us, `"stdio-%d":{"command":"npx","args":["-y","@example/server-%d@1.2.%d","--root","."],"env":{"TOKEN":"${TOKEN_%d}","LOG":"info"}}`, i, i, i, i)
	}
	us.WriteString(`}}`)
	u.WriteString(`{"version":1,"settings":{"maxOutputBytes":65536,"callTimeoutMs":120000},"servers":{`)
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&u, `"http-%d":{"transport":"streamable-http","url":"https://mcp%d.example.com/mcp","headers":{"Authorization":"Bearer ${env:API_%d}"},"auth":{"type":"env","variable":"API_%d"},"includeTools":["get_*","list_*"],"excludeTools":["delete_*"]},`, i, i, i, i)
	}
	fmt.Fprintf(&u, `"stdio-0":{"lifecycle":"eager"}}}`)
	ps.WriteString(`{"servers":{`)
	for i := 0; i < 5; i++ {
		if i > 0 {
			ps.WriteString(",")
		}
		fmt.Fprintf(&ps, `"vs-%d":{"type":"sse","url":"https://sse%d.example.com/sse"}`, i, i)
	}
	ps.WriteString(`}}`)
	p.WriteString(`{"version":1,"servers":{`)
	for i := 0; i < 5; i++ {
		fmt.Fprintf(&p, `"proj-%d":{"command":"./bin/server-%d","cwd":"tools"},`, i, i)
	}
	p.WriteString(`"stdio-1":{"enabled":false},"http-2":{"excludeTools":["write_*"]}}}`)
	return map[Layer]string{LayerUserShared: us.String(), LayerUser: u.String(), LayerProjectShared: ps.String(), LayerProject: p.String()}
}

// BenchmarkVetFourLayers50Servers is what `voltmcp vet` does on a
// four-layer config with 50 servers: read, parse, validate, merge and
// lint. The schema is compiled once, as the CLI does per run.
func BenchmarkVetFourLayers50Servers(b *testing.B) {
	loc := layers(b, fourLayers50())
	s := testSchema()
	opts := &Options{Schema: s, Surface: SurfaceVet, Approve: true, CheckUntrusted: true, Lint: true}
	res, err := Load(context.Background(), loc, opts)
	if err != nil {
		b.Fatal(err)
	}
	if len(res.Config.Servers) != 50 || res.Diagnostics.HasErrors() {
		b.Fatalf("servers = %d:%s", len(res.Config.Servers), dump(res.Diagnostics))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Load(context.Background(), loc, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompileSchema is the fixed cost each CLI run pays once.
func BenchmarkCompileSchema(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewSchema(); err != nil {
			b.Fatal(err)
		}
	}
}
