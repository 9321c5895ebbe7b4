// Command client is the adapter the MCP conformance suite runs in client
// mode. The suite starts a scenario server and runs
//
//	client <scenario-url>
//
// with the scenario's name in MCP_CONFORMANCE_SCENARIO. The adapter
// builds a voltmcp engine whose only server, "upstream", is that URL over
// Streamable HTTP, connects it (initialize plus discovery), and then does
// what the scenario asks of a client, through engine calls only. The
// server's auth is OAuth, as a user would configure it, with a headless
// authorizer in place of a browser. It exits
// 0 when every step worked, and non-zero with the reason on stderr
// otherwise; the suite's own checks decide whether the scenario passed.
//
// internal/conformance/conformance_test.go builds and runs it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine"
)

// serverID is the id of the one configured server.
const serverID = "upstream"

// clientMetadataURL is the client ID metadata document URL the suite's
// authorization servers accept (auth/basic-cimd); servers that do not
// support such documents get a dynamic registration instead.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// secretVar is the variable the pre-registered client secret is read
// from, as a user's config would refer to it.
const secretVar = "CONFORMANCE_CLIENT_SECRET"

// scenarioContext is what the suite passes in MCP_CONFORMANCE_CONTEXT:
// pre-registered client credentials (auth/pre-registration).
type scenarioContext struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
}

// oauthConfig is the auth a user would configure for the scenario's
// server: the pre-registered client when the suite gives one, else a
// client ID metadata document with dynamic registration as the fallback.
// The suite's servers are plain http on loopback, which the auth must
// allow explicitly. issuer is the pre-registered client's authorization
// server (see issuerOf).
func oauthConfig(sc scenarioContext, issuer string) *cue.Auth {
	if sc.ClientID != "" {
		a := &cue.Auth{Type: "oauth", ClientID: sc.ClientID, Issuer: issuer, AllowInsecureLoopback: true}
		if sc.ClientSecret != "" {
			a.ClientSecret = "${env:" + secretVar + "}"
		}
		return a
	}
	return &cue.Auth{Type: "oauth", ClientMetadataURL: clientMetadataURL, AllowInsecureLoopback: true}
}

// issuerOf returns the first authorization server the protected resource
// metadata of the scenario's server names. It stands in for the user, who
// writes the issuer of the authorization server that registered a client
// into the config (the suite passes the client, not its issuer, and runs
// that server on another port): the engine sends a pre-registered client
// to no other.
func issuerOf(ctx context.Context, server string) (string, error) {
	get := func(u string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		return http.DefaultClient.Do(req)
	}
	su, err := url.Parse(server)
	if err != nil {
		return "", err
	}
	meta := *su
	meta.Path = "/.well-known/oauth-protected-resource" + su.Path
	if resp, err := get(server); err == nil {
		resp.Body.Close()
		if cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate")); err == nil {
			for _, c := range cs {
				if u := c.Params["resource_metadata"]; u != "" {
					if mu, err := url.Parse(u); err == nil {
						meta = *mu
					}
					break
				}
			}
		}
	}
	resp, err := get(meta.String())
	if err != nil {
		return "", fmt.Errorf("protected resource metadata: %w", err)
	}
	defer resp.Body.Close()
	var prm struct {
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&prm); err != nil || len(prm.AuthorizationServers) == 0 {
		return "", fmt.Errorf("protected resource metadata at %s names no authorization server (%s)", meta.Redacted(), resp.Status)
	}
	return prm.AuthorizationServers[0], nil
}

// authorize stands in for the user's browser: the suite's authorization
// servers redirect at once to the redirect URI with the code and state,
// so one GET that does not follow the redirect reads them.
func authorize(ctx context.Context, _ string, authURL string) (callbackURL string, err error) {
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.Header.Get("Location") == "" {
		return "", fmt.Errorf("authorization endpoint answered %s without a usable redirect", resp.Status)
	}
	// The engine reads code, state, iss and error from the redirect.
	return loc.String(), nil
}

// toolFor names the tool a scenario's server expects the client to call,
// with its arguments. A scenario not listed only needs a connection and
// a listing, which Connect does.
func toolFor(scenario string) (string, map[string]any, bool) {
	switch {
	case scenario == "tools_call":
		return "add_numbers", map[string]any{"a": 5, "b": 3}, true
	case scenario == "sse-retry":
		return "test_reconnection", map[string]any{}, true
	case scenario == "elicitation-sep1034-client-defaults":
		return "test_client_elicitation_defaults", map[string]any{}, true
	case strings.HasPrefix(scenario, "auth/"):
		return "test-tool", map[string]any{}, true
	}
	return "", nil, false
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: client [args...] <scenario-url>  (scenario name in MCP_CONFORMANCE_SCENARIO)")
		os.Exit(2)
	}
	url := os.Args[len(os.Args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := run(ctx, url, scenario); err != nil {
		fmt.Fprintf(os.Stderr, "voltmcp conformance client: scenario %q: %v\n", scenario, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, url, scenario string) error {
	agentDir, err := os.MkdirTemp("", "voltmcp-conformance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(agentDir)
	var sc scenarioContext
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &sc); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	issuer := ""
	if sc.ClientID != "" {
		if issuer, err = issuerOf(ctx, url); err != nil {
			return fmt.Errorf("find the issuer of the pre-registered client: %w", err)
		}
	}
	// The settings are the defaults, as a user with no settings of their
	// own has them: the loader's, of an empty home.
	defaults, err := cue.Load(ctx, cue.Locations{Home: agentDir, Project: agentDir}, nil)
	if err != nil {
		return fmt.Errorf("load the default settings: %w", err)
	}
	cfg := &cue.Config{Settings: defaults.Config.Settings, Servers: []cue.Server{{
		ID:                 serverID,
		Key:                serverID,
		Enabled:            true,
		URL:                url,
		Transport:          cue.TransportStreamableHTTP,
		Lifecycle:          "lazy",
		ConnectTimeoutMs:   10_000,
		DiscoveryTimeoutMs: 10_000,
		CallTimeoutMs:      15_000,
		MetadataRefreshMs:  int64(time.Hour / time.Millisecond),
		Auth:               oauthConfig(sc, issuer),
	}}}
	e, err := engine.New(ctx, &engine.Options{
		Config:   cfg,
		AgentDir: agentDir,
		Project:  agentDir,
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})),
		LookupEnv: func(name string) (string, bool) {
			if name == secretVar && sc.ClientSecret != "" {
				return sc.ClientSecret, true
			}
			return "", false
		},
		Authorize: authorize,
		// A user who accepts and leaves every field at its default: the
		// engine fills in the schema's defaults (SEP-1034).
		Elicit: func(context.Context, string, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	})
	if err != nil {
		return err
	}
	defer e.Close()

	if err := e.Connect(ctx, serverID); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	m, err := e.Metadata(serverID)
	if err != nil {
		return err
	}
	if m == nil {
		return errors.New("connected, but no metadata was discovered")
	}
	fmt.Printf("connected: server %s %s, protocol %s, %d tools\n", m.Name, m.Version, m.ProtocolVersion, len(m.Tools))

	tool, args, ok := toolFor(scenario)
	if !ok {
		return nil
	}
	if !hasTool(m, tool) {
		return fmt.Errorf("the server lists no tool %q", tool)
	}
	// Through the gateway's pipeline, as an agent's call goes: trust,
	// tool policy, pins, output cleaning and the audit record.
	res := e.Gateway(ctx, engine.GatewayInput{Action: "call", Server: serverID, Tool: tool, Arguments: args})
	if res.IsError {
		return fmt.Errorf("call %s: %s", tool, res.Text)
	}
	fmt.Printf("called %s: ok\n", tool)
	return nil
}

func hasTool(m *engine.Metadata, name string) bool {
	for _, t := range m.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}
