package cue

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestDiagnosticCodes has a case for every code in Codes(); a new code
// without a case fails TestEveryCodeHasACase.
var codeCases = []struct {
	code  Code
	files map[Layer]string
	// want: where the diagnostic points.
	layer     Layer
	line, col int
	path      string
	// in must appear in the message or hint.
	in string
}{
	{code: CodeJSONSyntax, files: map[Layer]string{LayerUser: "{\n  \"servers\": {,}\n}"},
		layer: LayerUser, line: 2, col: 15, in: "byte 16"},
	{code: CodeJSONSyntax, files: map[Layer]string{LayerUser: `{"a":1,}`},
		layer: LayerUser, line: 1, col: 8, in: "trailing comma"},
	{code: CodeDuplicateKey, files: map[Layer]string{LayerUser: "{\"servers\":{\"a\":{\"command\":\"x\"},\n\"a\":{\"command\":\"y\"}}}"},
		layer: LayerUser, line: 2, col: 1, path: "servers.a", in: "line 1"},
	{code: CodeNotObject, files: map[Layer]string{LayerUser: `[1,2]`},
		layer: LayerUser, line: 1, col: 1, in: "array"},
	{code: CodeDialect, files: map[Layer]string{LayerProjectShared: `{"mcpServers":{}}`},
		layer: LayerProjectShared, line: 1, col: 1, in: "mcpServers"},
	{code: CodeDialect, files: map[Layer]string{LayerProjectShared: `{"servers":{"x":{"type":"stdio","command":"x"}}}`},
		layer: LayerProjectShared, line: 1, col: 1, in: "VS Code"},
	{code: CodeDialectConflict, files: map[Layer]string{LayerProjectShared: `{"mcpServers":{"x":{"type":"sse","transport":"stdio","command":"x"}}}`},
		layer: LayerProjectShared, line: 1, col: 34, path: "mcpServers.x.transport", in: "contradicts"},
	{code: CodeUnknownField, files: map[Layer]string{LayerUser: `{"servers":{"x":{"comand":"x"}}}`},
		layer: LayerUser, line: 1, col: 18, path: "servers.x.comand", in: `did you mean "command"`},
	{code: CodeUnknownField, files: map[Layer]string{LayerUser: `{"servers":{"x":{"type":"stdio","command":"x","transport":"stdio"}}}`},
		layer: LayerUser, line: 1, col: 18, path: "servers.x.type", in: `"transport"`},
	{code: CodeUnknownField, files: map[Layer]string{LayerUser: `{"settings":{"maxOutputByte":5}}`},
		layer: LayerUser, line: 1, col: 14, path: "settings.maxOutputByte", in: `"maxOutputBytes"`},
	{code: CodeGatewayEntry, files: map[Layer]string{LayerProjectShared: `{"mcpServers":{"voltmcp":{"command":"voltmcp","args":["serve"]}}}`},
		layer: LayerProjectShared, line: 1, col: 16, path: "mcpServers.voltmcp", in: "gateway itself"},
	{code: CodeIgnoredField, files: map[Layer]string{LayerProjectShared: `{"mcpServers":{"x":{"command":"x","envFile":".env"}}}`},
		layer: LayerProjectShared, line: 1, col: 35, path: "mcpServers.x.envFile", in: "envFile"},
	{code: CodeInvalidType, files: map[Layer]string{LayerUser: `{"servers":{"x":{"command":"x","args":"--flag"}}}`},
		layer: LayerUser, line: 1, col: 39, path: "servers.x.args", in: "want array, got string"},
	{code: CodeInvalidType, files: map[Layer]string{LayerUser: `{"servers":{"x":{"command":"x","directTools":3}}}`},
		layer: LayerUser, line: 1, col: 46, path: "servers.x.directTools", in: "boolean"},
	{code: CodeInvalidValue, files: map[Layer]string{LayerUser: `{"servers":{"x":{"command":"x","lifecycle":"sometimes"}}}`},
		layer: LayerUser, line: 1, col: 44, path: "servers.x.lifecycle", in: `"keep-alive"`},
	{code: CodeInvalidValue, files: map[Layer]string{LayerUser: `{"servers":{"x":{"url":"ftp://x"}}}`},
		layer: LayerUser, line: 1, col: 24, path: "servers.x.url", in: "http"},
	{code: CodeInvalidValue, files: map[Layer]string{LayerUser: `{"servers":{"x":{"url":"https://m.example/mcp","auth":{"type":"oauth","clientId":"c","issuer":"https://as.example/?t=1"}}}}`},
		layer: LayerUser, line: 1, col: 95, path: "servers.x.auth.issuer", in: "does not match"},
	{code: CodeInvalidValue, files: map[Layer]string{LayerUser: `{"servers":{"x":{"command":"x","env":{"1BAD":"v"}}}}`},
		layer: LayerUser, line: 1, col: 39, path: "servers.x.env[\"1BAD\"]", in: "not a valid name"},
	{code: CodeOutOfRange, files: map[Layer]string{LayerUser: `{"settings":{"connectTimeoutMs":5}}`},
		layer: LayerUser, line: 1, col: 33, path: "settings.connectTimeoutMs", in: ">= 100"},
	{code: CodeEnvRefSyntax, files: map[Layer]string{LayerUser: `{"servers":{"x":{"command":"x","env":{"A":"${env:}"}}}}`},
		layer: LayerUser, line: 1, col: 43, path: "servers.x.env.A", in: "${env:"},
	{code: CodeEnvRefSyntax, files: map[Layer]string{LayerUser: `{"servers":{"x":{"command":"x","env":{"A":"${HOME}"}}}}`},
		layer: LayerUser, line: 1, col: 43, path: "servers.x.env.A", in: "${env:NAME}"},
	{code: CodeEnvRefSyntax, files: map[Layer]string{LayerProjectShared: `{"servers":{"x":{"type":"stdio","command":"x","env":{"A":"${input:tok}"}}}}`},
		layer: LayerProjectShared, line: 1, col: 58, path: "servers.x.env.A", in: "input"},
	{code: CodeServerID, files: map[Layer]string{LayerUser: `{"servers":{"!!!":{"command":"x"}}}`},
		layer: LayerUser, line: 1, col: 13, path: `servers["!!!"]`, in: "no usable"},
	{code: CodeServerIDChanged, files: map[Layer]string{LayerUser: `{"servers":{"My Server":{"command":"x"}}}`},
		layer: LayerUser, line: 1, col: 13, path: `servers["My Server"]`, in: `"my-server"`},
	{code: CodeServerIDClash, files: map[Layer]string{LayerUser: `{"servers":{"GitHub":{"command":"x"},"github":{"command":"y"}}}`},
		layer: LayerUser, line: 1, col: 38, path: "servers.github", in: `"github"`},
	{code: CodeMissingField, files: map[Layer]string{LayerUser: `{"servers":{"x":{"lifecycle":"eager"}}}`},
		layer: LayerUser, line: 1, col: 13, path: "servers.x", in: "neither command nor url"},
	{code: CodeMissingField, files: map[Layer]string{LayerUser: `{"servers":{"x":{"url":"https://x.example","auth":{"type":"bearer"}}}}`},
		layer: LayerUser, line: 1, col: 51, path: "servers.x.auth.token", in: `"token"`},
	{code: CodeMissingField, files: map[Layer]string{LayerUser: `{"servers":{"x":{"transport":"sse"}}}`},
		layer: LayerUser, line: 1, col: 13, path: "servers.x", in: "needs a url"},
	{code: CodeTransportMismatch, files: map[Layer]string{LayerUser: `{"servers":{"x":{"command":"x","url":"https://x.example"}}}`},
		layer: LayerUser, line: 1, col: 13, path: "servers.x", in: "both command and url"},
	{code: CodeTransportMismatch, files: map[Layer]string{LayerUser: `{"servers":{"x":{"url":"https://x.example","env":{"A":"b"}}}}`},
		layer: LayerUser, line: 1, col: 44, path: "servers.x.env", in: "HTTP"},
	{code: CodeCrossScopeField, files: map[Layer]string{
		LayerUser: `{"servers":{"x":{"command":"x"}}}`, LayerProject: `{"servers":{"x":{"env":{"A":"b"}}}}`},
		layer: LayerProject, line: 1, col: 18, path: "servers.x.env", in: "without redefining"},
	{code: CodeProjectSetting, files: map[Layer]string{LayerProject: `{"settings":{"defaultProjectTrust":"always"}}`},
		layer: LayerProject, line: 1, col: 14, path: "settings.defaultProjectTrust", in: "cannot set its own trust"},
	{code: CodeLiteralSecret, files: map[Layer]string{LayerUser: `{"servers":{"x":{"command":"x","env":{"GITHUB_TOKEN":"abc123"}}}}`},
		layer: LayerUser, line: 1, col: 54, path: "servers.x.env.GITHUB_TOKEN", in: "${env:NAME}"},
	{code: CodeLiteralSecret, files: map[Layer]string{LayerUser: `{"servers":{"x":{"url":"https://x.example","headers":{"Authorization":"Bearer sk-abcdefgh"}}}}`},
		layer: LayerUser, line: 1, col: 71, path: "servers.x.headers.Authorization", in: "literal secret"},
	{code: CodeLiteralSecret, files: map[Layer]string{LayerUser: `{"servers":{"x":{"command":"x","args":["--api-key","k3y"]}}}`},
		layer: LayerUser, line: 1, col: 52, path: "servers.x.args[1]", in: "argument 1"},
	{code: CodeLiteralSecret, files: map[Layer]string{LayerUser: `{"servers":{"x":{"url":"https://x.example/mcp?access_token=abc"}}}`},
		layer: LayerUser, line: 1, col: 24, path: "servers.x.url", in: "credential"},
	{code: CodeLiteralSecret, files: map[Layer]string{LayerUser: `{"servers":{"x":{"url":"https://x.example","auth":{"type":"bearer","token":"plain"}}}}`},
		layer: LayerUser, line: 1, col: 76, path: "servers.x.auth.token", in: "auth.token"},
	{code: CodeShellCommand, files: map[Layer]string{LayerUser: `{"servers":{"x":{"command":"/bin/sh","args":["-c","npx foo"]}}}`},
		layer: LayerUser, line: 1, col: 28, path: "servers.x.command", in: "shell"},
	{code: CodeShellCommand, files: map[Layer]string{LayerUser: `{"servers":{"x":{"command":"npx -y foo"}}}`},
		layer: LayerUser, line: 1, col: 28, path: "servers.x.command", in: "spaces"},
	{code: CodeUnpinnedPackage, files: map[Layer]string{LayerUser: `{"servers":{"x":{"command":"npx","args":["-y","@modelcontextprotocol/server-memory"]}}}`},
		layer: LayerUser, line: 1, col: 28, path: "servers.x.command", in: "@modelcontextprotocol/server-memory"},
	{code: CodeUnpinnedPackage, files: map[Layer]string{LayerUser: `{"servers":{"x":{"command":"uvx","args":["mcp-server-git"]}}}`},
		layer: LayerUser, line: 1, col: 28, path: "servers.x.command", in: "mcp-server-git"},
	{code: CodeUnpinnedPackage, files: map[Layer]string{LayerUser: `{"servers":{"x":{"command":"npx","args":["pkg@latest"]}}}`},
		layer: LayerUser, line: 1, col: 28, path: "servers.x.command", in: "pkg@latest"},
	{code: CodeInsecureURL, files: map[Layer]string{LayerUser: `{"servers":{"x":{"url":"http://mcp.example.com/mcp"}}}`},
		layer: LayerUser, line: 1, col: 24, path: "servers.x.url", in: "mcp.example.com"},
	{code: CodeFilterOverlap, files: map[Layer]string{LayerUser: `{"servers":{"x":{"command":"x","includeTools":["read","delete_all"],"excludeTools":["delete_*"]}}}`},
		layer: LayerUser, line: 1, col: 55, path: "servers.x.includeTools[1]", in: `"delete_*"`},
	{code: CodeOAuthLoopback, files: map[Layer]string{LayerUser: `{"servers":{"x":{"url":"http://127.0.0.1:9/mcp","auth":{"type":"oauth","allowInsecureLoopback":true}}}}`},
		layer: LayerUser, line: 1, col: 96, path: "servers.x.auth.allowInsecureLoopback", in: "plain http"},
	{code: CodeOAuthIssuer, files: map[Layer]string{LayerUser: `{"servers":{"x":{"url":"https://mcp.example.com/mcp","auth":{"type":"oauth","clientId":"c1"}}}}`},
		layer: LayerUser, line: 1, col: 88, path: "servers.x.auth.clientId", in: "without auth.issuer"},
	{code: CodeDisabledAbove, files: map[Layer]string{
		LayerUserShared: `{"mcpServers":{"x":{"command":"x"}}}`, LayerUser: `{"servers":{"x":{"enabled":false}}}`},
		layer: LayerUser, line: 1, col: 28, path: "servers.x.enabled", in: "disabled"},
	{code: CodeSecretInArgs, files: map[Layer]string{LayerUser: `{"servers":{"x":{"command":"x","args":["--token","${env:GH_TOKEN}"]}}}`},
		layer: LayerUser, line: 1, col: 50, path: "servers.x.args[1]", in: "pass it in env"},
}

func TestDiagnosticCodes(t *testing.T) {
	for _, tt := range codeCases {
		t.Run(string(tt.code), func(t *testing.T) {
			res := load(t, tt.files)
			var got *Diagnostic
			for _, d := range find(res, tt.code) {
				if d.Layer == tt.layer && d.Line == tt.line && d.Col == tt.col {
					got = &d
					break
				}
			}
			if got == nil {
				t.Fatalf("no %s at %s %d:%d; got:%s", tt.code, tt.layer, tt.line, tt.col, dump(res.Diagnostics))
			}
			if got.Path != tt.path {
				t.Errorf("path = %q, want %q", got.Path, tt.path)
			}
			if !strings.Contains(got.Message+" "+got.Hint, tt.in) {
				t.Errorf("message %q (hint %q) lacks %q", got.Message, got.Hint, tt.in)
			}
			if want := filepath.Base(layers(t, nil).Path(tt.layer)); filepath.Base(got.File) != want {
				t.Errorf("file = %q, want a %s", got.File, want)
			}
			if got.Severity != tt.code.DefaultSeverity() && !(tt.code == CodeInsecureURL || tt.code == CodeIgnoredField) {
				t.Errorf("severity = %s, want %s", got.Severity, tt.code.DefaultSeverity())
			}
		})
	}
}

// Codes reported outside TestDiagnosticCodes, by their own tests.
var codesTestedElsewhere = map[Code]string{
	CodeFileUnreadable: "TestFileProblems",
	CodeFileTooLarge:   "TestFileProblems",
	CodeProjectIgnored: "TestUntrustedProjectDoesNotLoad",
	// vet reports these; the tests are in cmd/voltmcp.
	CodePolicyError: "cmd/voltmcp TestVetPolicies",
	CodePluginError: "cmd/voltmcp TestVetPlugins",
}

func TestEveryCodeHasACase(t *testing.T) {
	covered := map[Code]bool{}
	for _, c := range codeCases {
		covered[c.code] = true
	}
	for _, c := range Codes() {
		if c.Summary() == "" {
			t.Errorf("code %s has no summary", c)
		}
		if !covered[c] && codesTestedElsewhere[c] == "" {
			t.Errorf("code %s has no case in codeCases", c)
		}
	}
}

func TestFileProblems(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// A sparse file: the loader must refuse it from its size alone.
	if err := f.Truncate(MaxFileSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	sub := filepath.Join(dir, "adir.json")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := LoadFiles(context.Background(), []string{big, sub, filepath.Join(dir, "missing.json")}, &Options{Schema: testSchema()})
	if err != nil {
		t.Fatal(err)
	}
	if d := find(res, CodeFileTooLarge); len(d) != 1 || !strings.Contains(d[0].Message, "4 MiB") || d[0].File != big {
		t.Errorf("file-too-large:%s", dump(res.Diagnostics))
	}
	if d := find(res, CodeFileUnreadable); len(d) != 2 {
		t.Errorf("want 2 file-unreadable (directory, missing):%s", dump(res.Diagnostics))
	}
}

func TestMissingLayersAreFine(t *testing.T) {
	res := load(t, nil)
	if len(res.Diagnostics) != 0 || len(res.Config.Servers) != 0 || res.Config.Settings.MaxOutputBytes != 51200 {
		t.Fatalf("empty load: %+v%s", res.Config.Settings, dump(res.Diagnostics))
	}
	for _, f := range res.Files {
		if f.Found {
			t.Errorf("%s found", f.Path)
		}
	}
}

func TestDefaults(t *testing.T) {
	res := load(t, map[Layer]string{LayerUser: `{"servers":{"x":{"command":"x"}}}`})
	s, x := res.Config.Settings, mustServer(t, res, "x")
	want := Settings{Enabled: true, Mode: "proxy", DefaultProjectTrust: "ask", ConnectTimeoutMs: 15000,
		DiscoveryTimeoutMs: 10000, CallTimeoutMs: 600000, AuthTimeoutMs: 300000, IdleTimeoutMs: 600000,
		MetadataRefreshMs: 86400000, MaxOutputBytes: 51200, MaxOutputLines: 2000, OutputCacheTtlMs: 86400000,
		OutputCacheMaxBytes: 256 << 20, Resources: "explicit", Prompts: "user-preview", ListAtStart: true,
		Media:   Media{Inline: true, MaxItemBytes: 256 << 10, MaxAnswerBytes: 1 << 20},
		Plugins: Plugins{Builtin: true, Classifiers: []Plugin{}, Shapers: []Plugin{}},
		Limits: Limits{MaxTools: 1000, MaxDescriptionChars: 2048, MaxSchemaBytes: 65536, MaxSchemaDepth: 32,
			MaxEnumValues: 256, MaxResultBytes: 4 << 20, MaxMessageBytes: 8 << 20},
		Audit: Audit{OnFailure: "refuse-risky"}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("settings defaults:\n got %+v\nwant %+v", s, want)
	}
	if !x.Enabled || x.Lifecycle != "lazy" || x.ConnectTimeoutMs != 15000 || x.DirectTools.Enabled() {
		t.Errorf("server defaults: %+v", x)
	}
	if o := res.Config.Sources["settings.maxOutputLines"]; o.Layer != LayerDefault {
		t.Errorf("default source = %+v", o)
	}
}

func TestDialectNormalization(t *testing.T) {
	res := load(t, map[Layer]string{
		LayerUserShared: `{"mcpServers":{
			"web":{"type":"http","url":"https://w.example/mcp","headers":{"Authorization":"Bearer ${WEB_TOKEN}"}},
			"old":{"type":"sse","url":"https://o.example/sse"},
			"cli":{"command":"c","disabled":true,"autoApprove":["x"]}}}`,
		LayerProjectShared: `{"inputs":[{"id":"tok","type":"promptString"}],"servers":{"vs":{"type":"http","url":"https://v.example"}}}`,
		LayerProject:       `{"version":1,"servers":{"own":{"transport":"streamable-http","url":"https://x.example"}}}`,
	})
	noErrors(t, res)
	web, old, cli, vs := mustServer(t, res, "web"), mustServer(t, res, "old"), mustServer(t, res, "cli"), mustServer(t, res, "vs")
	if web.Transport != TransportStreamableHTTP || web.TransportAuto || web.Headers["Authorization"] != "Bearer ${env:WEB_TOKEN}" {
		t.Errorf("web = %+v", web)
	}
	if old.Transport != TransportSSE || cli.Enabled || vs.Transport != TransportStreamableHTTP {
		t.Errorf("old = %s, cli enabled = %v, vs = %s", old.Transport, cli.Enabled, vs.Transport)
	}
	dialects := map[Layer]Dialect{}
	for _, f := range res.Files {
		dialects[f.Layer] = f.Dialect
	}
	if dialects[LayerUserShared] != DialectClaude || dialects[LayerProjectShared] != DialectVSCode || dialects[LayerProject] != DialectVoltmcp {
		t.Errorf("dialects = %v", dialects)
	}
	if len(find(res, CodeIgnoredField)) != 2 { // autoApprove, inputs
		t.Errorf("ignored fields:%s", dump(res.Diagnostics))
	}
}

func TestClaudeRefFormOnlyInClaudeDialect(t *testing.T) {
	res := load(t, map[Layer]string{LayerUser: `{"servers":{"x":{"command":"x","args":["${TOKEN}"]}}}`})
	if len(find(res, CodeEnvRefSyntax)) != 1 {
		t.Fatalf("${TOKEN} accepted outside the mcpServers dialect:%s", dump(res.Diagnostics))
	}
	if mustServer(t, res, "x").Enabled {
		t.Error("server with a bad reference is enabled")
	}
}

func TestStandaloneFiles(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.json")
	b := filepath.Join(dir, "b.json")
	os.WriteFile(a, []byte(`{"mcpServers":{"x":{"command":"x","cwd":"tools"}}}`), 0o644)
	os.WriteFile(b, []byte(`{"servers":{"y":{"lifecycle":"bogus"}}}`), 0o644)
	overlay := filepath.Join(dir, "overlay.json")
	os.WriteFile(overlay, []byte(`{"version":1,"servers":{"z":{"enabled":false,"excludeTools":["w_*"]}}}`), 0o644)
	res, err := LoadFiles(context.Background(), []string{a, b, overlay}, &Options{Schema: testSchema(), Lint: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 3 || res.Files[0].Layer != LayerFile {
		t.Fatalf("files = %+v", res.Files)
	}
	var inB int
	for _, d := range res.Diagnostics {
		if (d.File == a || d.File == overlay) && d.Severity == SeverityError {
			t.Errorf("error in a good file: %s", d)
		}
		if d.File == b {
			inB++
		}
	}
	if inB == 0 {
		t.Error("no diagnostics for the bad file")
	}
}
