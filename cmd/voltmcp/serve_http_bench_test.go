package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/mcptest"
)

// passthroughChildEnv makes the test binary a plain Streamable HTTP
// passthrough to the upstream whose URL the variable holds: the go-sdk's
// own server on a loopback port, one tool per upstream tool, each call
// sent on with the go-sdk's client (BenchmarkServeHTTPCall's
// via=passthrough). It prints its URL as one line on stdout.
const passthroughChildEnv = "VOLTMCP_TEST_HTTP_PASSTHROUGH"

// httpRelayChildEnv makes the test binary a reverse proxy to the
// upstream whose URL the variable holds (net/http/httputil's, flushing
// at once), reading nothing of the messages: the least any HTTP process
// between an agent and a server costs (BenchmarkServeHTTPCall's
// via=relay). It prints its URL as one line on stdout.
const httpRelayChildEnv = "VOLTMCP_TEST_HTTP_RELAY"

// runHTTPRelay serves the relay of httpRelayChildEnv until stdin closes.
func runHTTPRelay(upstream string) int {
	u, err := url.Parse(upstream)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return 1
	}
	// The relay's path is the upstream's; the proxy keeps a request's.
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	rp.FlushInterval = -1
	rp.Transport = benchHTTPClient(nil).Transport
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return 1
	}
	go func() { _ = http.Serve(ln, rp) }()
	fmt.Printf("http://%s%s\n", ln.Addr(), u.Path)
	buf := make([]byte, 512)
	for {
		if _, err := os.Stdin.Read(buf); err != nil {
			return 0
		}
	}
}

// peerProxyEnv names a TBXark/mcp-proxy binary for
// BenchmarkServeHTTPCall to measure beside voltmcp (way "peer"); unset,
// that way is left out.
const peerProxyEnv = "VOLTMCP_BENCH_PEER_PROXY"

// runPassthrough serves the passthrough of passthroughChildEnv until
// stdin closes.
func runPassthrough(upstream string) int {
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "passthrough", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: upstream, HTTPClient: benchHTTPClient(nil)}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "passthrough:", err)
		return 1
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "passthrough", Version: "1"}, nil)
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			fmt.Fprintln(os.Stderr, "passthrough:", err)
			return 1
		}
		srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return cs.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "passthrough:", err)
		return 1
	}
	go func() {
		_ = http.Serve(ln, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	}()
	fmt.Printf("http://%s/\n", ln.Addr())
	buf := make([]byte, 512)
	for {
		if _, err := os.Stdin.Read(buf); err != nil {
			return 0
		}
	}
}

// benchHTTPClient is the HTTP client of every way of the HTTP
// benchmark: enough idle connections kept for 64 calls in flight, and
// header (when not nil) on every request.
func benchHTTPClient(header http.Header) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 256
	tr.MaxIdleConnsPerHost = 256
	var rt http.RoundTripper = tr
	for k := range header {
		rt = headerTransportOver{key: k, value: header.Get(k), next: rt}
	}
	return &http.Client{Transport: rt}
}

// startURLChild starts cmd, which prints its URL as its first line of
// stdout, and returns that URL; cmd stops (its stdin closes) when b ends.
func startURLChild(b testing.TB, cmd *exec.Cmd) string {
	b.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	line := make([]byte, 0, 64)
	one := make([]byte, 1)
	for len(line) < 512 {
		if _, err := out.Read(one); err != nil {
			b.Fatalf("%s printed no URL: %v", cmd.Path, err)
		}
		if one[0] == '\n' {
			break
		}
		line = append(line, one[0])
	}
	return strings.TrimSpace(string(line))
}

// startPeerProxy runs the TBXark/mcp-proxy binary at bin in front of
// upstream and returns the URL of its Streamable HTTP endpoint.
func startPeerProxy(b testing.TB, bin, upstream string) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := map[string]any{
		"mcpProxy": map[string]any{"baseURL": "http://" + addr, "addr": addr, "name": "peer", "version": "1", "type": "streamable-http",
			"options": map[string]any{"logEnabled": false}},
		"mcpServers": map[string]any{"up": map[string]any{"url": upstream, "transportType": "streamable-http"}},
	}
	data, _ := json.Marshal(cfg)
	path := filepath.Join(b.TempDir(), "peer.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", path)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://" + addr + "/up/mcp"
	for range 100 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return url
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatalf("the peer proxy did not listen on %s", addr)
	return ""
}

// connectHTTP connects the go-sdk's client to the Streamable HTTP
// endpoint url; the session closes when b ends.
func connectHTTP(b testing.TB, url string, header http.Header) *mcp.ClientSession {
	b.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-agent", Version: "1.0.0"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: benchHTTPClient(header)},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatalf("connecting to %s: %v", url, err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// inflight is how many calls BenchmarkServeHTTPCall's calls=inflight
// keeps in flight at once on each way.
const inflight = 64

// BenchmarkServeHTTPCall is a tools/call through `voltmcp serve --http`
// run as its own process, to an upstream that serves Streamable HTTP
// from a process of its own (mcptest's behave server); the agent is this
// process, with the go-sdk's client. The same loop makes the same call
// other ways, so that all share the machine's load at each moment:
// direct, with the same client straight to the upstream; passthrough,
// through a process that is the go-sdk's server with each upstream tool
// sent on by the go-sdk's client (the plainest proxy); relay, through a
// reverse proxy that reads nothing of the messages (the least any HTTP
// process in between costs); and peer, through
// the TBXark/mcp-proxy binary that VOLTMCP_BENCH_PEER_PROXY names, when
// it does.
//
// calls=interleaved turns the way every call and reports each way's
// p50 and p99 (serve-p50-µs, ...) and serve/direct, the ratio of the
// p50s (the goal: 1.3 or less), and serve/relay. calls=inflight keeps 64 calls in flight
// on one session of each way, the ways taking turns, and reports each
// way's calls per second and serve/passthrough, the ratio of the
// throughputs (the goal: 1 or more).
func BenchmarkServeHTTPCall(b *testing.B) {
	for _, calls := range []string{"interleaved", "inflight"} {
		b.Run("calls="+calls, func(b *testing.B) {
			ctx := context.Background()
			upstream := mcptest.StartHTTP(b, mcptest.ModeBehave)
			project := b.TempDir()
			doc := map[string]any{"version": 1, "servers": map[string]any{"up": map[string]any{"url": upstream}}}
			data, _ := json.Marshal(doc)
			if err := os.MkdirAll(filepath.Join(project, ".volt"), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(project, ".volt", "mcp.json"), data, 0o644); err != nil {
				b.Fatal(err)
			}
			url, tokenFile, stderr := startServe(b, b.TempDir(), project, "--http", "127.0.0.1:0")
			if url == "" {
				b.Fatalf("serve did not start:\n%s", stderr)
			}
			token, err := os.ReadFile(tokenFile)
			if err != nil {
				b.Fatal(err)
			}
			serve := connectHTTP(b, url, http.Header{"Authorization": {"Bearer " + strings.TrimSpace(string(token))}})
			direct := connectHTTP(b, upstream, nil)
			pt := exec.Command(os.Args[0])
			pt.Env = append(os.Environ(), passthroughChildEnv+"="+upstream)
			passthrough := connectHTTP(b, startURLChild(b, pt), nil)
			rl := exec.Command(os.Args[0])
			rl.Env = append(os.Environ(), httpRelayChildEnv+"="+upstream)
			relayed := connectHTTP(b, startURLChild(b, rl), nil)

			args := map[string]any{"text": "hello, gateway"}
			viaServe := &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{"action": "call", "server": "up", "tool": "echo", "arguments": args}}
			viaDirect := &mcp.CallToolParams{Name: "echo", Arguments: args}
			type way struct {
				name string
				call func() error
			}
			plain := func(cs *mcp.ClientSession) func() error {
				return func() error { _, err := cs.CallTool(ctx, viaDirect); return err }
			}
			ways := []way{
				{"serve", func() error {
					res, err := serve.CallTool(ctx, viaServe)
					if err == nil && res.IsError {
						err = fmt.Errorf("call through serve: %s", res.Content[0].(*mcp.TextContent).Text)
					}
					return err
				}},
				{"direct", plain(direct)},
				{"passthrough", plain(passthrough)},
				{"relay", plain(relayed)},
			}
			if bin := os.Getenv(peerProxyEnv); bin != "" {
				ways = append(ways, way{"peer", plain(connectHTTP(b, startPeerProxy(b, bin, upstream), nil))})
			}
			for range 50 {
				for _, w := range ways {
					if err := w.call(); err != nil {
						b.Fatalf("%s: %v", w.name, err)
					}
				}
			}
			if calls == "interleaved" {
				d := make([][]time.Duration, len(ways))
				i := 0
				for b.Loop() {
					for k := range ways {
						w := (i + k) % len(ways)
						start := time.Now()
						if err := ways[w].call(); err != nil {
							b.Fatal(err)
						}
						d[w] = append(d[w], time.Since(start))
					}
					i++
				}
				p50 := make([]float64, len(ways))
				for w := range ways {
					var p99 float64
					p50[w], p99 = percentiles(d[w])
					b.ReportMetric(p50[w], ways[w].name+"-p50-µs")
					b.ReportMetric(p99, ways[w].name+"-p99-µs")
				}
				if p50[1] > 0 {
					b.ReportMetric(p50[0]/p50[1], "serve/direct")
				}
				if p50[3] > 0 {
					b.ReportMetric(p50[0]/p50[3], "serve/relay")
				}
				return
			}
			// calls=inflight: each iteration is one burst of inflight calls
			// on each way, the ways in turn.
			took := make([]time.Duration, len(ways))
			n := 0
			i := 0
			for b.Loop() {
				for k := range ways {
					w := (i + k) % len(ways)
					start := time.Now()
					var wg sync.WaitGroup
					errs := make(chan error, inflight)
					for range inflight {
						wg.Go(func() {
							if err := ways[w].call(); err != nil {
								errs <- err
							}
						})
					}
					wg.Wait()
					took[w] += time.Since(start)
					close(errs)
					if err := <-errs; err != nil {
						b.Fatalf("%s: %v", ways[w].name, err)
					}
				}
				n += inflight
				i++
			}
			rate := make([]float64, len(ways))
			for w := range ways {
				rate[w] = float64(n) / took[w].Seconds()
				b.ReportMetric(rate[w], ways[w].name+"-calls/s")
			}
			if rate[2] > 0 {
				b.ReportMetric(rate[0]/rate[2], "serve/passthrough")
			}
		})
	}
}
