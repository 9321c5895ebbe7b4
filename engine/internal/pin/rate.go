// Package pin records the metadata of each tool the first time voltmcp
// sees it and rates every later change, so that a server cannot quietly
// turn a harmless tool into another one (a "rug pull"). A changed tool
// waits as a pending change, with its rating, until someone approves it;
// the pinned version stays in place meanwhile.
package pin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Meta is what a pin records of one tool: everything a diff shows.
type Meta struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// Risk is the risk class of the tool as the engine rated it: read,
	// write, destructive or unknown.
	Risk string `json:"risk,omitempty"`
}

// Severity rates a change, from none to escalation. The zero Severity is
// treated as SeverityNone.
type Severity string

// The severities, least first.
const (
	// SeverityNone: nothing a pin records changed.
	SeverityNone Severity = "none"
	// SeverityCosmetic: the title or description changed only in white
	// space or letter case.
	SeverityCosmetic Severity = "cosmetic"
	// SeverityDescription: the wording of the title or description
	// changed, or annotations other than the risk hints did.
	SeverityDescription Severity = "description"
	// SeveritySchemaCompatible: the input schema changed so that every
	// call that was valid still is: a new optional property, a looser
	// constraint, a changed description inside the schema.
	SeveritySchemaCompatible Severity = "schema-compatible"
	// SeveritySchemaBreaking: the input schema changed so that a call that
	// was valid may not be: a new required property, a property removed, a
	// type changed, an enum narrowed, a constraint tightened, or any
	// change the rating does not understand.
	SeveritySchemaBreaking Severity = "schema-breaking"
	// SeverityEscalation: the tool may now do more, asks the model to, or
	// may slip past a rule that held it: its risk class changed (up or
	// down), a risk hint (readOnlyHint, destructiveHint, idempotentHint,
	// openWorldHint) changed either way, its annotations became or stopped
	// being readable, or its text gained imperative phrases aimed at the
	// model, URLs or email addresses.
	SeverityEscalation Severity = "escalation"
)

// severities lists the severities in rank order.
var severities = [...]Severity{SeverityNone, SeverityCosmetic, SeverityDescription, SeveritySchemaCompatible, SeveritySchemaBreaking, SeverityEscalation}

// Rank orders severities: 0 for none (and the zero Severity and unknown
// values, which are none) up to 5 for escalation.
func (s Severity) Rank() int {
	if i := slices.Index(severities[:], s); i >= 0 {
		return i
	}
	return 0
}

// Change is the rating of a change from one Meta to another.
type Change struct {
	// Severity is the highest severity that applies.
	Severity Severity `json:"severity"`
	// Details says what changed, one finding a line, in words.
	Details []string `json:"details,omitempty"`
}

// add records a finding.
func (c *Change) add(s Severity, format string, args ...any) {
	if s.Rank() > c.Severity.Rank() {
		c.Severity = s
	}
	if len(c.Details) < maxDetails {
		c.Details = append(c.Details, fmt.Sprintf(format, args...))
	}
}

// maxDetails bounds Change.Details.
const maxDetails = 32

// riskRank orders risk classes. unknown ranks with destructive: the MCP
// specification's defaults for a tool that says nothing are
// destructiveHint true and readOnlyHint false, so a tool that stops
// saying what it does may do the worst; any other value is unknown.
func riskRank(risk string) int {
	switch risk {
	case "read":
		return 0
	case "write":
		return 1
	}
	return 2
}

// Rate rates the change from old to new, which are the same tool. Every
// finding is listed in Details; the highest severity wins. Rate reads
// schemas and annotations bounded as package bound leaves them; a value
// that is not JSON is compared as bytes.
func Rate(old, new Meta) Change {
	c := Change{Severity: SeverityNone}
	if old.Name != new.Name {
		c.add(SeveritySchemaBreaking, "name changed from %q to %q", old.Name, new.Name)
	}
	rateText(&c, "title", old.Title, new.Title)
	rateText(&c, "description", old.Description, new.Description)
	// Policies decide by the risk class, so any change of it may let a
	// call through that a rule held: a rise, a fall, or unknown for
	// destructive.
	switch o, n := orUnknown(old.Risk), orUnknown(new.Risk); {
	case o == n:
	case riskRank(n) > riskRank(o):
		c.add(SeverityEscalation, "risk rose from %s to %s", o, n)
	case riskRank(n) < riskRank(o):
		c.add(SeverityEscalation, "risk fell from %s to %s: rules that held the tool by its risk may no longer hold it", o, n)
	default:
		c.add(SeverityEscalation, "risk changed from %s to %s", o, n)
	}
	rateAnnotations(&c, old.Annotations, new.Annotations)
	rateSchema(&c, old.InputSchema, new.InputSchema)
	// Text hidden in the schema's descriptions reaches the model too.
	rateInjection(&c, "input schema", schemaText(old.InputSchema), schemaText(new.InputSchema))
	return c
}

// orUnknown returns risk, or "unknown" when it is empty.
func orUnknown(risk string) string {
	if risk == "" {
		return "unknown"
	}
	return risk
}

// rateText rates a change of a title or description.
func rateText(c *Change, what, old, new string) {
	if old == new {
		return
	}
	if fold(old) == fold(new) {
		c.add(SeverityCosmetic, "%s changed in white space or letter case only", what)
	} else {
		c.add(SeverityDescription, "%s reworded", what)
	}
	rateInjection(c, what, old, new)
}

// fold lowercases s and collapses its white space, for comparison.
func fold(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), unicode.IsSpace), " ")
}

// imperatives are phrases that address the model rather than describe a
// tool, lower case, with single spaces and straight apostrophes.
var imperatives = [...]string{
	"ignore previous", "ignore all previous", "ignore the previous", "ignore prior", "ignore the above",
	"ignore your", "ignore any", "disregard previous", "disregard all", "disregard the above", "disregard your",
	"forget previous", "forget all", "forget your", "new instructions", "system prompt",
	"you must", "you are required", "you should always", "must always", "always call", "always use",
	"always run", "always include", "always send", "always pass", "before using any other tool",
	"before calling any other tool", "instead of calling", "do not tell", "don't tell", "never tell",
	"do not mention", "don't mention", "never mention", "do not reveal", "don't reveal", "do not inform",
	"don't inform", "without telling", "without asking", "without informing", "without the user",
	"the user must not", "secretly", "<important>", "<system>", "</system>", "[system]", "[inst]",
	"id_rsa", ".ssh/", "~/.aws", ".env file", "private key", "api key", "password",
}

// linkRE finds URLs and email addresses.
var linkRE = regexp.MustCompile(`(?i)\b(?:https?|ftp|file|wss?|data|javascript|mailto):[^\s<>"'` + "`" + `)\]]+|\bwww\.[^\s<>"'` + "`" + `)\]]+|[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}`)

// rateInjection adds an escalation for each imperative phrase, URL or
// email address new has more of than old.
func rateInjection(c *Change, what, old, new string) {
	if old == new {
		return
	}
	o, n := normalizeForPhrases(old), normalizeForPhrases(new)
	for _, p := range imperatives {
		if strings.Count(n, p) > strings.Count(o, p) {
			c.add(SeverityEscalation, "%s gained text that addresses the model: %q", what, p)
		}
	}
	had := map[string]int{}
	for _, l := range linkRE.FindAllString(old, maxLinks) {
		had[strings.ToLower(l)]++
	}
	for _, l := range linkRE.FindAllString(new, maxLinks) {
		k := strings.ToLower(l)
		if had[k] > 0 {
			had[k]--
			continue
		}
		if len(l) > 80 {
			l = l[:80] + "…"
		}
		c.add(SeverityEscalation, "%s gained a link or address: %s", what, l)
	}
}

// maxLinks bounds the links read from one text.
const maxLinks = 64

// normalizeForPhrases lowercases s, straightens apostrophes and collapses
// white space.
func normalizeForPhrases(s string) string {
	s = strings.NewReplacer("’", "'", "‘", "'", "ʼ", "'").Replace(s)
	return fold(s)
}

// riskHints are the MCP tool annotations that bear on risk, with the
// value the MCP specification gives each when it is unset. A change of
// any of them may change how the tool is rated, or how a policy that
// reads the annotations decides, in either direction.
var riskHints = [...]struct {
	key   string
	unset bool
}{{"readOnlyHint", false}, {"destructiveHint", true}, {"idempotentHint", false}, {"openWorldHint", true}}

// rateAnnotations rates a change of annotations. A change of a risk hint
// is an escalation whichever way it goes: a hint that now says less
// (readOnlyHint true, destructiveHint false, openWorldHint false,
// idempotentHint true) is how a server would talk its way past a rule
// that held the tool, and one that says more may do more.
func rateAnnotations(c *Change, old, new json.RawMessage) {
	if bytes.Equal(old, new) {
		return
	}
	var o, n map[string]json.RawMessage
	oErr, nErr := unmarshalObject(old, &o), unmarshalObject(new, &n)
	switch {
	case nErr != nil && oErr != nil:
		c.add(SeverityEscalation, "annotations changed and are not readable, so the tool's risk is unknown")
		return
	case nErr != nil:
		c.add(SeverityEscalation, "annotations are no longer readable, so the tool's risk is unknown")
		return
	case oErr != nil:
		c.add(SeverityEscalation, "annotations became readable: the hints they give were not pinned")
		return
	}
	found := false
	for _, h := range riskHints {
		ov, nv := hintValue(o[h.key]), hintValue(n[h.key])
		if ov == nv {
			continue
		}
		found = true
		switch ob, nb := hintBool(ov, h.unset), hintBool(nv, h.unset); {
		case ob == nb:
			c.add(SeverityEscalation, "%s changed from %s to %s (the same by the specification's default, not to every reader)", h.key, ov, nv)
		case nb == (h.key == "readOnlyHint" || h.key == "idempotentHint"):
			c.add(SeverityEscalation, "%s now claims less risk (%s to %s): the pinned rating stays until the change is approved", h.key, ov, nv)
		default:
			c.add(SeverityEscalation, "%s now claims more risk (%s to %s)", h.key, ov, nv)
		}
	}
	if !found && !jsonEqual(old, new) {
		c.add(SeverityDescription, "annotations changed")
	}
	var ot, nt string
	_ = json.Unmarshal(o["title"], &ot)
	_ = json.Unmarshal(n["title"], &nt)
	rateInjection(c, "annotations title", ot, nt)
}

// hintValue shows a hint's raw value: "unset", true, false, or the JSON
// the server sent in its place, cut to 40 bytes.
func hintValue(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "unset"
	}
	v := string(canonical(raw))
	if len(v) > 40 {
		v = strings.ToValidUTF8(v[:40], "") + "…"
	}
	return v
}

// hintBool is what a hint value means: its boolean, or unset (the
// specification's default) for anything else, as a client reads it.
func hintBool(v string, unset bool) bool {
	switch v {
	case "true":
		return true
	case "false":
		return false
	}
	return unset
}

// unmarshalObject decodes a JSON object into v; empty or null raw is an
// empty object.
func unmarshalObject(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	return json.Unmarshal(raw, v)
}

// jsonEqual reports whether a and b are the same JSON value, keys in any
// order; values that are not JSON compare as bytes.
func jsonEqual(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	return bytes.Equal(canonical(a), canonical(b))
}

// canonical re-encodes raw with sorted keys, or returns it as is when it
// is not JSON.
func canonical(raw json.RawMessage) []byte {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return raw
	}
	out, _ := json.Marshal(v)
	return out
}

// proseKeys are schema keywords that only describe.
var proseKeys = map[string]bool{"description": true, "title": true, "$comment": true, "examples": true, "default": true, "deprecated": true}

// maxRateDepth bounds the recursion of schema rating; below it, any
// difference is breaking.
const maxRateDepth = 64

// rateSchema rates a change of input schema.
func rateSchema(c *Change, old, new json.RawMessage) {
	if jsonEqual(old, new) {
		return
	}
	var o, n any
	if err := unmarshalObject(old, &o); err != nil {
		c.add(SeveritySchemaBreaking, "input schema changed (the old one is not JSON)")
		return
	}
	if err := unmarshalObject(new, &n); err != nil {
		c.add(SeveritySchemaBreaking, "input schema changed (the new one is not JSON)")
		return
	}
	om, _ := o.(map[string]any)
	nm, _ := n.(map[string]any)
	if om == nil {
		om = map[string]any{}
	}
	if nm == nil {
		nm = map[string]any{}
	}
	compareSchema(c, "input", om, nm, 0)
}

// compareSchema compares two schema objects at path.
func compareSchema(c *Change, path string, o, n map[string]any, depth int) {
	if depth > maxRateDepth {
		if !valueEqual(o, n) {
			c.add(SeveritySchemaBreaking, "%s: changed too deep to rate", path)
		}
		return
	}
	keys := slices.Sorted(maps.Keys(o))
	for k := range n {
		if _, ok := o[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		ov, oin := o[k]
		nv, nin := n[k]
		if oin && nin && valueEqual(ov, nv) {
			continue
		}
		switch {
		case proseKeys[k]:
			c.add(SeveritySchemaCompatible, "%s: %s changed", path, k)
		case k == "type":
			ot, nt := typeSet(ov, oin), typeSet(nv, nin)
			if isSubset(ot, nt) {
				c.add(SeveritySchemaCompatible, "%s: type widened from %s to %s", path, typeString(ot), typeString(nt))
			} else {
				c.add(SeveritySchemaBreaking, "%s: type changed from %s to %s", path, typeString(ot), typeString(nt))
			}
		case k == "properties":
			op, _ := ov.(map[string]any)
			np, _ := nv.(map[string]any)
			req := stringSet(n["required"])
			for _, name := range slices.Sorted(maps.Keys(op)) {
				if _, ok := np[name]; !ok {
					c.add(SeveritySchemaBreaking, "%s: property %q removed", path, name)
				}
			}
			for _, name := range slices.Sorted(maps.Keys(np)) {
				pv, ok := op[name]
				if !ok {
					if req[name] {
						c.add(SeveritySchemaBreaking, "%s: new required property %q", path, name)
					} else {
						c.add(SeveritySchemaCompatible, "%s: new optional property %q", path, name)
					}
					continue
				}
				compareSub(c, path+"."+name, pv, np[name], depth)
			}
		case k == "required":
			or, nr := stringSet(ov), stringSet(nv)
			oldProps, _ := o["properties"].(map[string]any)
			newProps, _ := n["properties"].(map[string]any)
			for _, name := range slices.Sorted(maps.Keys(nr)) {
				if or[name] {
					continue
				}
				_, existed := oldProps[name]
				_, defined := newProps[name]
				if existed || !defined { // a new property's requirement is rated with it
					c.add(SeveritySchemaBreaking, "%s: property %q became required", path, name)
				}
			}
			for _, name := range slices.Sorted(maps.Keys(or)) {
				if !nr[name] {
					c.add(SeveritySchemaCompatible, "%s: property %q is no longer required", path, name)
				}
			}
		case k == "enum":
			oe, _ := ov.([]any)
			ne, _ := nv.([]any)
			switch {
			case !nin:
				c.add(SeveritySchemaCompatible, "%s: enum removed", path)
			case !oin || !valueSubset(oe, ne):
				c.add(SeveritySchemaBreaking, "%s: enum narrowed", path)
			default:
				c.add(SeveritySchemaCompatible, "%s: enum widened", path)
			}
		case k == "items" || k == "additionalProperties" && isObject(ov) && isObject(nv):
			compareSub(c, path+"."+k, ov, nv, depth)
		case k == "additionalProperties":
			switch {
			case isFalse(nv):
				c.add(SeveritySchemaBreaking, "%s: additional properties no longer allowed", path)
			case !nin || nv == true:
				c.add(SeveritySchemaCompatible, "%s: additional properties now allowed", path)
			default:
				c.add(SeveritySchemaBreaking, "%s: additionalProperties changed", path)
			}
		case isMinKey(k) || isMaxKey(k):
			of, oOK := ov.(float64)
			nf, nOK := nv.(float64)
			switch {
			case !nin:
				c.add(SeveritySchemaCompatible, "%s: %s removed", path, k)
			case !oin || !oOK || !nOK:
				c.add(SeveritySchemaBreaking, "%s: %s added or changed", path, k)
			case isMinKey(k) == (nf > of):
				c.add(SeveritySchemaBreaking, "%s: %s tightened from %v to %v", path, k, of, nf)
			default:
				c.add(SeveritySchemaCompatible, "%s: %s loosened from %v to %v", path, k, of, nf)
			}
		case (k == "pattern" || k == "format" || k == "const") && !nin:
			c.add(SeveritySchemaCompatible, "%s: %s removed", path, k)
		default:
			c.add(SeveritySchemaBreaking, "%s: %s changed", path, k)
		}
	}
}

// compareSub compares two subschemas.
func compareSub(c *Change, path string, o, n any, depth int) {
	om, ok1 := o.(map[string]any)
	nm, ok2 := n.(map[string]any)
	if !ok1 || !ok2 {
		if !valueEqual(o, n) {
			c.add(SeveritySchemaBreaking, "%s: changed", path)
		}
		return
	}
	compareSchema(c, path, om, nm, depth+1)
}

func isObject(v any) bool { _, ok := v.(map[string]any); return ok }

func isFalse(v any) bool { b, ok := v.(bool); return ok && !b }

func isMinKey(k string) bool {
	switch k {
	case "minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains":
		return true
	}
	return false
}

func isMaxKey(k string) bool {
	switch k {
	case "maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains":
		return true
	}
	return false
}

// typeSet returns the types a "type" value allows; an absent type allows
// all.
func typeSet(v any, present bool) map[string]bool {
	if !present {
		return map[string]bool{"*": true}
	}
	set := map[string]bool{}
	switch t := v.(type) {
	case string:
		set[t] = true
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				set[s] = true
			}
		}
	}
	if set["number"] {
		set["integer"] = true
	}
	return set
}

// isSubset reports whether every type of a is in b.
func isSubset(a, b map[string]bool) bool {
	if b["*"] {
		return true
	}
	for t := range a {
		if !b[t] {
			return false
		}
	}
	return true
}

// typeString shows a type set.
func typeString(s map[string]bool) string {
	if s["*"] {
		return "any"
	}
	if s["number"] {
		delete(s, "integer")
	}
	return strings.Join(slices.Sorted(maps.Keys(s)), "|")
}

// stringSet returns the strings of a JSON array.
func stringSet(v any) map[string]bool {
	set := map[string]bool{}
	if a, ok := v.([]any); ok {
		for _, x := range a {
			if s, ok := x.(string); ok {
				set[s] = true
			}
		}
	}
	return set
}

// valueEqual compares decoded JSON values.
func valueEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// valueSubset reports whether every value of a is in b.
func valueSubset(a, b []any) bool {
	in := map[string]bool{}
	for _, v := range b {
		x, _ := json.Marshal(v)
		in[string(x)] = true
	}
	for _, v := range a {
		x, _ := json.Marshal(v)
		if !in[string(x)] {
			return false
		}
	}
	return true
}

// schemaText returns the prose of a schema (descriptions, titles,
// comments), one a line, for the injection check.
func schemaText(raw json.RawMessage) string {
	var b strings.Builder
	dec := json.NewDecoder(bytes.NewReader(raw))
	prevKey, inObj, wantKey := "", []bool{}, false
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				inObj, wantKey = append(inObj, true), true
			case '[':
				inObj, wantKey = append(inObj, false), false
			default:
				inObj = inObj[:len(inObj)-1]
				wantKey = len(inObj) > 0 && inObj[len(inObj)-1]
			}
			continue
		case string:
			if wantKey {
				prevKey, wantKey = v, false
				continue
			}
			if prevKey == "description" || prevKey == "title" || prevKey == "$comment" {
				b.WriteString(v)
				b.WriteByte('\n')
			}
		}
		wantKey = len(inObj) > 0 && inObj[len(inObj)-1]
	}
	return b.String()
}
