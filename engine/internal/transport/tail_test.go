package transport

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestStderrTailSaysWhy gives StderrTail the stderr of programs that
// died as real runtimes print it: the tail quotes the line that says
// why, never a line of punctuation, and stays short.
func TestStderrTailSaysWhy(t *testing.T) {
	nodeMissing := `node:internal/modules/cjs/loader:1228
  throw err;
  ^

Error: Cannot find module '/home/u/srv/dist/index.js'
    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)
    at Module._load (node:internal/modules/cjs/loader:1051:27)
    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:174:12)
    at node:internal/main/run_main_module:28:49 {
  code: 'MODULE_NOT_FOUND',
  requireStack: []
}

Node.js v22.23.3
`
	huge := strings.Repeat("y", 10<<10)
	for _, c := range []struct {
		name, stderr string
		want         string   // the whole tail, when set
		has, hasNot  []string // parts it must and must not have
	}{
		{name: "node missing module", stderr: nodeMissing,
			want: "Error: Cannot find module '/home/u/srv/dist/index.js' | … | Node.js v22.23.3"},
		{name: "node type error", stderr: "/srv/index.js:3\n  x.y();\n    ^\n\nTypeError: Cannot read properties of undefined (reading 'y')\n    at Object.<anonymous> (/srv/index.js:3:5)\n\nNode.js v20.11.0\n",
			want: "TypeError: Cannot read properties of undefined (reading 'y') | at Object.<anonymous> (/srv/index.js:3:5) | Node.js v20.11.0"},
		{name: "python traceback", stderr: "Traceback (most recent call last):\n  File \"/srv/server.py\", line 3, in <module>\n    import fastmcp\nModuleNotFoundError: No module named 'fastmcp'\n",
			want: "File \"/srv/server.py\", line 3, in <module> | import fastmcp | ModuleNotFoundError: No module named 'fastmcp'"},
		{name: "python chained", stderr: "Traceback (most recent call last):\n  File \"a.py\", line 1\nKeyError: 'x'\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"a.py\", line 4\nRuntimeError: config missing\n",
			want: "Traceback (most recent call last): | File \"a.py\", line 4 | RuntimeError: config missing"},
		{name: "go panic", stderr: "panic: open /etc/srv.json: no such file or directory\n\ngoroutine 1 [running]:\nmain.main()\n\t/src/main.go:12 +0x1d4\n",
			want: "panic: open /etc/srv.json: no such file or directory"},
		{name: "go fatal error", stderr: "fatal error: all goroutines are asleep - deadlock!\n\ngoroutine 1 [chan receive]:\nmain.main()\n\t/src/main.go:5 +0x2d\nexit status 2\n",
			want: "fatal error: all goroutines are asleep - deadlock! | … | exit status 2"},
		{name: "rust panic", stderr: "thread 'main' panicked at src/main.rs:2:5:\nno token\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n",
			want: "thread 'main' panicked at src/main.rs:2:5: | no token | note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"},
		{name: "python traceback with output after", stderr: "Traceback (most recent call last):\n  File \"/srv/server.py\", line 3, in <module>\n    import fastmcp\nModuleNotFoundError: No module named 'fastmcp'\nshutting down\nbye\nexit 1\n",
			want: "ModuleNotFoundError: No module named 'fastmcp' | … | exit 1"},
		{name: "plain text", stderr: "starting\nlistening on stdio\ncannot start: no config\n",
			want: "starting | listening on stdio | cannot start: no config"},
		{name: "punctuation and blanks", stderr: "loading\n}\n|\n\n  ^  \n---\nbye now\n)\n",
			want: "loading | bye now"},
		{name: "junk and binary", stderr: "\x00\x01\xff\xfe\x1b[31m\x1b]8;;http://x\x07\n\xc3\x28\xa0\xa1\nreal reason here\x1b[0m\n\xff\xff\n",
			has: []string{"real reason here"}, hasNot: []string{"\x1b", "\x00", "http://x"}},
		{name: "huge line", stderr: "Error: " + huge + "\n" + huge + "\n",
			want: strings.Repeat("y", tailLineCut) + tailEllipsis},
		{name: "huge error line", stderr: "Error: " + huge + "\n",
			has: []string{"yyy"}},
		{name: "huge error line cut at the front of the scan", stderr: huge + "\nError: late failure\n" + "tail line\n",
			want: "Error: late failure | tail line"},
		{name: "empty", stderr: "", want: ""},
		{name: "only punctuation", stderr: "}\n |  | \n", want: ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := StderrTail([]byte(c.stderr))
			if c.want != "" || c.has == nil {
				if got != c.want {
					t.Errorf("tail\n got %q\nwant %q", got, c.want)
				}
			}
			for _, h := range c.has {
				if !strings.Contains(got, h) {
					t.Errorf("tail %q lacks %q", got, h)
				}
			}
			for _, h := range c.hasNot {
				if strings.Contains(got, h) {
					t.Errorf("tail %q has %q", got, h)
				}
			}
			if len(got) > tailBytes+len(tailEllipsis) || !utf8.ValidString(got) {
				t.Errorf("tail of %d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
			}
			if strings.Contains(got, "|  |") || strings.HasPrefix(got, "} ") {
				t.Errorf("tail quotes punctuation: %q", got)
			}
		})
	}
}

// FuzzStderrTail checks the bounds of a tail for any stderr: valid
// UTF-8, within its size, no control character but the separators'
// spaces, and never one that says nothing.
func FuzzStderrTail(f *testing.F) {
	f.Add([]byte("Error: x\n    at y\n}\n\nNode.js v22\n"))
	f.Add([]byte("panic: boom\n\ngoroutine 1 [running]:\nmain.main()\n\t/x.go:1 +0x1\n"))
	f.Add([]byte("\x00\xff\x1b[31m}\n|\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := StderrTail(b)
		if !utf8.ValidString(got) || len(got) > tailBytes+len(tailEllipsis) {
			t.Fatalf("tail %q", got)
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("tail %q has control %U", got, r)
			}
		}
		if got != "" && !saysSomething(got) {
			t.Fatalf("tail %q says nothing", got)
		}
	})
}
