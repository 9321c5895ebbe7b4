package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/voltmcp/voltmcp/engine"
	"github.com/voltmcp/voltmcp/internal/mcptest"
)

// A program that embeds the engine calls a tool as an agent does: through
// Gateway's pipeline, where the project's trust, the tools policy, the
// tool's pin, the classifier, output cleaning, redaction and the audit
// record all apply.
func ExampleEngine_Gateway() {
	ctx := context.Background()
	home, err := os.MkdirTemp("", "voltmcp-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(home)

	// One stdio server in the user's file, ~/.volt/agent/mcp.json.
	command, args, env := mcptest.Command(mcptest.ModeBehave)
	doc, _ := json.Marshal(map[string]any{"version": 1, "servers": map[string]any{
		"demo": map[string]any{"command": command, "args": args, "env": env},
	}})
	if err := os.MkdirAll(filepath.Join(home, ".volt", "agent"), 0o700); err != nil {
		fmt.Println(err)
		return
	}
	if err := os.WriteFile(filepath.Join(home, ".volt", "agent", "mcp.json"), doc, 0o600); err != nil {
		fmt.Println(err)
		return
	}

	project := filepath.Join(home, "project")
	if err := os.Mkdir(project, 0o700); err != nil {
		fmt.Println(err)
		return
	}
	e, err := engine.New(ctx, &engine.Options{Home: home, Project: project})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()

	res := e.Gateway(ctx, engine.GatewayInput{Action: "call", Server: "demo", Tool: "echo", Arguments: map[string]any{"text": "hello"}})
	fmt.Println(res.IsError, res.Text)
	// Output: false hello
}
