package cue

import (
	"os"
	"strings"
	"testing"
)

// TestDocsCoverEveryCode keeps docs/config.md in step with Codes(): each
// code has a "### <code>" section, which SARIF output links to.
func TestDocsCoverEveryCode(t *testing.T) {
	data, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, c := range Codes() {
		if !strings.Contains(doc, "\n### "+string(c)+"\n") {
			t.Errorf("docs/config.md has no section \"### %s\"", c)
		}
	}
}
