package engine

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"log/slog"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/voltmcp/voltmcp/engine/internal/transport"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// lockedBuffer is a bytes.Buffer safe for the engine's logger.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCanarySweep puts canary secrets everywhere a secret reaches
// voltmcp: the host environment (passed through envAllowlist), config env
// (${env:NAME} from the host, and a literal), an HTTP header, a URL query
// string, and tool arguments. It then uses every gateway action and
// checks that no canary appears in anything voltmcp produces or writes:
// results (text and Data), errors, status, summaries, events, log lines,
// and every file under the agent directory (audit log, metadata cache,
// pins, output sidecars).
//
// Tool outputs are the server's data: a server that returns a secret has
// it shown and kept in the sidecar by design. The tools called here
// return no canary, so every file must be free of them.
func TestCanarySweep(t *testing.T) {
	t.Parallel()
	canaries := map[string]string{
		"host env":      "canaryHOST7f3a9c2e51",
		"config ref":    "canaryREF0b8d4e6a27",
		"config lit":    "canaryLIT95c1f3d7e4",
		"header":        "canaryHDR2e7a6b9d03",
		"query":         "canaryQRY4d1c8f5a76",
		"tool argument": "canaryARG8a3e2d7c19",
		// A stdio server's argv, in each form a credential takes there.
		"argv flag":   "canaryAFL2b9d6e4c81",
		"argv eq":     "canaryAEQ7c4a1f9e25",
		"argv url":    "canaryAUR5e8b3d1a96",
		"argv bearer": "canaryABR9f1c7e2b43",
		// Env values a hostile server echoes URL-encoded and base64-encoded
		// on stderr and in its JSON-RPC errors.
		"wire ref": "canaryWREF6d2b8e1f05",
		"wire lit": "canaryWLIT1f7c3a9e68",
		// A host env value that the agent's own requests carry encoded
		// (a tool name, a resource URI), so that it reaches the audit
		// record only base64- or URL-encoded: the audit log's redactor
		// must know those forms. Its characters make every encoding
		// differ from the value.
		"encoded": "canary/ENC+3b7e 9d1f=a4&c",
		// Values a server writes into every field of its metadata, in
		// every form (mcptest.ModeSecretMeta): from a ${env:NAME}
		// reference, a literal, the host through envAllowlist, and its
		// argv, which a policy's deny reason also quotes.
		"meta ref":  "canaryMREF3c9e7a1d42",
		"meta lit":  "canaryMLIT8b2f4d6e19",
		"meta host": "canaryMHST2d8b6f3a71",
		"meta argv": "canaryMARG5a7c1e9f36",
	}
	host := map[string]string{
		"CANARY_HOST":                      canaries["host env"],
		"CANARY_REF":                       canaries["config ref"],
		"CANARY_HEADER":                    canaries["header"],
		"CANARY_WIRE":                      canaries["wire ref"],
		"CANARY_ENC":                       canaries["encoded"],
		"CANARY_META":                      canaries["meta ref"],
		mcptest.MetaSecretPrefix + "_HOST": canaries["meta host"],
	}
	wireCmd, wireArgs, wireEnv := mcptest.Command(mcptest.ModeHostileWire)
	wireArgs = append(wireArgs, "--api-key", canaries["argv flag"], "--token="+canaries["argv eq"],
		"https://api.example.com/v1?key="+canaries["argv url"], "--header", "Authorization: Bearer "+canaries["argv bearer"])
	wireEnv[mcptest.WireSecretPrefix+"_REF"] = "${env:CANARY_WIRE}"
	wireEnv[mcptest.WireSecretPrefix+"_TOKEN"] = canaries["wire lit"]
	metaCmd, metaArgs, metaEnv := mcptest.Command(mcptest.ModeSecretMeta)
	metaArgs = append(metaArgs, "--api-key", canaries["meta argv"])
	metaEnv[mcptest.MetaSecretPrefix+"_REF"] = "${env:CANARY_META}"
	metaEnv[mcptest.MetaSecretPrefix+"_TOKEN"] = canaries["meta lit"]
	url := mcptest.ServeHTTPWithHeaderCheck(t, mcptest.ModeBehave, "X-Api-Key", canaries["header"])
	opts := workspace(t, map[string]server{
		"local": stdio("behave", server{
			"envAllowlist": []string{"CANARY_HOST", "CANARY_ENC"},
			"env":          map[string]string{"REF_TOKEN": "${env:CANARY_REF}", "LIT_TOKEN": canaries["config lit"]},
		}),
		"wire": {"command": wireCmd, "args": wireArgs, "env": wireEnv},
		"meta": {"command": metaCmd, "args": metaArgs, "env": metaEnv, "envAllowlist": []string{mcptest.MetaSecretPrefix + "_HOST"}},
		"remote": {"url": url + "?token=" + canaries["query"], "transport": "streamable-http",
			"headers": map[string]string{"X-Api-Key": "${env:CANARY_HEADER}"}},
		// Refuses the header: its failure must not quote the URL's query
		// or the header.
		"refused": {"url": url + "?api_key=" + canaries["query"], "transport": "streamable-http", "connectTimeoutMs": 3000,
			"headers": map[string]string{"X-Api-Key": "wrong-" + canaries["config lit"]}},
	}, nil)
	lookup := opts.LookupEnv
	opts.LookupEnv = func(k string) (string, bool) {
		if v, ok := host[k]; ok {
			return v, true
		}
		return lookup(k)
	}
	// A policy whose deny reason quotes the server's arguments, as a
	// careless one does.
	opts.PolicyDirs = []string{writePolicy(t, "team.rego", `package voltmcp.tools

deny contains sprintf("denied: %v", [input.server.args]) if input.tool.name == "`+mcptest.ToolMetaPlain+`"
`)}
	var logs lockedBuffer
	opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	var seen []string // what voltmcp said, one item each
	check := func(what string, v any, skip ...string) {
		t.Helper()
		var s string
		switch x := v.(type) {
		case string:
			s = x
		case error:
			if x == nil {
				return
			}
			s = x.Error()
		default:
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			s = string(b)
		}
		seen = append(seen, what)
		for name, c := range canaries {
			if slices.Contains(skip, name) {
				continue
			}
			// As written, URL-encoded (as a query value and a path
			// segment), base64-encoded on its own (both alphabets), and
			// base64-encoded after "user:" (its middle: the ends mix in the
			// neighbouring bytes).
			b64 := base64.StdEncoding.EncodeToString([]byte("user:" + c))
			for _, form := range []string{c, neturl.QueryEscape(c), neturl.PathEscape(c), b64[8 : len(b64)-4],
				base64.RawStdEncoding.EncodeToString([]byte(c)), base64.RawURLEncoding.EncodeToString([]byte(c)),
				hex.EncodeToString([]byte(c)), strings.ToUpper(hex.EncodeToString([]byte(c))),
				base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte(c))} {
				if strings.Contains(s, form) {
					t.Errorf("the %s canary is in %s (as %q): %.400s", name, what, form, s)
				}
			}
		}
	}
	checkResult := func(what string, r GatewayResult, skip ...string) {
		t.Helper()
		check(what+" text", r.Text, skip...)
		check(what+" data", r.Data, skip...)
	}

	e := start(t, opts)
	events, cancel := e.Subscribe(4096)
	defer cancel()
	ctx := testwait.Context(t)
	for _, id := range []string{"local", "remote"} {
		err := e.Connect(ctx, id)
		if err != nil {
			t.Errorf("connect %s: %v", id, err) // the header and query reach the server
		}
		check("connect "+id, err)
	}
	err := e.Connect(ctx, "refused")
	if err == nil {
		t.Error("a server given the wrong header connected")
	}
	check("connect refused", err)
	// The secrets do reach the server they are meant for. What a server
	// prints is its own output, shown to the caller and not checked here.
	r := gw(t, e, GatewayInput{Action: "call", Server: "local", Tool: "env"})
	for _, name := range []string{"host env", "config ref", "config lit"} {
		if !strings.Contains(r.Text, canaries[name]) {
			t.Errorf("the %s canary did not reach the server: %.300s", name, r.Text)
		}
	}

	arg := canaries["tool argument"]
	// A call with the canary in an argument the tool does not echo: the
	// env tool of the in-process HTTP server prints this test's own
	// environment, which holds no canary (the host env above is only what
	// the engine looks up).
	r = gw(t, e, GatewayInput{Action: "call", Server: "remote", Tool: "env", Arguments: map[string]any{"token": arg}})
	if r.IsError {
		t.Errorf("env call: %s", r.Text)
	}
	checkResult("call with a secret argument", r)
	// An output over the inline cap goes to the sidecar.
	r = gw(t, e, GatewayInput{Action: "call", Server: "local", Tool: "big", Arguments: map[string]any{"bytes": 200_000}})
	if out, ok := r.Data.(CallResult); !ok || out.Cache == nil {
		t.Errorf("big output without a sidecar: %.200s", r.Text)
	}
	checkResult("big call", r)
	for _, id := range []string{"local", "remote"} {
		// Calls that fail: in the tool, for an argument the tool does not
		// take, and for an unknown tool.
		checkResult(id+" failing call", gw(t, e, GatewayInput{Action: "call", Server: id, Tool: "fail",
			Arguments: map[string]any{"password": arg}}))
		checkResult(id+" extra argument", gw(t, e, GatewayInput{Action: "call", Server: id, Tool: "echo",
			Arguments: map[string]any{"text": "plain words", "token": arg}}))
		checkResult(id+" unknown tool", gw(t, e, GatewayInput{Action: "call", Server: id, Tool: "nope",
			Arguments: map[string]any{"token": arg}}))
		// The server's own error quotes the argument of the wrong type
		// back to the caller who sent it: that is the server's output, and
		// only the argument's own canary may be in it.
		r := gw(t, e, GatewayInput{Action: "call", Server: id, Tool: "add", Arguments: map[string]any{"a": arg, "b": 1}})
		if out, ok := r.Data.(CallResult); !ok || out.Status != "failed" {
			t.Errorf("%s: a call with a bad argument did not reach the server: %.200s", id, r.Text)
		}
		checkResult(id+" bad argument", r, "tool argument")
		checkResult(id+" describe", gw(t, e, GatewayInput{Action: "describe", Server: id, Tool: "echo"}))
		checkResult(id+" read resource", gw(t, e, GatewayInput{Action: "read_resource", Server: id, ResourceURI: "mcptest://readme"}))
		sum, err := e.Server(id)
		check(id+" summary", sum)
		check(id+" summary error", err)
	}
	// The hostile server: its stderr and its JSON-RPC errors quote its
	// env values, encoded, and its arguments.
	if err := e.Connect(ctx, "wire"); err != nil {
		t.Errorf("connect wire: %v", err)
	}
	r = gw(t, e, GatewayInput{Action: "call", Server: "wire", Tool: mcptest.ToolWireFail})
	if !strings.Contains(r.Text, mcptest.WireErrorMarker) {
		t.Errorf("the wire server's error did not come back: %.300s", r.Text)
	}
	checkResult("wire failing call", r)
	wireSum, err := e.Server("wire")
	if !strings.Contains(wireSum.Stderr, mcptest.WireStderrMarker) {
		t.Errorf("the wire server's stderr is not in its summary: %.300s", wireSum.Stderr)
	}
	check("wire summary", wireSum)
	check("wire summary error", err)
	checkResult("wire describe", gw(t, e, GatewayInput{Action: "describe", Server: "wire", Tool: mcptest.ToolWireFail}))
	checkResult("call to a refused server", gw(t, e, GatewayInput{Action: "call", Server: "refused", Tool: "echo",
		Arguments: map[string]any{"text": "x", "token": arg}}))
	// The agent's requests carry the encoded canary where the audit
	// record keeps it, the resource URI of a read: URL-encoded as a query
	// value and a path segment, base64-encoded in both alphabets. The
	// answers echo what the caller sent; the files checked below must not
	// keep it in any form.
	enc := canaries["encoded"]
	for _, uri := range []string{
		"mcptest://readme?q=" + neturl.QueryEscape(enc),
		"mcptest://files/" + neturl.PathEscape(enc),
		"mcptest://readme?q=" + base64.StdEncoding.EncodeToString([]byte(enc)),
		"mcptest://files/" + base64.URLEncoding.EncodeToString([]byte(enc)),
	} {
		checkResult("read of an encoded resource URI", gw(t, e, GatewayInput{Action: "read_resource", Server: "local", ResourceURI: uri}), "encoded")
	}
	// A literal credential of the config's (LIT_TOKEN) that a request
	// carries, plain and base64-encoded: no env name leads the redact
	// decision to it, so the audit log's redactor must learn it from the
	// config.
	lit := canaries["config lit"]
	for _, uri := range []string{
		"mcptest://readme?q=" + lit,
		"mcptest://files/" + base64.URLEncoding.EncodeToString([]byte(lit)),
	} {
		checkResult("read of a resource URI with a literal secret", gw(t, e, GatewayInput{Action: "read_resource", Server: "local", ResourceURI: uri}), "config lit")
	}
	// The server that writes its secrets into its metadata: every
	// action that shows some of it, and a call its deny reason refuses.
	if err := e.Connect(ctx, "meta"); err != nil {
		t.Errorf("connect meta: %v", err)
	}
	checkMeta(t, e, check, checkResult)
	checkResult("status", gw(t, e, GatewayInput{Action: "status"}))
	checkResult("list_servers", gw(t, e, GatewayInput{Action: "list_servers"}))
	checkResult("search", gw(t, e, GatewayInput{Action: "search", Query: "echo text"}))
	// A search echoes its query back to the caller who sent it; only the
	// files and logs below must not keep it.
	checkResult("search for a secret", gw(t, e, GatewayInput{Action: "search", Query: arg}), "tool argument")
	check("servers", e.Servers())
	check("diagnostics", e.Diagnostics())
	var pins []PinView
	pins, err = e.Pins(ctx, "")
	check("pins", pins)
	check("pins error", err)
	check("refresh error", e.Refresh(ctx, "remote"))
	check("approve error", e.Approve(ctx, "local"))

	e.Close()
	cancel()
	n := 0
	for ev := range events {
		check("event "+string(ev.Type), ev)
		n++
	}
	if n == 0 {
		t.Error("no events")
	}
	check("log", logs.String())

	// Every file voltmcp wrote under the agent directory.
	agent := filepath.Join(opts.Home, ".volt", "agent")
	var files []string
	err = filepath.WalkDir(agent, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(agent, path)
		files = append(files, filepath.ToSlash(rel))
		check("file "+rel, string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"audit/", "mcp/pins/", "mcp/cache/", "mcp/outputs/"} {
		found := false
		for _, f := range files {
			found = found || strings.HasPrefix(f, want)
		}
		if !found {
			t.Errorf("no file under %s in the agent directory: %v", want, files)
		}
	}
	t.Logf("%d items checked, %d files", len(seen), len(files))
}

// checkMeta sweeps what the engine shows of the server "meta" of
// TestCanarySweep (mcptest.ModeSecretMeta, whose every metadata field
// carries its secrets), with its actions and in its metadata, and checks
// that what holds no secret is still there: the items whose texts held
// one are kept scrubbed, those whose names held one are dropped, and the
// policy's reason is given, scrubbed.
func checkMeta(t *testing.T, e *Engine, check func(string, any, ...string), checkResult func(string, GatewayResult, ...string)) {
	t.Helper()
	for _, in := range []GatewayInput{
		{Action: "search", Query: "echo"},
		{Action: "search", Query: "meta"},
		{Action: "search", Query: "leak"},
		{Action: "describe", Server: "meta", Tool: mcptest.ToolMetaEcho},
		{Action: "describe", Server: "meta", Tool: mcptest.ToolMetaPlain},
		{Action: "list_resources", Server: "meta"},
		{Action: "list_prompts", Server: "meta"},
		{Action: "call", Server: "meta", Tool: mcptest.ToolMetaEcho},
		{Action: "list_servers"},
		{Action: "status", Server: "meta"},
	} {
		checkResult("meta "+in.Action+" "+in.Tool+in.Query, gw(t, e, in))
	}
	r := gw(t, e, GatewayInput{Action: "call", Server: "meta", Tool: mcptest.ToolMetaPlain})
	if !r.IsError || !strings.Contains(r.Text, "denied: ") || !strings.Contains(r.Text, "--api-key") {
		t.Errorf("the call was not refused with the policy's reason: %.400s", r.Text)
	}
	checkResult("meta call refused by a reason that quotes the arguments", r)
	m, err := e.Metadata("meta")
	if err != nil {
		t.Fatal(err)
	}
	check("meta metadata", m)
	var tools []string
	for _, tl := range m.Tools {
		tools = append(tools, tl.Name)
	}
	if !slices.Contains(tools, mcptest.ToolMetaEcho) || !slices.Contains(tools, mcptest.ToolMetaPlain) || len(tools) != 2 {
		t.Errorf("tools %q, want %s and %s (the one named with a secret dropped)", tools, mcptest.ToolMetaEcho, mcptest.ToolMetaPlain)
	}
	if len(m.Resources) != 1 || m.Resources[0].URI != mcptest.MetaResource || len(m.ResourceTemplates) != 1 ||
		len(m.Prompts) != 1 || m.Prompts[0].Name != mcptest.MetaPrompt {
		t.Errorf("resources %+v, templates %+v, prompts %+v: want the ones without a secret in their names", m.Resources, m.ResourceTemplates, m.Prompts)
	}
	if !strings.Contains(string(m.Tools[0].InputSchema)+string(m.Tools[1].InputSchema), transport.ScrubMarker) {
		t.Errorf("the schema of %s shows no trace of scrubbing", mcptest.ToolMetaEcho)
	}
	sum, err := e.Server("meta")
	check("meta summary", sum)
	check("meta summary error", err)
}
