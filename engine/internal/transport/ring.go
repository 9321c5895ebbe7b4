package transport

import (
	"regexp"
	"strings"
	"sync"
	"unicode"

	"github.com/voltmcp/voltmcp/sanitize"
)

// Ring keeps the last n bytes written to it, for a server's stderr:
// enough to show why it died, never an unbounded buffer however much it
// prints. It is safe for concurrent use.
type Ring struct {
	mu    sync.Mutex
	size  int // capacity, allocated on the first write
	buf   []byte
	start int // index of the oldest byte when full
	full  bool
	total int64 // bytes ever written
}

// NewRing returns a ring that keeps n bytes. It allocates nothing until
// written to: most servers never print to stderr, and HTTP servers have
// none.
func NewRing(n int) *Ring { return &Ring{size: n} }

// Write implements io.Writer; it never fails.
func (r *Ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(p)
	if n == 0 {
		return 0, nil
	}
	r.total += int64(n)
	if r.buf == nil {
		r.buf = make([]byte, 0, r.size)
	}
	c := cap(r.buf)
	if n >= c {
		r.buf = append(r.buf[:0], p[n-c:]...)
		r.start, r.full = 0, true
		return n, nil
	}
	for len(p) > 0 {
		if !r.full {
			room := c - len(r.buf)
			k := min(room, len(p))
			r.buf = append(r.buf, p[:k]...)
			p = p[k:]
			if len(r.buf) == c {
				r.full = true
			}
			continue
		}
		k := copy(r.buf[r.start:], p)
		p = p[k:]
		r.start = (r.start + k) % c
	}
	return n, nil
}

// Bytes returns the kept bytes, oldest first.
func (r *Ring) Bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]byte(nil), r.buf...)
	}
	out := make([]byte, 0, len(r.buf))
	out = append(out, r.buf[r.start:]...)
	return append(out, r.buf[:r.start]...)
}

// Total returns how many bytes were ever written.
func (r *Ring) Total() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// Bounds of [Ring.Tail].
const (
	tailScan     = 4 << 10 // bytes of the ring a tail is taken from
	tailLines    = 3
	tailBytes    = 600
	tailLineCut  = 300 // bytes of one line of a tail
	tailEllipsis = "…"
)

// runtimeError matches the line in which a runtime says why a program
// died: an exception or error line (Node's "Error: Cannot find module",
// "TypeError: …", Python's last "ModuleNotFoundError: …", Java's
// "java.lang.IllegalStateException: …"), Go's "panic:" and "fatal
// error:", Rust's "thread 'main' panicked at", and the "error: …" that
// many programs print.
var runtimeError = regexp.MustCompile(`^(?:Uncaught )?(?:[A-Za-z_$][\w$]*\.)*[A-Za-z_$][\w$]*(?:Error|Exception|Exit|Interrupt)(?: \[[A-Z_]+\])?:(?: |$)` +
	`|^(?:panic|fatal error|error|ERROR|Error|FATAL|fatal)(?:\[[\w-]+\])?: |^thread '[^']*' panicked`)

// goFrame matches the lines of a Go stack trace that name a function or
// a goroutine ("main.main()", "goroutine 1 [running]:", "created by …").
var goFrame = regexp.MustCompile(`^(?:goroutine \d+ \[|created by |[\w./*%()-]+\(.*\)$)`)

// Tail returns the last lines of the ring that say something, joined by
// " | ", as an error quotes them: see [StderrTail].
func (r *Ring) Tail() string { return StderrTail(r.Bytes()) }

// StderrTail returns what an error quotes of a program's stderr b: the
// lines of its last 4 KiB that say something (a letter or a digit;
// blank lines and lines of punctuation such as "}" are skipped), cleaned
// (see [sanitize.Output]), tabs as spaces: the last 3 of them, unless
// the line a runtime prints when a program dies ([runtimeError]: Node's
// "Error: …", Python's last exception line, Go's "panic:") comes before
// those; then the tail is that line and the last line after it that is
// not a stack frame (Node's "Node.js v22…"), with "…" for what is
// between. Each line is cut at 300 bytes and the whole at 600. It
// is not scrubbed.
func StderrTail(b []byte) string {
	cutFront := len(b) > tailScan
	if cutFront {
		b = b[len(b)-tailScan:]
	}
	// Cleaned whole before it is split, so that an escape sequence
	// loses its parameters as well as its introducer.
	text, _ := sanitize.Output(string(b))
	raw := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if cutFront && len(raw) > 1 {
		raw = raw[1:] // the front of this line is gone
	}
	type line struct {
		text  string
		frame bool // indented, or a frame of a stack trace
	}
	var lines []line
	for _, l := range raw {
		l = strings.ReplaceAll(strings.TrimRight(l, "\r "), "\t", " ")
		if !saysSomething(l) {
			continue
		}
		trimmed := strings.TrimLeft(l, " ")
		lines = append(lines, line{text: trimmed, frame: trimmed != l || goFrame.MatchString(trimmed)})
	}
	var out []string
	errAt := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if !lines[i].frame && runtimeError.MatchString(lines[i].text) {
			errAt = i
			break
		}
	}
	if errAt >= 0 && errAt < len(lines)-tailLines {
		out = append(out, cutLine(lines[errAt].text))
		for j := len(lines) - 1; j > errAt; j-- {
			if !lines[j].frame {
				if j > errAt+1 {
					out = append(out, tailEllipsis)
				}
				out = append(out, cutLine(lines[j].text))
				break
			}
		}
	} else {
		for _, l := range lines[max(0, len(lines)-tailLines):] {
			out = append(out, cutLine(l.text))
		}
	}
	tail := strings.Join(out, " | ")
	if len(tail) > tailBytes {
		tail = strings.ToValidUTF8(tail[:tailBytes], "") + tailEllipsis
	}
	return tail
}

// saysSomething reports whether a line of stderr has a letter or a
// digit: "}", "|", "^" and blank lines say nothing.
func saysSomething(l string) bool {
	return strings.IndexFunc(l, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// cutLine cuts a line of a tail at tailLineCut bytes, keeping its start.
func cutLine(l string) string {
	if len(l) <= tailLineCut {
		return l
	}
	return strings.ToValidUTF8(l[:tailLineCut], "") + tailEllipsis
}

// LastLine returns the last line written to the ring, at most its last
// 300 bytes, cleaned as text (see [sanitize.Text]); "" when there is
// none. It is not scrubbed.
func (r *Ring) LastLine() string {
	text := strings.TrimRight(string(r.Bytes()), "\r\n\t ")
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[i+1:]
	}
	if len(text) > 300 {
		text = text[len(text)-300:]
	}
	out, _ := sanitize.Text(text, 0)
	return out
}
