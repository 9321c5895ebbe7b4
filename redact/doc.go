// Package redact holds what voltmcp knows about secrets, for every surface
// that prints or records something a secret could be in.
//
// Its first half judges config: which names (env variables, headers,
// flags, query parameters) carry credentials, which literal values look
// like one, and where a secret sits in a URL or an argument list. Lint asks
// it whether a value is a literal secret ([IsLiteralSecret], [ArgSecret],
// [URLHasSecret]); config display, the audit log and status replace what
// it finds ([Value], [Args], [URL]).
//
// Its second half removes known values from text: a [Scrubber] is built
// once from the secret values a server was given (env entries, expanded
// arguments, tokens) with their encoded forms precomputed ([Forms]), so
// that scrubbing an error or a stderr tail costs one pass over the text
// however many values there are.
//
// The package uses the standard library only, so that every part of
// voltmcp can share it.
package redact
