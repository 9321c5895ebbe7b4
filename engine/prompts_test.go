package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestGetPromptUserPreviewIsTheUsers: under prompts: "user-preview" an
// engine for a user's surface answers Gateway's get_prompt, while the
// same input through the mcp tool of a serve surface (gatewayRun) is the
// model's and refused, and so is every input of an engine whose surface
// serves agents or is not set.
func TestGetPromptUserPreviewIsTheUsers(t *testing.T) {
	t.Parallel()
	in := GatewayInput{Action: "get_prompt", Server: "github", Prompt: "greet", Arguments: map[string]any{"name": "Ada"}}
	raw, _ := json.Marshal(in)
	for _, tt := range []struct {
		surface cue.Surface
		user    bool
	}{
		{cue.SurfaceInteractive, true}, {cue.SurfacePrint, true}, {cue.SurfaceJSON, true},
		{cue.SurfaceServe, false}, {cue.SurfaceRPC, false}, {cue.SurfaceDaemon, false}, {"", false},
	} {
		t.Run(string(tt.surface), func(t *testing.T) {
			opts := workspace(t, map[string]server{"github": stdio("behave", nil)}, nil)
			opts.Surface = tt.surface
			e := start(t, opts)
			r := gw(t, e, in)
			if tt.user {
				if r.IsError || r.Text != "user: Hello, Ada!" {
					t.Errorf("Gateway on %q: %+v", tt.surface, r)
				}
			} else if !r.IsError || !strings.Contains(r.Text, "user-preview") {
				t.Errorf("Gateway on %q: %+v, want the user-preview refusal", tt.surface, r)
			}
			if r := e.gatewayRun(testwait.Context(t), raw); !r.IsError || !strings.Contains(r.Text, "the model may not fetch them") {
				t.Errorf("the mcp tool on %q: %+v, want the user-preview refusal", tt.surface, r)
			}
		})
	}
}
