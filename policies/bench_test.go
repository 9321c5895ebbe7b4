package policies

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkTools measures one tools decision: memoized (the hot call path,
// same input again) and evaluated (memo disabled).
func BenchmarkTools(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts *Options
	}{
		{"memoized", nil},
		{"evaluated", &Options{DisableMemo: true}},
		{"evaluated-with-examples", &Options{DisableMemo: true, Dirs: []string{examplesDir}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := mustLoad(b, bc.opts)
			ctx := context.Background()
			in := githubTool()
			in.IncludeTools = []string{"create_*", "list_*", "get_*"}
			in.ExcludeTools = []string{"delete_*"}
			if d := p.Tools(ctx, in); !d.Allowed {
				b.Fatalf("got %+v", d)
			}
			b.ReportAllocs()
			for b.Loop() {
				p.Tools(ctx, in)
			}
		})
	}
}

// BenchmarkRedact measures redacting a 50 KB tool output with a few
// secrets in it.
func BenchmarkRedact(b *testing.B) {
	p := mustLoad(b, nil)
	r, err := p.Redactor(context.Background(), RedactInput{EnvNames: []string{"ACME_DEPLOY_TOKEN", "DB_PASSWORD"}, LookupEnv: lookupCanary})
	if err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	for i := 0; sb.Len() < 50<<10; i++ {
		fmt.Fprintf(&sb, `{"id": %d, "title": "Issue number %d about the build", "url": "https://github.com/acme/repo/issues/%d", "state": "open"}`+"\n", i, i, i)
		if i%100 == 0 {
			sb.WriteString("Authorization: Bearer abcdefgh12345678 and canary-env-4d1c0ffee\n")
		}
	}
	out := sb.String()[:50<<10]
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		r.Redact(out)
	}
}

// BenchmarkLoad measures Load: parsing, compiling and preparing the
// default policies (and the examples).
func BenchmarkLoad(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts *Options
	}{{"default", nil}, {"with-examples", &Options{Dirs: []string{examplesDir}}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Load(context.Background(), bc.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRedactor measures building a Redactor (once per load).
func BenchmarkRedactor(b *testing.B) {
	p := mustLoad(b, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Redactor(context.Background(), RedactInput{EnvNames: []string{"A_TOKEN"}, LookupEnv: lookupCanary}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToolsTail measures the spread of evaluated tools decisions (memo
// off), the figure the evaluation deadline must clear: besides ns/op it
// reports the median, the 99th percentile and the slowest evaluation, and
// first-ns, the first evaluation after Load (which builds OPA's rule
// indexes). Run it with CPU load beside it (two `yes > /dev/null`, say)
// to see what a busy machine does to the tail.
func BenchmarkToolsTail(b *testing.B) {
	for _, bc := range []struct {
		name string
		dirs []string
	}{{"default", nil}, {"examples", []string{examplesDir}}} {
		b.Run(bc.name, func(b *testing.B) {
			opts := &Options{DisableMemo: true, Dirs: bc.dirs, Timeout: time.Minute}
			p := mustLoad(b, opts)
			ctx := context.Background()
			in := githubTool()
			in.IncludeTools = []string{"create_*", "list_*", "get_*"}
			in.ExcludeTools = []string{"delete_*"}
			start := time.Now()
			if d := p.Tools(ctx, in); !d.Allowed {
				b.Fatalf("got %+v", d)
			}
			first := time.Since(start)
			var ds []time.Duration
			for b.Loop() {
				start := time.Now()
				p.Tools(ctx, in)
				ds = append(ds, time.Since(start))
			}
			slices.Sort(ds)
			b.ReportMetric(float64(first.Nanoseconds()), "first-ns")
			b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(ds[len(ds)*99/100].Nanoseconds()), "p99-ns")
			b.ReportMetric(float64(ds[len(ds)-1].Nanoseconds()), "max-ns")
		})
	}
}

// BenchmarkRedactRecord measures redacting the strings of one call's
// audit record that the engine's memo does not already know (times,
// hashes, a session, a result digest, an error), with one secret env var:
// the per-record cost of the redactor, off the call path.
func BenchmarkRedactRecord(b *testing.B) {
	p := mustLoad(b, nil)
	r, err := p.Redactor(context.Background(), RedactInput{EnvNames: []string{"ACME_DEPLOY_TOKEN"}, LookupEnv: lookupCanary})
	if err != nil {
		b.Fatal(err)
	}
	strs := []string{
		"2026-05-01T12:00:00.123456789Z", "c0ffee0123456789", "call_259094b31e61bf01948d09a1",
		"sha256:0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f",
		`calling "tools/call": server returned an error: upstream request to https://api.example.com/v1/items failed: 502 Bad Gateway`,
		"mcptest://readme?page=2", "/home/user/src/project",
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range strs {
			r.Redact(s)
		}
	}
}
