package cue

import "github.com/voltmcp/voltmcp/redact"

// RedactURL returns raw with its password and the values of secret-named
// query and fragment parameters replaced by REDACTED; a URL that does not
// parse is replaced whole. A URL without a secret comes back unchanged.
// It is [redact.URL].
func RedactURL(raw string) string { return redact.URL(raw) }
