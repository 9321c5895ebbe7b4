package policies

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/redact"
)

// TestReasonsAreScrubbed runs a policy of each area whose reason quotes
// its input, with a secret in the input in one form or another, and one
// whose evaluation fails on such an input: every reason the decision
// carries, the rule's message or the failure's, comes back scrubbed when
// Options.Scrub knows the secret, and with the secret without it (so the
// input does reach the reason).
func TestReasonsAreScrubbed(t *testing.T) {
	t.Parallel()
	const secret = "canaryPOL5e2b9d7f13"
	ctx := context.Background()
	tool := func(args ...string) func(p *Policies) []Reason {
		return func(p *Policies) []Reason {
			return p.Tools(ctx, ToolInput{Server: Server{ID: "srv", Scope: "user", Transport: "stdio", Command: "srv", Args: args},
				Tool: Tool{Name: "t"}, Risk: "read", Pin: Pin{State: "pinned"}, Surface: "serve"}).Reasons
		}
	}
	cases := []struct {
		name, file, src string
		decide          func(p *Policies) []Reason
	}{
		{"tools, argv", "tools.rego", "package voltmcp.tools\n\ndeny contains sprintf(\"denied: %v\", [input.server.args]) if true\n",
			tool("--token=" + secret)},
		{"tools, argv base64", "tools.rego", "package voltmcp.tools\n\ndeny contains concat(\" \", input.server.args) if true\n",
			tool("--header", "Authorization: Basic "+base64.StdEncoding.EncodeToString([]byte("u:"+secret)))},
		{"tools, failure", "tools.rego", "package voltmcp.tools\n\ndeny contains \"x\" if to_number(input.server.args[0]) > 1\n",
			tool(secret)},
		{"media, URI", "media.rego", "package voltmcp.media\n\ndeny contains sprintf(\"no %s\", [input.item.uri]) if true\n",
			func(p *Policies) []Reason {
				return p.Media(ctx, MediaInput{Server: MediaServer{ID: "srv", Scope: "user"}, Tool: "t", Risk: "read", Surface: "serve",
					Item: MediaItem{Kind: "resource", MIMEType: "image/png", Bytes: 10, URI: "https://x.example/?k=" + url.QueryEscape(secret)}}).Reasons
			}},
		{"remote, server", "remote.rego", "package voltmcp.remote\n\ndeny contains sprintf(\"no %s\", [input.server]) if true\n",
			func(p *Policies) []Reason {
				return p.Remote(ctx, RemoteInput{Command: "connect_mcp_server", Caller: "remote", Server: "x" + hex.EncodeToString([]byte(secret))}).Reasons
			}},
		{"trust, project", "trust.rego", "package voltmcp.trust\n\ndeny contains sprintf(\"no %s\", [input.project]) if true\n",
			func(p *Policies) []Reason {
				in := askInput()
				in.Project = "/src/" + secret
				return p.Trust(ctx, in).Reasons
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir, _ := writePolicy(t, c.file, c.src)
			text := func(scrub *redact.Scrubber) string {
				p, err := Load(ctx, &Options{Dirs: []string{dir}, Scrub: scrub})
				if err != nil {
					t.Fatal(err)
				}
				var b strings.Builder
				for _, r := range c.decide(p) {
					b.WriteString(r.String() + "\n")
				}
				return b.String()
			}
			leaks := func(s string) bool {
				for _, f := range redact.Forms(secret) {
					if strings.Contains(s, f) {
						return true
					}
				}
				return false
			}
			if plain := text(nil); !leaks(plain) {
				t.Fatalf("the reasons do not quote the secret without a scrubber: %s", plain)
			}
			if got := text(redact.NewScrubber("[redacted]", secret)); leaks(got) || !strings.Contains(got, "[redacted]") {
				t.Errorf("reasons not scrubbed: %s", got)
			}
		})
	}
}
