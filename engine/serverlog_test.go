package engine

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/serverlog"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/redact"
)

// nodeCrash is a shell script that dies at start as Node does when its
// entry point is missing, with the secret $T on the error line and, in
// base64 and hex, on lines of their own.
const nodeCrash = `printf 'node:internal/modules/cjs/loader:1228\n  throw err;\n  ^\n\n' >&2
printf "Error: Cannot find module '/srv/dist/index.js' token=%s\n" "$T" >&2
printf 'b64=%s\n' "$(printf %s "$T" | base64)" >&2
printf 'hex=%s\n' "$(printf %s "$T" | od -An -tx1 | tr -d ' \n')" >&2
printf '    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15) {\n  code: %s,\n  requireStack: []\n}\n\nNode.js v22.23.3\n' "'MODULE_NOT_FOUND'" >&2
exit 1`

// TestServerLogOfACrashAtStart starts a real server that dies at start
// as Node does, printing a secret it was given: the connect error quotes
// the line that says why (not "} |  | Node.js …") and names the log; the
// log holds its stderr and the exit, without the secret in any form the
// redactor knows, in a 0600 file of a 0700 directory; Forget deletes it.
func TestServerLogOfACrashAtStart(t *testing.T) {
	const secret = "tok_CANARY/log+key=0123456789"
	t.Setenv("VOLTMCP_TEST_LOG_SECRET", secret)
	opts := workspace(t, map[string]server{
		"nodecrash": {"command": "/bin/sh", "args": []string{"-c", nodeCrash}, "env": map[string]string{"T": "${env:VOLTMCP_TEST_LOG_SECRET}"}},
	}, nil)
	e := start(t, opts)
	ctx := testwait.Context(t)
	err := e.Connect(ctx, "nodecrash")
	if err == nil {
		t.Fatal("connected")
	}
	ident := identityOf(t, opts, "nodecrash")
	msg := err.Error()
	for _, want := range []string{
		`server "nodecrash" exited (exit status 1) during initialize`,
		"stderr tail: Error: Cannot find module '/srv/dist/index.js' token=[redacted] | … | Node.js v22.23.3",
		"whole log: voltmcp logs nodecrash (" + filepath.Join("~", ".volt", "agent", "mcp", "logs", ident+".log") + ")",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q\nlacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "} |") || strings.Contains(msg, secret) {
		t.Errorf("error %q", msg)
	}

	path := serverlog.Path(filepath.Join(opts.Home, ".volt", "agent"), ident)
	var raw []byte
	testwait.For(t, "the log", func() bool {
		raw, _ = os.ReadFile(path)
		return strings.Contains(string(raw), "Node.js v22.23.3") && strings.Contains(string(raw), "exited (exit status 1)")
	})
	for _, form := range redact.Forms(secret) {
		if strings.Contains(string(raw), form) {
			t.Errorf("the log holds the secret as %q", form)
		}
	}
	for _, want := range []string{`"kind":"stderr","text":"Error: Cannot find module '/srv/dist/index.js' token=[redacted]"`, `"text":"b64=[redacted]`, `"text":"hex=[redacted]"`, `"kind":"error"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the log lacks %s:\n%s", want, raw)
		}
	}
	for _, p := range []string{path, filepath.Dir(path)} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm != 0o600 && perm != 0o700 || info.IsDir() != (perm == 0o700) {
			t.Errorf("%s: mode %#o", p, perm)
		}
	}
	recs, more, err := e.ServerLog("nodecrash", 0)
	if err != nil || more || len(recs) == 0 {
		t.Fatalf("ServerLog: %d records, more %v, %v", len(recs), more, err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Kind+" "+r.Text)
		for _, form := range redact.Forms(secret) {
			if strings.Contains(r.Text, form) {
				t.Errorf("ServerLog holds the secret as %q", form)
			}
		}
	}
	if all := strings.Join(got, "\n"); !strings.Contains(all, "stderr Error: Cannot find module '/srv/dist/index.js' token=[redacted]") ||
		!strings.Contains(all, "error ") || !strings.HasSuffix(all, recs[len(recs)-1].Kind+" "+recs[len(recs)-1].Text) {
		t.Errorf("ServerLog:\n%s", all)
	}
	last, more, err := e.ServerLog("nodecrash", 1)
	if err != nil || !more || len(last) != 1 || last[0] != recs[len(recs)-1] {
		t.Errorf("ServerLog of 1: %+v, more %v, %v; want the last of %d", last, more, err, len(recs))
	}
	if _, _, err := e.ServerLog("nosuch", 0); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("ServerLog of an unknown server: %v", err)
	}
	sum, _ := e.Server("nodecrash")
	if want := filepath.Join("~", ".volt", "agent", "mcp", "logs", ident+".log"); sum.Log != want || sum.LogError != "" {
		t.Errorf("summary log %q, error %q", sum.Log, sum.LogError)
	}

	srv, _ := e.Config().Server("nodecrash")
	f, err := Forget(context.Background(), filepath.Join(opts.Home, ".volt", "agent"), srv)
	if err != nil || !f.Log {
		t.Fatalf("Forget: %+v, %v", f, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the log outlived Forget: %v", err)
	}
}

// TestServerLogFIFODoesNotHang plants a FIFO where a server's log goes:
// the server starts and answers calls as ever, and its status says why
// its log cannot be written.
func TestServerLogFIFODoesNotHang(t *testing.T) {
	cmd, args, env := mcptest.Command(mcptest.ModeBehave)
	opts := workspace(t, map[string]server{
		"chatty": {"command": "/bin/sh", "args": append([]string{"-c", `echo "starting up" >&2; exec "$0" "$@"`, cmd}, args...), "env": env},
	}, nil)
	path := serverlog.Path(filepath.Join(opts.Home, ".volt", "agent"), identityOf(t, opts, "chatty"))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	e := start(t, opts)
	ctx := testwait.Context(t)
	done := make(chan GatewayResult, 1)
	go func() {
		done <- e.Gateway(ctx, GatewayInput{Action: "call", Server: "chatty", Tool: "echo", Arguments: map[string]any{"text": "hi"}})
	}()
	select {
	case r := <-done:
		if r.IsError {
			t.Fatalf("the call failed: %s", r.Text)
		}
	case <-time.After(testwait.Patience):
		t.Fatal("a FIFO at the log's path hangs the call")
	}
	var sum ServerSummary
	testwait.For(t, "the log's failure in the status", func() bool {
		sum, _ = e.Server("chatty")
		return sum.LogError != ""
	})
	if !strings.Contains(sum.LogError, "not a regular file (fifo)") || !strings.Contains(sum.LogError, path) {
		t.Errorf("log error %q", sum.LogError)
	}
}

// TestServerLogOfHTTPErrors connects to HTTP servers that fail in
// different ways (a refused connection, an error status, a connection
// dropped mid-call): each failure is a record of kind error in the
// server's log, scrubbed of the secret of its URL.
func TestServerLogOfHTTPErrors(t *testing.T) {
	const secret = "tok_CANARY_httplog_0123456789"
	t.Setenv("VOLTMCP_TEST_HTTPLOG_SECRET", secret)
	refused := httptest.NewServer(http.NotFoundHandler())
	refusedURL := refused.URL
	refused.Close() // nothing listens there any more
	status := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "upstream broke", http.StatusBadGateway)
	}))
	t.Cleanup(status.Close)
	drop := dropCallServer(t)
	query := "/mcp?key=${env:VOLTMCP_TEST_HTTPLOG_SECRET}"
	opts := workspace(t, map[string]server{
		"refused": {"url": refusedURL + query, "transport": "streamable-http"},
		"status":  {"url": status.URL + query, "transport": "streamable-http"},
		"drop":    {"url": drop + "?key=${env:VOLTMCP_TEST_HTTPLOG_SECRET}", "transport": "streamable-http"},
	}, nil)
	e := start(t, opts)
	ctx := testwait.Context(t)
	for _, c := range []struct {
		server, tool, want string
	}{
		{"refused", "", "connection refused"},
		{"status", "", "Bad Gateway"},
		{"drop", "drop", "the server closed the connection during tools/call"},
	} {
		if c.tool == "" {
			if err := e.Connect(ctx, c.server); err == nil {
				t.Fatalf("%s: connected", c.server)
			}
		} else if r := e.Gateway(ctx, GatewayInput{Action: "call", Server: c.server, Tool: c.tool, Arguments: map[string]any{}}); !r.IsError {
			t.Fatalf("%s: the call succeeded", c.server)
		}
		path := serverlog.Path(filepath.Join(opts.Home, ".volt", "agent"), identityOf(t, opts, c.server))
		var raw []byte
		testwait.For(t, c.server+"'s log", func() bool {
			raw, _ = os.ReadFile(path)
			return strings.Contains(string(raw), c.want)
		})
		if !strings.Contains(string(raw), `"kind":"error"`) || !strings.Contains(string(raw), `"server":"`+c.server+`"`) {
			t.Errorf("%s: log %s", c.server, raw)
		}
		for _, form := range redact.Forms(secret) {
			if strings.Contains(string(raw), form) {
				t.Errorf("%s: the log holds the secret as %q", c.server, form)
			}
		}
	}
}

// TestServerLogOfAFloodIsBounded runs a server that floods stderr (50
// MiB): while it does, it answers calls, and its log has rotated and
// stays within two files of the cap.
func TestServerLogOfAFloodIsBounded(t *testing.T) {
	opts := workspace(t, map[string]server{"loud": stdio(mcptest.ModeFloodStderr, nil)}, nil)
	e := start(t, opts)
	ctx := testwait.Context(t)
	path := serverlog.Path(filepath.Join(opts.Home, ".volt", "agent"), identityOf(t, opts, "loud"))
	if r := e.Gateway(ctx, GatewayInput{Action: "call", Server: "loud", Tool: "echo", Arguments: map[string]any{"text": "hi"}}); r.IsError {
		t.Fatalf("call: %s", r.Text)
	}
	testwait.For(t, "the log to rotate", func() bool {
		_, err := os.Stat(path + ".1")
		return err == nil
	})
	if r := e.Gateway(ctx, GatewayInput{Action: "call", Server: "loud", Tool: "echo", Arguments: map[string]any{"text": "hi"}}); r.IsError {
		t.Fatalf("call during the flood: %s", r.Text)
	}
	for _, p := range []string{path, path + ".1"} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > serverlog.DefaultMaxBytes {
			t.Errorf("%s: %d bytes, over the cap", filepath.Base(p), info.Size())
		}
	}
	if sum, _ := e.Server("loud"); sum.LogError != "" {
		t.Errorf("log error %q", sum.LogError)
	}
	for _, c := range []struct{ ask, want int }{{0, DefaultLogRecords}, {7, 7}, {1 << 20, MaxLogRecords}} {
		recs, more, err := e.ServerLog("loud", c.ask)
		if err != nil || !more || len(recs) != c.want {
			t.Errorf("ServerLog(%d): %d records, more %v, %v; want %d and more", c.ask, len(recs), more, err, c.want)
		}
	}
}
