package policies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/voltmcp/voltmcp/redact"
)

// Replacement is the text that stands in for every redacted secret.
const Replacement = "[REDACTED]"

// MinSecretLen is the shortest env var value redacted by value. Shorter
// values ("1", "true", "dev") would redact ordinary text everywhere; the
// key and value patterns still apply to them. It is [redact.MinValueLen].
const MinSecretLen = redact.MinValueLen

// RedactInput says which env vars hold secrets and how to read them.
type RedactInput struct {
	// EnvNames are the env var names the config mentions (env entries and
	// env allowlists); the policy decides which of them are secret.
	EnvNames []string
	// LookupEnv reads an env var. Nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Values are secret values the caller knows of apart from the
	// environment, such as literal credentials a config holds; they are
	// removed in every encoded form, whatever the decision says.
	Values []string
}

// RedactSpec is the voltmcp.redact decision: what is secret.
type RedactSpec struct {
	// Keys are regular expressions for key names (case-insensitive,
	// matched anywhere in the name) whose values are secret.
	Keys []string `json:"keys"`
	// Patterns are regular expressions for secret values. When a pattern
	// has a group named "secret", only that group is replaced.
	Patterns []string `json:"patterns"`
	// EnvNames are the env vars whose values are secret.
	EnvNames []string `json:"env_names"`
}

// Redactor replaces secrets in text. It is built once per policy load
// from the redact decision and is safe for concurrent use.
type Redactor struct {
	values   *redact.Scrubber // secret env values in their encoded forms, nil when none
	patterns []valuePattern
	keyValue *regexp.Regexp // key: value and key=value pairs with a secret key
	keyName  *regexp.Regexp // a secret key name, nil when there are no keys
	all      []valuePattern // patterns, then the key-value pattern
}

type valuePattern struct {
	re     *regexp.Regexp
	secret int // index of the "secret" group, 0 for the whole match, -1 for the first group that matched
	filter prefilter
}

// Redactor evaluates the redact decision and compiles it. On a policy error
// it returns a Redactor built from the default policies' spec (and the env
// values) together with the error, so output is still redacted.
func (p *Policies) Redactor(ctx context.Context, in RedactInput) (*Redactor, error) {
	names := in.EnvNames
	if names == nil {
		names = []string{}
	}
	input, err := json.Marshal(map[string]any{"env_names": names})
	if err != nil {
		return nil, fmt.Errorf("encode redact input: %w", err)
	}
	spec, err := p.redactSpec(ctx, input)
	if err == nil {
		r, cerr := compileRedactor(spec, in.LookupEnv, in.Values)
		if cerr == nil {
			return r, nil
		}
		err = cerr
	}
	r, ferr := compileRedactor(p.fallbackSpec(ctx, input), in.LookupEnv, in.Values)
	if ferr != nil {
		return nil, errors.Join(err, ferr)
	}
	return r, err
}

func (p *Policies) redactSpec(ctx context.Context, input []byte) (RedactSpec, error) {
	v, err := p.evalRaw(ctx, AreaRedact, input, nil)
	if err != nil {
		return RedactSpec{}, fmt.Errorf("redact policy failed: %s", describe(err))
	}
	return decodeRedact(v)
}

// fallbackSpec is the default policies' redact spec for input; should even
// that fail, it is the env names alone.
func (p *Policies) fallbackSpec(ctx context.Context, input []byte) RedactSpec {
	if p.fallback != nil {
		if v, err := evalQuery(ctx, *p.fallback, p.limits(), input, nil, "data.voltmcp.redact.decision"); err == nil {
			if s, err := decodeRedact(v); err == nil {
				return s
			}
		}
	}
	var in struct {
		EnvNames []any `json:"env_names"`
	}
	_ = json.Unmarshal(input, &in) // best effort: the spec below is still safe
	s := RedactSpec{Keys: []string{}, Patterns: []string{}, EnvNames: []string{}}
	for _, n := range in.EnvNames {
		if n, ok := n.(string); ok && n != "" {
			s.EnvNames = append(s.EnvNames, n)
		}
	}
	return s
}

func decodeRedact(v any) (RedactSpec, error) {
	var s RedactSpec
	if err := decode(v, &s, "keys", "patterns", "env_names"); err != nil {
		return RedactSpec{}, err
	}
	return s, nil
}

// compileRedactor builds a Redactor from a spec, the env values and the
// other secret values the caller knows of.
func compileRedactor(spec RedactSpec, lookup func(string) (string, bool), known []string) (*Redactor, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	r := &Redactor{}
	// The values are removed in every form redact.Forms lists (JSON-
	// escaped, URL-encoded, base64 at each alignment), the same removal
	// the engine applies to errors and stderr tails.
	vals := slices.Clone(known)
	for _, n := range spec.EnvNames {
		if v, ok := lookup(n); ok {
			vals = append(vals, v)
		}
	}
	if s := redact.NewScrubber(Replacement, vals...); s.Len() > 0 {
		r.values = s
	}
	for _, p := range spec.Patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("redact pattern %q: %w", p, err)
		}
		vp := valuePattern{re: re, filter: newPrefilter(p)}
		if i := re.SubexpIndex("secret"); i > 0 {
			vp.secret = i
		}
		r.patterns = append(r.patterns, vp)
	}
	if len(spec.Keys) > 0 {
		for _, k := range spec.Keys {
			if _, err := regexp.Compile(k); err != nil {
				return nil, fmt.Errorf("redact key pattern %q: %w", k, err)
			}
		}
		keys := "(?:" + strings.Join(spec.Keys, "|") + ")"
		r.keyName = regexp.MustCompile(`(?i)` + keys)
		kv := `(?i)[A-Za-z0-9_.-]*` + keys + `[A-Za-z0-9_.-]*"?[ \t]*[:=][ \t]*(?:"(?P<q>(?:[^"\\\n]|\\.)*)"|(?P<b>[^\s"',;&}\]]+))`
		r.keyValue = regexp.MustCompile(kv)
		r.all = append(r.all, valuePattern{re: r.keyValue, secret: -1, filter: newPrefilter(kv)})
	}
	r.all = append(r.patterns, r.all...)
	return r, nil
}

// IsSecretKey reports whether values under a key of this name are secret,
// for redacting structured data (maps, headers, env) by key: the names
// [redact.IsSecretName] knows, and those the decision's keys match.
func (r *Redactor) IsSecretKey(name string) bool {
	return redact.IsSecretName(name) || r.keyName != nil && r.keyName.MatchString(name)
}

// Redact returns s with every secret replaced by Replacement: the values
// of secret env vars (in the forms [redact.Forms] lists), matches of the
// value patterns, and values that follow a secret key ("token": "…",
// password=…).
func (r *Redactor) Redact(s string) string {
	s = r.values.Text(s)
	var lower string
	lowerOf := ""
	lowerFn := func() string {
		if lowerOf != s || lower == "" {
			lower, lowerOf = lowerASCII(s), s
		}
		return lower
	}
	for _, p := range r.all {
		if locs := p.filter.findAll(p.re, s, lowerFn); locs != nil {
			s = replaceGroups(s, locs, p.secret)
		}
	}
	return s
}

// RedactBytes is Redact for byte slices. It returns b itself when nothing
// was redacted.
func (r *Redactor) RedactBytes(b []byte) []byte {
	s := string(b)
	out := r.Redact(s)
	if out == s {
		return b
	}
	return []byte(out)
}

// replaceGroups replaces, in every match (submatch indexes locs), the
// group at index group (0 for the whole match, -1 for the first group that
// matched).
func replaceGroups(s string, locs [][]int, group int) string {
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, l := range locs {
		start, end := l[0], l[1]
		switch {
		case group > 0 && l[2*group] >= 0:
			start, end = l[2*group], l[2*group+1]
		case group < 0:
			start = -1
			for i := 2; i+1 < len(l); i += 2 {
				if l[i] >= 0 {
					start, end = l[i], l[i+1]
					break
				}
			}
			if start < 0 || strings.HasPrefix(s[start:end], Replacement[:len(Replacement)-1]) {
				continue
			}
		}
		if start < last {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(Replacement)
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}
