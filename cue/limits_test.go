package cue

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// hostileConfigs are config files of just under MaxFileSize, each shaped
// to make one part of the loader work hard: many servers, many values,
// long keys over many values, every value invalid, every key unknown.
func hostileConfigs() map[string]string {
	pad := func(b *strings.Builder) string {
		// Whitespace up to the file cap: parsed, but cheap.
		b.WriteString(strings.Repeat(" ", MaxFileSize-b.Len()-1))
		b.WriteString("}")
		return b.String()
	}
	out := map[string]string{}
	var b strings.Builder
	// 100,000 servers, as generated; the loader stops at MaxServers.
	b.WriteString(`{"mcpServers":{`)
	for i := 0; b.Len() < MaxFileSize-100; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"s%d":{"command":"npx","args":["x"]}`, i)
	}
	b.WriteString("}")
	out["servers"] = pad(&b)
	b.Reset()
	// One array of two million values; the loader stops at MaxValues.
	b.WriteString(`{"version":1,"x-a":[0`)
	b.WriteString(strings.Repeat(",0", (MaxFileSize-100)/2))
	b.WriteString("]")
	out["values"] = pad(&b)
	b.Reset()
	// A 2 MiB key over many values: each value's path repeats it.
	b.WriteString(`{"version":1,"x-` + strings.Repeat("k", 2<<20) + `":[0`)
	b.WriteString(strings.Repeat(",0", (MaxFileSize-(2<<20)-100)/2))
	b.WriteString("]")
	out["paths"] = pad(&b)
	b.Reset()
	// MaxServers servers whose every value is invalid, within MaxValues.
	b.WriteString(`{"version":1,"servers":{`)
	for i := range MaxServers - 1 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"s%d":{"command":5,"args":[1,2,3,4,5,6,7]}`, i)
	}
	b.WriteString("}")
	out["invalid"] = pad(&b)
	b.Reset()
	// One server with MaxValues invalid args.
	b.WriteString(`{"version":1,"servers":{"s":{"command":"x","args":[1`)
	b.WriteString(strings.Repeat(",1", MaxValues-10))
	b.WriteString("]}}")
	out["invalid-one"] = pad(&b)
	b.Reset()
	// MaxServers servers of long unknown keys, each one a suggestion to
	// look for.
	b.WriteString(`{"mcpServers":{`)
	for i := range MaxServers - 1 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"s%d":{"command":"x"`, i)
		for j := range 8 {
			fmt.Fprintf(&b, `,"comand%d%s":"y"`, j, strings.Repeat("d", 400))
		}
		b.WriteString("}")
	}
	b.WriteString("}")
	out["unknown"] = pad(&b)
	return out
}

// maxLoadAlloc bounds the bytes allocated by loading one hostile file. It
// keeps the peak memory of `voltmcp vet` on any file under MaxFileSize
// below 100 MB: before the bounds on servers and values, a 4 MiB file of
// 100,000 servers allocated some 4 GB.
const maxLoadAlloc = 160 << 20

// TestHostileConfigMemory loads each hostile file and measures the bytes
// it allocates (runtime.MemStats, not time).
func TestHostileConfigMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes several 4 MiB files")
	}
	schema := testSchema()
	dir := t.TempDir()
	for name, doc := range hostileConfigs() {
		if len(doc) > MaxFileSize {
			t.Fatalf("%s: %d bytes, over the file cap", name, len(doc))
		}
		path := filepath.Join(dir, name+".json")
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res, err := LoadFiles(context.Background(), []string{path}, &Options{Schema: schema, Lint: true})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		alloc := after.TotalAlloc - before.TotalAlloc
		bound := uint64(maxLoadAlloc)
		if raceBuild {
			// Twice the bound still catches the gigabytes of an
			// unbounded file.
			bound *= 2
		}
		t.Logf("%s: %d diagnostics, %.1f MiB allocated", name, len(res.Diagnostics), float64(alloc)/(1<<20))
		if alloc > bound {
			t.Errorf("%s: loading a %d byte file allocated %d MiB; the bound is %d MiB", name, len(doc), alloc>>20, bound>>20)
		}
	}
}

// TestServerCap checks that a file of MaxServers servers loads and one of
// MaxServers+1 is refused, naming the line of the first server over the
// cap and the limit.
func TestServerCap(t *testing.T) {
	for _, dialect := range []string{"servers", "mcpServers"} {
		build := func(n int) string {
			var b strings.Builder
			fmt.Fprintf(&b, "{\n  %q: {\n", dialect)
			for i := range n {
				if i > 0 {
					b.WriteString(",\n")
				}
				fmt.Fprintf(&b, `    "s%d": {"command": "x"}`, i)
			}
			b.WriteString("\n  }\n}\n")
			return b.String()
		}
		r := loadOne(t, build(MaxServers))
		for _, d := range r.Diagnostics {
			if d.Code == CodeFileTooLarge {
				t.Fatalf("%s: %d servers refused: %v", dialect, MaxServers, d)
			}
		}
		r = loadOne(t, build(MaxServers+1))
		var found bool
		for _, d := range r.Diagnostics {
			if d.Code == CodeFileTooLarge {
				found = true
				// Line 1 is "{", line 2 the map, then one server a line.
				if d.Position.Line != MaxServers+3 || !strings.Contains(d.Message, fmt.Sprint(MaxServers)) || !strings.Contains(d.Message, dialect) {
					t.Errorf("%s: %v, want line %d and the limit %d", dialect, d, MaxServers+3, MaxServers)
				}
			}
		}
		if !found || r.Files[0].Loaded {
			t.Errorf("%s: %d servers: want a file-too-large diagnostic and the file not loaded:\n%v", dialect, MaxServers+1, r.Diagnostics)
		}
	}
}

// TestValueCap checks the bound on values and on the length of their
// paths.
func TestValueCap(t *testing.T) {
	for name, doc := range map[string]string{
		"values": `{"version":1,"x-a":[0` + strings.Repeat(",0", MaxValues) + `]}`,
		"paths":  `{"version":1,"x-` + strings.Repeat("k", maxPathBytes/100) + `":[0` + strings.Repeat(",0", 200) + `]}`,
	} {
		r := loadOne(t, doc)
		if len(r.Diagnostics) == 0 || r.Diagnostics[0].Code != CodeFileTooLarge || r.Files[0].Loaded {
			t.Errorf("%s: want file-too-large, got %v", name, r.Diagnostics)
		}
	}
	ok := `{"version":1,"x-a":[0` + strings.Repeat(",0", MaxValues-4) + `]}`
	if r := loadOne(t, ok); !r.Files[0].Loaded {
		t.Errorf("%d values refused: %v", MaxValues-2, r.Diagnostics)
	}
}

// loadOne loads doc as a file of its own.
func loadOne(t *testing.T, doc string) *Result {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := LoadFiles(context.Background(), []string{path}, &Options{Schema: testSchema()})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
