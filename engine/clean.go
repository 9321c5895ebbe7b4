package engine

import "github.com/voltmcp/voltmcp/sanitize"

// cleanOutput removes from a server's output what a person reviewing a
// transcript would not see but a model would read, or what a terminal
// would act on: it is [sanitize.Output], the list every surface shares,
// which keeps the output's white space as it is (output is often code).
// It returns the text and how many characters or sequences it removed;
// text with nothing to remove is returned as is, without copying.
func cleanOutput(s string) (string, int) {
	out, r := sanitize.Output(s)
	return out, r.Removed()
}

// cleanText cleans a text field of a server's that reaches a person or a
// model outside its metadata (an error message, a stderr tail, a
// serverInfo field) and clips it to maxChars characters (0 for no limit).
func cleanText(s string, maxChars int) string {
	out, _ := sanitize.Text(s, maxChars)
	return out
}

// serverInfoMaxChars caps the short serverInfo fields a server reports of
// itself (name, version, protocol version); its title is capped like a
// tool's.
const serverInfoMaxChars = 128

// progressMaxChars caps a progress notification's message.
const progressMaxChars = 1024
