package redact_test

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/redact"
)

// FuzzScrubNoSecretSurvives embeds a random secret in random text, as
// written, URL-encoded, JSON-escaped, and base64-, base32- or
// hex-encoded inside a longer byte string, and checks that no form of it survives in the text the scrubber kept
// (each stretch between two markers).
func FuzzScrubNoSecretSurvives(f *testing.F) {
	f.Add("hunter2-secret", "before ", " after", uint8(0))
	f.Add("p@ss w/rd&=?", "user:", "", uint8(1))
	f.Add("aaaaaaa", "aaa", "aaaa", uint8(2))
	f.Add("ZmFrZS1zZWNyZXQ=", "x", "y", uint8(3))
	f.Add("tok\"en<&>\n", "{", "}", uint8(4))
	f.Add("hunter2-secret", "a", "bc", uint8(5))
	f.Add("hunter2-secret", "abc", "", uint8(6))
	f.Add("hunter2-secret", "ab", "", uint8(7))
	f.Fuzz(func(t *testing.T, secret, pre, post string, mode uint8) {
		const marker = "[redacted]"
		if len(secret) < redact.MinValueLen || strings.ContainsAny(secret, "[]") {
			return // a secret made of the marker's characters can be rebuilt from it
		}
		var text string
		switch mode % 8 {
		case 0:
			text = pre + secret + post
		case 1:
			text = pre + url.QueryEscape(secret) + post
		case 2:
			text = pre + base64.StdEncoding.EncodeToString([]byte(pre+secret+post)) + post
		case 3:
			text = pre + base64.RawURLEncoding.EncodeToString([]byte(pre+secret+post)) + post
		case 4:
			b, _ := json.Marshal(pre + secret + post)
			text = string(b)
		case 5:
			text = pre + hex.EncodeToString([]byte(pre+secret+post)) + post
		case 6:
			text = pre + strings.ToUpper(hex.EncodeToString([]byte(pre+secret+post))) + post
		case 7:
			text = pre + base32.StdEncoding.EncodeToString([]byte(pre+secret+post)) + post
		}
		s := redact.NewScrubber(marker, secret)
		out := s.Text(text)
		for _, part := range strings.Split(out, marker) {
			for _, form := range redact.Forms(secret) {
				if strings.Contains(part, form) {
					t.Fatalf("form %q of %q survives in %q (from %q)", form, secret, out, text)
				}
			}
		}
		if s.Text(out) != out && !strings.Contains(marker, secret) {
			// Scrubbing again may only find what a replacement exposed.
			for _, part := range strings.Split(s.Text(out), marker) {
				if strings.Contains(part, secret) {
					t.Fatalf("second pass still finds %q", secret)
				}
			}
		}
	})
}
