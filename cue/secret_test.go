package cue

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// canary is a fake credential. It must never appear in anything voltmcp
// prints about a config.
const canary = "ghp_CANARYc4n4ryC4N4RY0123456789abcdefXYZ"

func TestSecretsNeverLeak(t *testing.T) {
	t.Setenv("CANARY_ENV", canary)
	files := map[Layer]string{
		LayerUser: fmt.Sprintf(`{"servers":{
			"a":{"command":"x","args":["--token=%[1]s","%[1]s"],"env":{"GITHUB_TOKEN":"%[1]s","NUM":5}},
			"b":{"url":"https://u:%[1]s@x.example/mcp?token=%[1]s","headers":{"Authorization":"Bearer %[1]s","X-Bad":3},
			     "auth":{"type":"bearer","token":"%[1]s"}},
			"c":{"url":"https://y.example","auth":{"type":"%[1]s"}},
			"d":{"command":"x","lifecycle":"%[1]s","transport":"%[1]s","env":{"E":"${env:CANARY_ENV}"}},
			"e":{"command":"x","args":["${%[1]s}"]}
		},"settings":{"mode":"%[1]s"}}`, canary),
		LayerProjectShared: fmt.Sprintf(`{"mcpServers":{"f":{"type":"%[1]s","command":"x","env":{"K":"${%[1]s:-x}"}}}}`, canary),
	}
	res := load(t, files)
	if len(res.Diagnostics) < 10 {
		t.Fatalf("expected many findings, got:%s", dump(res.Diagnostics))
	}
	out, _ := json.Marshal(res.Diagnostics)
	shown, _ := json.Marshal(res.Config.Redacted())
	for name, text := range map[string]string{"diagnostics": string(out), "redacted config": string(shown)} {
		if strings.Contains(text, canary) {
			t.Errorf("%s leak the canary:\n%s", name, text)
		}
		if strings.Contains(text, canary[:16]) {
			t.Errorf("%s leak part of the canary:\n%s", name, text)
		}
	}
	// The reference stays a reference.
	d, _ := res.Config.Server("d")
	if d.Env["E"] != "${env:CANARY_ENV}" {
		t.Errorf("reference resolved: %q", d.Env["E"])
	}
	for _, code := range []Code{CodeLiteralSecret, CodeInvalidType, CodeInvalidValue, CodeEnvRefSyntax} {
		if len(find(res, code)) == 0 {
			t.Errorf("no %s finding", code)
		}
	}
}
