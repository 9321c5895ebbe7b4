package cue

import (
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
