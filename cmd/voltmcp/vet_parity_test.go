package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestVetRefusesWhatTheGatewayRefuses configures a policy that does not
// compile and a classifier that is not a wasm module, starts an engine on
// the config and lets it prepare them (it logs why it refuses each), and
// runs vet on the same config: vet reports each with the engine's error
// text, since both load through engine.LoadPolicies and
// engine.LoadPlugin.
func TestVetRefusesWhatTheGatewayRefuses(t *testing.T) {
	t.Parallel()
	bad := []byte("#!/bin/sh\necho not a module\n")
	sum := sha256.Sum256(bad)
	home := vetHome(t, `{"policies": ["broken"], "plugins": {"builtin": false, "classifiers": [{"path": "bad.wasm", "sha256": "`+hex.EncodeToString(sum[:])+`"}]}}`)
	agent := filepath.Join(home, ".volt", "agent")
	if err := os.WriteFile(filepath.Join(agent, "bad.wasm"), bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(agent, "broken"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(agent, "broken", "team.rego"), []byte("package voltmcp.tools\n\ndeny contains \"x\" if {\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	var logs syncBuffer
	eng, err := engine.New(context.Background(), &engine.Options{
		Home: home, Project: t.TempDir(), PluginCacheDir: testCacheDir, Passive: true,
		LookupEnv: func(string) (string, bool) { return "", false },
		Logger:    slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	// The engine prepares its policies and plugins in the background and
	// logs each refusal; no call is needed.
	var policyErr, pluginErr string
	for deadline := testwait.Deadline(t); policyErr == "" || pluginErr == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the engine did not log both refusals within a minute:\n%s", logs.String())
		}
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		for sc.Scan() {
			var rec struct{ Msg, Err string }
			if json.Unmarshal(sc.Bytes(), &rec) != nil {
				continue
			}
			switch rec.Msg {
			case "policies failed to load; every decision denies":
				policyErr = rec.Err
			case "plugin refused":
				pluginErr = rec.Err
			}
		}
	}

	t.Logf("the engine refused the policy: %s", policyErr)
	t.Logf("the engine refused the plugin: %s", pluginErr)
	_, policyMsgs := vetDiagnostics(t, home, cue.CodePolicyError)
	wantPolicy := "settings.policies[0]: policy " + filepath.Join(agent, "broken") + " does not load: " + strings.TrimPrefix(policyErr, "load policies: ")
	if len(policyMsgs) != 1 || policyMsgs[0] != wantPolicy {
		t.Errorf("vet's policy errors %q\nwant the engine's: %q", policyMsgs, wantPolicy)
	}
	_, pluginMsgs := vetDiagnostics(t, home, cue.CodePluginError)
	wantPlugin := "settings.plugins.classifiers[0].path: " + pluginErr
	if len(pluginMsgs) != 1 || pluginMsgs[0] != wantPlugin || !strings.Contains(pluginErr, "bad magic") {
		t.Errorf("vet's plugin errors %q\nwant the engine's: %q", pluginMsgs, wantPlugin)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
