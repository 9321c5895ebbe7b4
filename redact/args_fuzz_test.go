package redact

import (
	"strings"
	"testing"
)

// FuzzArgsHideSecrets puts a random secret in each place an argument list
// holds a credential and checks that Args hides it and ArgSecrets finds
// it.
func FuzzArgsHideSecrets(f *testing.F) {
	f.Add("hunter2-secret")
	f.Add("aB3.x_~-9")
	f.Add("REDACTEDx")
	f.Fuzz(func(t *testing.T, secret string) {
		if len(secret) < MinValueLen || isPlaceholder(secret) || strings.Trim(secret, "-") == "" || secret[0] == '-' {
			return
		}
		for _, r := range secret {
			if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("_.~-", r)) {
				return
			}
		}
		cases := [][]string{
			{"--api-key", secret}, {"--password", secret}, {"--token=" + secret},
			{"https://api.example.com/v1?key=" + secret + "&page=2"}, {"https://bob:" + secret + "@api.example.com/"},
			{"--header", "Authorization: Bearer " + secret}, {"-e", "API_TOKEN=" + secret}, {"Bearer " + secret},
		}
		for _, args := range cases {
			structure := strings.ReplaceAll(strings.Join(args, " "), secret, "")
			if strings.Contains(structure+Marker+URLMarker, secret) {
				continue
			}
			out := strings.Join(Args(args), " ")
			if strings.Contains(out, secret) {
				t.Fatalf("Args(%q) = %q keeps the secret", args, out)
			}
			if !strings.Contains(strings.Join(ArgSecrets(args), " "), secret) {
				t.Fatalf("ArgSecrets(%q) = %q misses the secret", args, ArgSecrets(args))
			}
		}
	})
}
