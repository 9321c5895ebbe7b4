package search

import (
	"unicode"
	"unicode/utf8"
)

// tokenizer turns text into index terms. A word is a run of letters and
// digits, and the underscores and hyphens inside it; in a name, any
// punctuation inside it. A word's parts are split at those joiners, at
// lower-to-upper case changes (getUser), before the last capital of an
// acronym (HTTPServer) and between letters and digits (v2). Each part is
// lowercased, folded, checked against the stopwords and stemmed; a word
// of several parts also gives its parts joined (the whole term).
type tokenizer struct {
	p       *rankParams
	word    []byte // the current word, lowercased, without joiners
	cuts    []int  // where each part after the first starts in word
	acro    []bool // per cut: made before the last capital of an acronym
	upper   []bool // per byte of word: was the letter upper case
	stemBuf []byte
}

// words emits the words of s: each part of a word, lowercased and folded
// but not normalized (part is true; see norm), and the whole term of a
// word of several parts. In a name, every character other than a letter,
// a digit or white space joins, so a tool name is one word.
func (t *tokenizer) words(s string, name bool, emit func(w []byte, part bool)) {
	if len(s) > maxFieldText {
		s = s[:maxFieldText]
	}
	t.word, t.cuts, t.acro, t.upper = t.word[:0], t.cuts[:0], t.acro[:0], t.upper[:0]
	joined := false // a joiner was seen since the last letter or digit
	for i := 0; i < len(s); {
		c := s[i]
		// The common case, a word all in lowercase letters, perhaps
		// capitalized, or all in digits, that ends at white space or
		// punctuation, skips letter: it is one part.
		if len(t.word) == 0 && (isLowerAlnum(c) || 'A' <= c && c <= 'Z') {
			j, digits, mixed := i+1, isDigit(c), false
			for j < len(s) && isLowerAlnum(s[j]) {
				mixed = mixed || isDigit(s[j]) != digits
				j++
			}
			if !mixed && (j == len(s) || s[j] < utf8.RuneSelf && !('A' <= s[j] && s[j] <= 'Z') &&
				s[j] != '_' && s[j] != '-' && !(name && s[j] > ' ')) {
				t.word = append(t.word, s[i:min(j, i+maxTermLen)]...)
				if 'A' <= c && c <= 'Z' {
					t.word[0] = c + 'a' - 'A'
				}
				emit(t.word, true)
				t.word = t.word[:0]
				i = j
				continue
			}
		}
		var r rune
		size := 1
		if c < utf8.RuneSelf {
			r = rune(c)
		} else {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		i += size
		switch {
		case c < utf8.RuneSelf && ('a' <= c && c <= 'z' || '0' <= c && c <= '9'):
			t.letter(c, false, joined)
			joined = false
		case 'A' <= c && c <= 'Z':
			t.letter(c+'a'-'A', true, joined)
			joined = false
		case c < utf8.RuneSelf:
			if len(t.word) > 0 && (c == '_' || c == '-' || name && c > ' ') {
				joined = true
			} else {
				t.flush(emit)
				joined = false
			}
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			upper := unicode.IsUpper(r)
			lower := unicode.ToLower(r)
			if t.p.fold {
				if f := foldLatin(lower); f != "" {
					for j := 0; j < len(f); j++ {
						t.letter(f[j], upper && j == 0, joined && j == 0)
					}
					joined = false
					continue
				}
			}
			var buf [utf8.UTFMax]byte
			n := utf8.EncodeRune(buf[:], lower)
			for j := 0; j < n; j++ {
				t.letter(buf[j], upper && j == 0, joined && j == 0)
			}
			joined = false
		default:
			t.flush(emit)
			joined = false
		}
	}
	t.flush(emit)
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// letter appends one byte of a word; joined says a joiner came before it.
func (t *tokenizer) letter(c byte, upper, joined bool) {
	n := len(t.word)
	if n >= maxTermLen {
		return
	}
	if n > 0 {
		prev := t.word[n-1]
		digit, prevDigit := '0' <= c && c <= '9', '0' <= prev && prev <= '9'
		switch {
		case joined, digit != prevDigit:
			t.cut(n, false)
		case upper && !t.upper[n-1] && !prevDigit:
			t.cut(n, false) // getUser
		case !upper && c >= 'a' && c <= 'z' && t.upper[n-1] && n >= 2 && t.upper[n-2]:
			t.cut(n-1, true) // HTTPServer: the S starts a part
		}
	}
	t.word = append(t.word, c)
	t.upper = append(t.upper, upper)
}

func (t *tokenizer) cut(at int, acro bool) {
	if k := len(t.cuts); k > 0 && t.cuts[k-1] >= at {
		return
	}
	if at > 0 {
		t.cuts = append(t.cuts, at)
		t.acro = append(t.acro, acro)
	}
}

// flush emits the current word's terms and starts a new word.
func (t *tokenizer) flush(emit func(w []byte, part bool)) {
	if len(t.word) == 0 {
		return
	}
	// An acronym's plural (APIs, URLs, IDs) is the acronym, not a cut
	// before its last capital: drop the cut and the s.
	// Bytes are only ever dropped, so word, written over t.word, never
	// overtakes what is still to read; indices are those of t.word as read.
	word, cuts, from := t.word[:0], t.cuts[:0], 0
	for k, at := range t.cuts {
		end := len(t.upper)
		if k+1 < len(t.cuts) {
			end = t.cuts[k+1]
		}
		if t.acro[k] && end-at == 2 && t.word[at+1] == 's' {
			word = append(word, t.word[from:at+1]...)
			from = at + 2
			continue
		}
		cuts = append(cuts, at-(from-len(word)))
	}
	t.word, t.cuts = append(word, t.word[from:]...), cuts
	from = 0
	for k := 0; k <= len(t.cuts); k++ {
		to := len(t.word)
		if k < len(t.cuts) {
			to = t.cuts[k]
		}
		emit(t.word[from:to], true)
		from = to
	}
	if len(t.cuts) > 0 && t.p.whole {
		emit(t.word, false)
	}
	t.word, t.cuts, t.acro, t.upper = t.word[:0], t.cuts[:0], t.acro[:0], t.upper[:0]
}

// norm returns the term of a word's part, which may be in t's buffer; ok
// is false for a stopword.
func (t *tokenizer) norm(w []byte) (term []byte, ok bool) {
	if t.p.stopwords && isStopword(w) {
		return nil, false
	}
	if t.p.stem {
		// Stemming shortens in place, and may put a y where "ies" was:
		// work on a copy so the word stays intact.
		t.stemBuf = append(t.stemBuf[:0], w...)
		w = stem(t.stemBuf)
	}
	return w, true
}

// terms emits the terms of s: its words' parts normalized, and their
// whole terms.
func (t *tokenizer) terms(s string, name bool, emit func([]byte)) {
	t.words(s, name, func(w []byte, part bool) {
		if part {
			var ok bool
			if w, ok = t.norm(w); !ok {
				return
			}
		}
		emit(w)
	})
}

// isStopword reports whether w is one of a few English function words
// that say nothing of what a tool does. Words that do (get, list, new,
// all, not) are not among them.
func isStopword(w []byte) bool {
	if len(w) > 5 {
		return false
	}
	switch string(w) {
	case "a", "an", "and", "are", "as", "at", "be", "by", "can", "do",
		"does", "for", "from", "has", "have", "how", "i", "if", "in", "into",
		"is", "it", "its", "me", "my", "of", "on", "or", "our", "so", "such",
		"that", "the", "their", "them", "then", "there", "these", "this",
		"those", "to", "was", "we", "were", "what", "when", "where", "which",
		"who", "will", "with", "you", "your":
		return true
	}
	return false
}

// stem strips an English inflection from a lowercase ASCII word, in
// place: plural -s and -ies, then -ing, -ed or -ied, then a doubled final
// consonant and a final -e, so create, creates, created and creating all
// become creat. It is deliberately light: it only has to map a query's
// word and a description's word to the same term, never to a real root.
func stem(w []byte) []byte {
	for _, c := range w {
		if c < 'a' || c > 'z' {
			return w
		}
	}
	n := len(w)
	if n < 3 {
		return w
	}
	// Plurals.
	switch {
	case n > 4 && hasSuffix(w, "ies"):
		w = append(w[:n-3], 'y')
	case n == 3:
		if w[2] == 's' && vowel(w[0]) && !vowel(w[1]) && w[1] != 's' {
			w = w[:2] // ids, urls... but not gas, yes, bus
		}
		return w
	case w[n-1] == 's' && !hasSuffix(w, "ss") && !hasSuffix(w, "us") && !hasSuffix(w, "is"):
		w = w[:n-1]
	}
	// Verb endings, when enough of a word with a vowel is left.
	n = len(w)
	stripped := false
	switch {
	case n > 4 && hasSuffix(w, "ied"):
		w = append(w[:n-3], 'y')
	case n > 5 && hasSuffix(w, "ing") && hasVowel(w[:n-3]):
		w, stripped = w[:n-3], true
	case n > 4 && hasSuffix(w, "ed") && !hasSuffix(w, "eed") && hasVowel(w[:n-2]):
		w, stripped = w[:n-2], true
	}
	n = len(w)
	if stripped && n > 3 && w[n-1] == w[n-2] && !vowel(w[n-1]) && w[n-1] != 'l' && w[n-1] != 's' && w[n-1] != 'z' {
		w = w[:n-1] // running, stopped
	}
	if n = len(w); n > 3 && w[n-1] == 'e' {
		w = w[:n-1]
	}
	return w
}

func hasSuffix(w []byte, s string) bool {
	return len(w) >= len(s) && string(w[len(w)-len(s):]) == s
}

func vowel(c byte) bool {
	return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' || c == 'y'
}

func hasVowel(w []byte) bool {
	for _, c := range w {
		if vowel(c) {
			return true
		}
	}
	return false
}

// foldLatin returns the ASCII spelling of a lowercase accented Latin
// letter, or "" when there is no simple one.
func foldLatin(r rune) string {
	if r >= 0xe0 && r <= 0xff {
		return latin1[r-0xe0]
	}
	switch r {
	case 'ā', 'ă', 'ą':
		return "a"
	case 'ć', 'ĉ', 'ċ', 'č':
		return "c"
	case 'ď', 'đ':
		return "d"
	case 'ē', 'ĕ', 'ė', 'ę', 'ě':
		return "e"
	case 'ĝ', 'ğ', 'ġ', 'ģ':
		return "g"
	case 'ī', 'ĭ', 'į', 'ı':
		return "i"
	case 'ł', 'ľ', 'ĺ', 'ļ':
		return "l"
	case 'ń', 'ň', 'ņ':
		return "n"
	case 'ō', 'ŏ', 'ő':
		return "o"
	case 'œ':
		return "oe"
	case 'ŕ', 'ř':
		return "r"
	case 'ś', 'ŝ', 'ş', 'š':
		return "s"
	case 'ţ', 'ť':
		return "t"
	case 'ū', 'ŭ', 'ů', 'ű', 'ų':
		return "u"
	case 'ź', 'ż', 'ž':
		return "z"
	}
	return ""
}

// latin1 folds U+00E0 to U+00FF (the lowercase half of Latin-1).
var latin1 = [32]string{
	"a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i",
	"d", "n", "o", "o", "o", "o", "o", "", "o", "u", "u", "u", "u", "y", "th", "y",
}
