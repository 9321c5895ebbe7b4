package redact

import (
	"regexp"
	"testing"
)

// secretNameRE is the definition IsSecretName implements by hand.
var secretNameRE = regexp.MustCompile(`(?i)(token|secret|passw(or)?d|pwd|api[_-]?key|access[_-]?key|private[_-]?key|credential|auth|cookie|session|signature|(^|[_-])key$|^sig$)`)

func TestIsSecretNameMatchesItsDefinition(t *testing.T) {
	for _, n := range []string{"", "key", "KEY", "sig", "Sig", "signal", "api_key", "API-KEY", "apikey", "X-Api-Key", "monkey", "mon_key",
		"--token", "GITHUB_TOKEN", "Authorization", "passwd", "PASSWORD", "pwd", "db_pass", "Cookie", "session_id", "keyring",
		"AWS_ACCESS_KEY_ID", "private-key", "PrivateKey", "credentials", "x-signature", "--log-level", "--port"} {
		if got, want := IsSecretName(n), secretNameRE.MatchString(n); got != want {
			t.Errorf("IsSecretName(%q) = %v, want %v", n, got, want)
		}
	}
}

func FuzzIsSecretName(f *testing.F) {
	f.Add("api_key")
	f.Add("X-Auth")
	f.Fuzz(func(t *testing.T, n string) {
		for i := 0; i < len(n); i++ {
			if n[i] >= 0x80 {
				return // the regexp folds K (U+212A) to k and ſ to s; names are ASCII
			}
		}
		if got, want := IsSecretName(n), secretNameRE.MatchString(n); got != want {
			t.Fatalf("IsSecretName(%q) = %v, want %v", n, got, want)
		}
	})
}
