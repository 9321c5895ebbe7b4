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
