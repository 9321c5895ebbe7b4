package cue_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/voltmcp/voltmcp/cue"
)

// Load the four layers of a workspace and read the effective config.
func ExampleLoad() {
	root, _ := os.MkdirTemp("", "voltmcp-example")
	defer os.RemoveAll(root)
	loc := cue.Locations{Home: filepath.Join(root, "home"), Project: filepath.Join(root, "project")}
	os.MkdirAll(loc.Project, 0o755)
	os.WriteFile(filepath.Join(loc.Project, ".mcp.json"), []byte(`{
  "mcpServers": {
    "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory@2026.8.31"]},
    "docs": {"type": "http", "url": "https://docs.example.com/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}
  }
}`), 0o644)

	res, err := cue.Load(context.Background(), loc, &cue.Options{Surface: cue.SurfaceServe, Approve: true, Lint: true})
	if err != nil {
		panic(err)
	}
	for _, s := range res.Config.Servers {
		fmt.Println(s.ID, s.Transport, s.Lifecycle, s.URL+s.Command)
	}
	fmt.Println("errors:", res.Diagnostics.HasErrors(), "maxOutputBytes:", res.Config.Settings.MaxOutputBytes)
	// Output:
	// docs streamable-http lazy https://docs.example.com/mcp
	// memory stdio lazy npx
	// errors: false maxOutputBytes: 51200
}

// Diagnostics print like compiler errors and carry the field path.
func ExampleDiagnostic_String() {
	d := cue.Diagnostic{Severity: cue.SeverityError, Code: cue.CodeUnknownField, Message: `unknown field "comand"`,
		Hint: `did you mean "command"?`, Position: cue.Position{File: ".mcp.json", Line: 4, Col: 7}, Path: "mcpServers.git.comand"}
	fmt.Println(d)
	// Output:
	// .mcp.json:4:7: error[unknown-field]: mcpServers.git.comand: unknown field "comand"
}

// References stay references until the moment a value is used.
func ExampleExpandEnv() {
	lookup := func(name string) (string, bool) { return "s3cr3t", name == "TOKEN" }
	v, err := cue.ExpandEnv("Bearer ${env:TOKEN}", lookup)
	fmt.Println(len(v), err)
	_, err = cue.ExpandEnv("${env:MISSING}", lookup)
	fmt.Println(err)
	// Output:
	// 13 <nil>
	// environment variable MISSING is not set
}
