//go:build wasip1

package main

import "strings"

// Verb lists. A tool whose name or title holds a destructive verb anywhere
// is destructive whatever else it says; otherwise its first read or write
// verb decides.
var (
	destructiveVerbs = []string{"delete", "del", "drop", "remove", "rm", "destroy", "force", "kill",
		"purge", "wipe", "erase", "truncate", "terminate", "revoke", "reset", "overwrite",
		"uninstall", "unlink", "exec", "execute", "eval"}
	writeVerbs = []string{"create", "update", "write", "send", "post", "set", "move", "rename",
		"add", "insert", "put", "patch", "upload", "edit", "modify", "append", "commit", "push",
		"merge", "publish", "save", "replace", "assign", "invite", "approve", "close",
		"enable", "disable", "start", "stop", "restart", "deploy", "install", "mv", "cp", "copy"}
	readVerbs = []string{"get", "list", "search", "read", "find", "describe", "fetch", "show",
		"view", "query", "lookup", "inspect", "count", "ls", "cat", "stat", "status"}
	// dangerFlags are schema properties that only a dangerous tool needs.
	dangerFlags = []string{"force", "confirm", "confirmed", "confirmation"}
)

// classify rates a tool from what the server shows of it: its name,
// title, input schema and description, then its annotations as evidence
// (see decide). It never guesses read for a tool it knows nothing about.
func classify(in []byte) []byte {
	risk, reason := decide(in)
	b := append([]byte(`{"risk":`), appendString(nil, risk)...)
	b = append(b, `,"reason":`...)
	b = appendString(b, reason)
	return append(b, '}')
}

// riskRank orders the known risks; unknown is not ranked.
func riskRank(risk string) int {
	switch risk {
	case "read":
		return 0
	case "write":
		return 1
	}
	return 2
}

// decide rates a tool. The name, title, schema and description give the
// heuristic rating; the annotations (readOnlyHint, destructiveHint) are
// the server's claim about itself and weigh as follows:
//
//   - A claim that raises the risk counts always: a server that says its
//     tool destroys is believed.
//   - Untrusted (the default), a claim never lowers it: the rating stays,
//     and its reason says what the server claimed.
//   - Trusted (trust_tool_hints, which the server's config sets), a claim
//     decides, except that it never lowers a destructive rating: a tool
//     named delete_all_records is destructive whatever it claims.
func decide(in []byte) (risk, reason string) {
	v, err := parse(in)
	if err != nil || v.k != kObj {
		return "unknown", "input is not a JSON object"
	}
	trust := v.get("trust_tool_hints")
	trusted := trust != nil && trust.k == kBool && trust.b
	hint, hintWhy := fromAnnotations(v.get("annotations"))
	risk, reason = heuristic(v)
	switch {
	case hint == "":
		if risk == "unknown" {
			if trusted {
				return risk, "no evidence in annotations, name, title, schema or description"
			}
			return risk, "no evidence in name, title, schema or description; tool hints not trusted"
		}
		return risk, reason
	case hint == risk:
		return risk, reason + "; " + hintWhy + " agrees"
	case risk == "destructive":
		return risk, reason + "; the server's " + hintWhy + " does not lower it"
	case hint == "destructive", risk != "unknown" && riskRank(hint) > riskRank(risk):
		return hint, hintWhy + " (the server says so; " + reason + ")"
	case trusted:
		if risk == "unknown" {
			return hint, hintWhy + " (tool hints trusted)"
		}
		return hint, hintWhy + " (tool hints trusted; " + reason + ")"
	case risk == "unknown":
		return risk, "no evidence in name, title, schema or description; the server claims " + hint + " (" + hintWhy + "), but its tool hints are not trusted"
	}
	return risk, reason + "; the server claims " + hint + " (" + hintWhy + "), but its tool hints are not trusted"
}

// heuristic rates a tool from its name, title, input schema and
// description alone, or unknown.
func heuristic(v *value) (risk, reason string) {
	name := v.get("tool").str()
	words := append(splitWords(name), splitWords(v.get("title").str())...)
	if w, verb := findVerb(words, destructiveVerbs); w != "" {
		return "destructive", "name has destructive verb " + quote(verb)
	}
	if f := dangerFlag(v.get("input_schema")); f != "" {
		return "destructive", "input schema has a " + quote(f) + " property"
	}
	// The first read or write verb is the tool's verb: list_posts reads,
	// update_post writes.
	for _, w := range words {
		if _, verb := findVerb([]string{w}, writeVerbs); verb != "" {
			return "write", "name has write verb " + quote(verb)
		}
		if _, verb := findVerb([]string{w}, readVerbs); verb != "" {
			return "read", "name has read verb " + quote(verb)
		}
	}
	if first := splitWords(firstWord(v.get("description").str())); len(first) == 1 {
		for _, l := range []struct {
			risk  string
			verbs []string
		}{{"destructive", destructiveVerbs}, {"write", writeVerbs}, {"read", readVerbs}} {
			if w, verb := findVerb(first, l.verbs); w != "" {
				return l.risk, "description starts with " + l.risk + " verb " + quote(verb)
			}
		}
	}
	return "unknown", ""
}

// fromAnnotations reads readOnlyHint and destructiveHint as the MCP spec
// defines them: destructiveHint defaults to true for a tool that is not
// read-only.
func fromAnnotations(a *value) (risk, reason string) {
	if a == nil || a.k != kObj {
		return "", ""
	}
	ro, dest := boolHint(a, "readOnlyHint"), boolHint(a, "destructiveHint")
	switch {
	case ro == 1:
		return "read", "annotation readOnlyHint=true"
	case dest == 1:
		return "destructive", "annotation destructiveHint=true"
	case ro == 0 && dest == -1:
		return "destructive", "annotation readOnlyHint=false and destructiveHint unset (defaults to true)"
	case ro == 0 && dest == 0:
		return "write", "annotations readOnlyHint=false, destructiveHint=false"
	case dest == 0:
		return "write", "annotation destructiveHint=false"
	}
	return "", ""
}

// boolHint is 1 for true, 0 for false and -1 when unset or not a bool.
func boolHint(a *value, key string) int {
	v := a.get(key)
	switch {
	case v == nil || v.k != kBool:
		return -1
	case v.b:
		return 1
	}
	return 0
}

// dangerFlag returns the first danger flag among the schema's top-level
// properties.
func dangerFlag(schema *value) string {
	props := schema.get("properties")
	if props == nil || props.k != kObj {
		return ""
	}
	for _, k := range props.keys {
		lk := strings.ToLower(k)
		for _, f := range dangerFlags {
			if lk == f {
				return k
			}
		}
	}
	return ""
}

// splitWords splits an identifier or phrase into lower-case words at
// separators and camelCase humps: "deleteRepo_v2" is delete, repo, v2.
func splitWords(s string) []string {
	var words []string
	var cur []byte
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			// A hump starts a word unless it continues an acronym.
			if len(cur) > 0 && !(i > 0 && s[i-1] >= 'A' && s[i-1] <= 'Z' && (i+1 >= len(s) || !(s[i+1] >= 'a' && s[i+1] <= 'z'))) {
				flush()
			}
			cur = append(cur, c)
		case (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'):
			cur = append(cur, c)
		default:
			flush()
		}
	}
	flush()
	return words
}

// findVerb returns the first word that is a form of one of verbs, and
// that verb.
func findVerb(words, verbs []string) (word, verb string) {
	for _, w := range words {
		for _, v := range verbs {
			if isForm(w, v) {
				return w, v
			}
		}
	}
	return "", ""
}

// isForm reports whether w is verb or a regular inflection of it.
func isForm(w, verb string) bool {
	if !strings.HasPrefix(w, verb) {
		if stem := strings.TrimSuffix(verb, "e"); stem != verb && len(verb) > 3 {
			return w == stem+"ing"
		}
		return false
	}
	switch w[len(verb):] {
	case "", "s", "es", "d", "ed", "ing":
		return true
	}
	// Doubled final consonant: set -> setting, drop -> dropped.
	if n := len(verb); len(w) > n && w[n] == verb[n-1] {
		switch w[n+1:] {
		case "ed", "ing":
			return true
		}
	}
	return false
}

func firstWord(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, " \t\n.,:;("); i >= 0 {
		return s[:i]
	}
	return s
}

func quote(s string) string { return `"` + s + `"` }
