package policies

import (
	"os"
	"path/filepath"
	"testing"
)

// projectFiles reads the policy files directly in dir, as a caller of
// Load reads a project's (Options.ProjectFiles).
func projectFiles(t *testing.T, dir string) []File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.rego"))
	if err != nil {
		t.Fatal(err)
	}
	var out []File
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, File{Name: n, Data: b})
	}
	return out
}

// writePolicy writes a policy file into a new temporary directory and
// returns the directory and the file's path.
func writePolicy(t *testing.T, name, src string) (dir, file string) {
	t.Helper()
	dir = t.TempDir()
	file = filepath.Join(dir, name)
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

// githubTool is an ordinary, allowed tool call input.
func githubTool() ToolInput {
	return ToolInput{
		Server:       Server{ID: "github", Scope: "user", Transport: "stdio", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-github@1.2.3"}},
		Tool:         Tool{Name: "create_issue", Title: "Create issue", Annotations: []byte(`{"readOnlyHint":false,"destructiveHint":false}`)},
		Risk:         "write",
		RiskReason:   "readOnlyHint false, destructiveHint false",
		IncludeTools: []string{},
		ExcludeTools: []string{},
		Pin:          Pin{State: "pinned"},
		Surface:      "serve",
	}
}

func askInput() TrustInput {
	return TrustInput{
		Project:             "/src/app",
		Files:               []FileHash{{Path: "/src/app/.mcp.json", ContentHash: "sha256:aaa"}},
		Surface:             "serve",
		DefaultProjectTrust: "ask",
	}
}
