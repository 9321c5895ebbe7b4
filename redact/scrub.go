package redact

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// MinValueLen is the shortest value a [Scrubber] removes. Shorter values
// ("1", "true", "dev") would garble every message while protecting
// nothing.
const MinValueLen = 6

// minFragment is the shortest base64 fragment removed for a value
// embedded at an offset (see [Forms]).
const minFragment = 6

// Scrubber removes known secret values from text, in each of the forms
// [Forms] lists. It is immutable and safe for concurrent use; [Scrubber.With]
// returns a new one with more values. The forms are computed when it is
// built, so [Scrubber.Text] is one pass over the text whatever the number
// of values, and a text that holds none (the usual case) is passed over
// by skipping, looking at a fraction of its bytes and copying nothing.
// The nil *Scrubber removes nothing.
type Scrubber struct {
	replacement string
	values      []string // as given, deduplicated, in order
	r           *strings.Replacer
	skip        *skipTable // says quickly that a text holds no form
	// writers reuses the writers of Text: a Replacer writes to an
	// io.Writer, which would otherwise cost an allocation per text, and
	// most texts hold no value at all.
	writers *sync.Pool
}

// NewScrubber returns a Scrubber that replaces every value of values (of
// at least [MinValueLen] bytes) and its encoded forms by replacement.
func NewScrubber(replacement string, values ...string) *Scrubber {
	return (&Scrubber{replacement: replacement}).With(values...)
}

// With returns a Scrubber that also removes values. It returns s itself
// when every value is already known or too short.
func (s *Scrubber) With(values ...string) *Scrubber {
	var add []string
	for _, v := range values {
		if len(v) >= MinValueLen && !slices.Contains(s.values, v) && !slices.Contains(add, v) {
			add = append(add, v)
		}
	}
	if len(add) == 0 {
		return s
	}
	n := &Scrubber{replacement: s.replacement, values: append(slices.Clip(s.values), add...)}
	var olds []string
	for _, v := range n.values {
		olds = append(olds, Forms(v)...)
	}
	// Longest first: at one position the Replacer takes the first pattern
	// given, so a form that contains another is replaced whole.
	slices.SortFunc(olds, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	olds = slices.Compact(olds)
	pairs := make([]string, 0, 2*len(olds))
	for _, o := range olds {
		pairs = append(pairs, o, n.replacement)
	}
	n.r = strings.NewReplacer(pairs...)
	n.skip = newSkipTable(olds)
	n.writers = &sync.Pool{New: func() any { return new(lazyWriter) }}
	return n
}

// Len returns the number of values s removes.
func (s *Scrubber) Len() int {
	if s == nil {
		return 0
	}
	return len(s.values)
}

// Text returns t with every form of every value replaced. Text with none
// is returned as it is, without copying.
func (s *Scrubber) Text(t string) string {
	if s == nil || s.r == nil || t == "" || !s.skip.mayHold(t) {
		return t
	}
	w := s.writers.Get().(*lazyWriter)
	w.in = t
	_, _ = s.r.WriteString(w, t)
	out := w.result()
	*w = lazyWriter{} // holds no text while pooled
	s.writers.Put(w)
	return out
}

// lazyWriter collects what a strings.Replacer writes, copying only once
// a second piece arrives: a Replacer that finds nothing writes its input
// whole, in one piece, which is then returned as it is.
type lazyWriter struct {
	in     string
	first  string
	pieces int
	b      strings.Builder
}

func (w *lazyWriter) WriteString(p string) (int, error) {
	switch w.pieces {
	case 0:
		w.first = p
	case 1:
		w.b.Grow(len(w.in))
		w.b.WriteString(w.first)
		fallthrough
	default:
		w.b.WriteString(p)
	}
	w.pieces++
	return len(p), nil
}

func (w *lazyWriter) Write(p []byte) (int, error) { return w.WriteString(string(p)) }

func (w *lazyWriter) result() string {
	switch w.pieces {
	case 0:
		return ""
	case 1:
		return w.first
	}
	return w.b.String()
}

// Forms returns the forms of v a Scrubber removes:
//
//   - v as written;
//   - v inside a JSON string (with and without HTML escaping);
//   - v URL-encoded as a query value and as a path segment, with upper-
//     and lower-case hex digits;
//   - v base64-encoded on its own, in the standard and URL alphabets,
//     padded and raw;
//   - v base64-encoded inside a longer byte string (user:v in Basic
//     credentials, a JSON document with v in it), in both alphabets. Such
//     an encoding depends on v's offset modulo 3, so there are three
//     alignments; for each, the form is the run of characters whose six
//     bits all come from v. The up to two characters at either end that
//     mix v's bits with its neighbours' are left: they carry at most ten
//     bits of v's first and last bytes, never the rest;
//   - v hex-encoded, in lower and upper case, which also finds it inside
//     a longer hex string (hex is byte-aligned);
//   - v base32-encoded (RFC 4648, padded and raw), on its own and, in the
//     way of base64, inside a longer base32 string at each of its five
//     alignments.
//
// What is not covered: other encodings (gzip, base32hex, wrapped MIME
// base64 with line breaks inside v's run), v split across lines or
// messages, and case changes.
func Forms(v string) []string {
	if v == "" {
		return nil
	}
	out := []string{v}
	add := func(f string) {
		if len(f) >= minFragment && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	if b, err := json.Marshal(v); err == nil {
		add(string(b[1 : len(b)-1]))
	}
	var jb strings.Builder
	enc := json.NewEncoder(&jb)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) == nil {
		j := strings.TrimSuffix(jb.String(), "\n")
		add(j[1 : len(j)-1])
	}
	for _, e := range []string{url.QueryEscape(v), url.PathEscape(v)} {
		add(e)
		add(lowerHex(e))
	}
	for _, e := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		add(e.EncodeToString([]byte(v)))
	}
	h := hex.EncodeToString([]byte(v))
	add(h)
	add(strings.ToUpper(h))
	add(base32.StdEncoding.EncodeToString([]byte(v)))
	add(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte(v)))
	raw64 := []func([]byte) string{base64.RawStdEncoding.EncodeToString, base64.RawURLEncoding.EncodeToString}
	raw32 := []func([]byte) string{base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString}
	for _, f := range aligned(v, 3, 6, raw64) {
		add(f)
	}
	for _, f := range aligned(v, 5, 5, raw32) {
		add(f)
	}
	return out
}

// aligned returns, for an encoding of groups bytes at a time into
// characters of bits bits each (base64: 3 and 6; base32: 5 and 5), the
// forms v takes inside a longer encoded byte string at each of its
// alignments: v at offset k of a group covers bits [8k, 8k+8n) of the
// stream, character j holds bits [bits*j, bits*j+bits), and the form is
// the run of characters whose bits all come from v.
func aligned(v string, groups, bits int, encs []func([]byte) string) []string {
	var out []string
	for k := range groups {
		buf := make([]byte, k+len(v)+groups)
		copy(buf[k:], v)
		first := (8*k + bits - 1) / bits
		last := (8*(k+len(v)))/bits - 1 // the last character ending at or before v's end
		if last < first {
			continue
		}
		for _, enc := range encs {
			out = append(out, enc(buf)[first:last+1])
		}
	}
	return out
}

// lowerHex returns a URL-encoded s with its %XX escapes in lower case.
func lowerHex(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			for j := i + 1; j <= i+2; j++ {
				if b[j] >= 'A' && b[j] <= 'F' {
					b[j] += 'a' - 'A'
				}
			}
		}
	}
	return string(b)
}

// skipTable finds the texts that may hold one of a set of patterns, all
// at least minLen bytes long, in the way of Wu and Manber's multi-pattern
// search: a window of width bytes slides over the text, and the last two
// bytes of the window say how far it may move on without passing the
// start of a pattern. Most texts hold none of a Scrubber's forms, and a
// strings.Replacer with many patterns looks at every byte; the table
// looks at about one byte in width/2 when the values are tokens of
// twenty bytes and more, so that a Scrubber costs about what a single-
// value strings.Replacer does. A text it passes is scrubbed by the
// Replacer, which decides what is replaced.
type skipTable struct {
	width    int // the length of the shortest pattern, at most 255
	patterns []string
	shift    [skipBuckets]uint8 // by the hash of two bytes
}

const skipBuckets = 1 << 12

func skipHash(a, b byte) int { return (int(a)<<4 ^ int(b)) & (skipBuckets - 1) }

func newSkipTable(patterns []string) *skipTable {
	t := &skipTable{width: 255, patterns: patterns}
	for _, p := range patterns {
		t.width = min(t.width, len(p))
	}
	for i := range t.shift {
		t.shift[i] = uint8(t.width - 1)
	}
	for _, p := range patterns {
		// The pair ending at q of the window's first width bytes: the
		// window may move width-1-q and no more.
		for q := 1; q < t.width; q++ {
			h := skipHash(p[q-1], p[q])
			t.shift[h] = min(t.shift[h], uint8(t.width-1-q))
		}
	}
	return t
}

// mayHold reports whether s may hold one of the patterns; false means it
// holds none.
func (t *skipTable) mayHold(s string) bool {
	if t.width < 2 {
		return true
	}
	for end := t.width - 1; end < len(s); {
		if sh := t.shift[skipHash(s[end-1], s[end])]; sh > 0 {
			end += int(sh)
			continue
		}
		start := end - t.width + 1
		for _, p := range t.patterns {
			if strings.HasPrefix(s[start:], p) {
				return true
			}
		}
		end++
	}
	return false
}
