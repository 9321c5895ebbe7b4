package main

import "github.com/voltmcp/voltmcp/sanitize"

// clean makes text that came from a server or an untrusted file (an error
// message, a tool's description, a record of the audit log, a project's
// config) safe to print on one line of a terminal: package sanitize
// removes escape sequences, controls and invisible characters, and line
// breaks become spaces.
func clean(s string) string { return sanitize.Display(s) }

// cleanBlock is clean for text printed as a block of lines, such as a
// tool's output: its line breaks and indentation are kept.
func cleanBlock(s string) string {
	out, _ := sanitize.Output(s)
	return out
}
