package cue

import (
	"context"
	"path/filepath"
	"testing"
)

func TestLimitsOnlyNarrowFromProjects(t *testing.T) {
	res := load(t, map[Layer]string{
		LayerUser:    `{"version":1,"settings":{"limits":{"maxTools":500,"maxSchemaDepth":16}},"servers":{"u":{"command":"u","limits":{"maxTools":50,"maxEnumValues":100000}}}}`,
		LayerProject: `{"version":1,"settings":{"limits":{"maxTools":100000,"maxDescriptionChars":100}},"servers":{"p":{"command":"p","limits":{"maxSchemaDepth":1000}}}}`,
	})
	l := res.Config.Settings.Limits
	if l.MaxTools != 500 || l.MaxDescriptionChars != 100 || l.MaxSchemaDepth != 16 || l.MaxEnumValues != 256 {
		t.Errorf("settings limits = %+v: a project raised one, or could not lower one", l)
	}
	u, p := mustServer(t, res, "u").Limits, mustServer(t, res, "p").Limits
	if u.MaxTools != 50 || u.MaxEnumValues != 256 || u.MaxDescriptionChars != 100 {
		t.Errorf("user server limits = %+v", u)
	}
	if p.MaxSchemaDepth != 16 || p.MaxTools != 500 {
		t.Errorf("project server limits = %+v: a server raised the gateway's", p)
	}
	if got := res.Config.Sources["settings.limits.maxTools"]; got.Layer != LayerUser {
		t.Errorf("source of the clamped maxTools = %+v", got)
	}
}

// TestMediaOnlyNarrowsFromProjects: settings.media defaults to inline
// with caps of 256 KiB an item and 1 MiB an answer; a project layer may
// turn inlining off and lower the caps, never turn it on or raise them.
func TestMediaOnlyNarrowsFromProjects(t *testing.T) {
	def := load(t, map[Layer]string{LayerUser: `{"version":1}`}).Config.Settings.Media
	if def != (Media{Inline: true, MaxItemBytes: 262144, MaxAnswerBytes: 1048576}) {
		t.Errorf("default media = %+v", def)
	}
	res := load(t, map[Layer]string{
		LayerUser:    `{"version":1,"settings":{"media":{"inline":false,"maxItemBytes":1000}}}`,
		LayerProject: `{"version":1,"settings":{"media":{"inline":true,"maxItemBytes":5000000,"maxAnswerBytes":2000}}}`,
	})
	if m := res.Config.Settings.Media; m != (Media{Inline: false, MaxItemBytes: 1000, MaxAnswerBytes: 2000}) {
		t.Errorf("media = %+v: a project widened it, or could not narrow it", m)
	}
	res = load(t, map[Layer]string{
		LayerUser:    `{"version":1}`,
		LayerProject: `{"version":1,"settings":{"media":{"inline":false}}}`,
	})
	if res.Config.Settings.Media.Inline {
		t.Error("a project could not turn media inlining off")
	}
}

func TestPluginsComeFromUserLayers(t *testing.T) {
	sum := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	files := map[Layer]string{
		LayerUser:    `{"version":1,"settings":{"plugins":{"builtin":false,"classifiers":[{"path":"plugins/house.wasm","sha256":"` + sum + `"}]}}}`,
		LayerProject: `{"version":1,"settings":{"plugins":{"classifiers":[{"path":"evil.wasm","sha256":"` + sum + `"}]}}}`,
	}
	loc := layers(t, files)
	res := load(t, files)
	pl := res.Config.Settings.Plugins
	if pl.Builtin || len(pl.Classifiers) != 1 || len(pl.Shapers) != 0 {
		t.Fatalf("plugins = %+v", pl)
	}
	if want := filepath.Join(filepath.Dir(loc.Path(LayerUser)), "plugins", "house.wasm"); filepath.Base(pl.Classifiers[0].Path) != "house.wasm" || !filepath.IsAbs(pl.Classifiers[0].Path) {
		t.Errorf("plugin path = %q, want like %q", pl.Classifiers[0].Path, want)
	}
	found := false
	for _, d := range res.Diagnostics {
		found = found || (d.Code == CodeProjectSetting && d.Layer == LayerProject)
	}
	if !found {
		t.Errorf("no project-setting-ignored warning for project plugins: %v", res.Diagnostics)
	}
}

// TestTrustToolHintsComesFromUserLayers: a user layer may trust a
// server's tool hints; a project layer cannot, neither for its own server
// nor for a user's, and is told so.
func TestTrustToolHintsComesFromUserLayers(t *testing.T) {
	files := map[Layer]string{
		LayerUser: `{"version":1,"servers":{"u":{"command":"u","trustToolHints":true},"v":{"command":"v"}}}`,
		LayerProject: `{"version":1,"servers":{"p":{"command":"p","trustToolHints":true},"v":{"trustToolHints":true},` +
			`"u":{"trustToolHints":false}}}`,
	}
	loc := layers(t, files)
	res, err := Load(context.Background(), loc, &Options{Schema: testSchema(), Approve: true})
	if err != nil {
		t.Fatal(err)
	}
	if !mustServer(t, res, "u").TrustToolHints {
		t.Error("the user layer's trustToolHints was not kept (or a project turned it off)")
	}
	if mustServer(t, res, "p").TrustToolHints || mustServer(t, res, "v").TrustToolHints {
		t.Error("a project layer made voltmcp trust a server's tool hints")
	}
	if got := find(res, CodeProjectSetting); len(got) != 3 {
		t.Errorf("%d project-setting-ignored findings, want 3:%s", len(got), dump(res.Diagnostics))
	}
	for _, d := range find(res, CodeCrossScopeField) {
		t.Errorf("unexpected cross-scope finding: %+v", d)
	}
}
