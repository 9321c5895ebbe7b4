package cue

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"slices"
	"strings"
)

// identityDomain separates the hash of a server's identity from every
// other sha256 voltmcp computes. Its version changes when the fields
// below do, so that state of an older identity is never taken for the
// current one.
const identityDomain = "voltmcp server identity v1"

// Identity returns what the server is, as the hex sha256 of its
// transport and of what it runs or reaches, and, for a server a project
// layer defines, of that project's root: every piece of state voltmcp
// keeps about a server (its approval and quarantine, its pins and held
// changes, its cached metadata, its stored outputs) is keyed by it,
// never by the server's name alone, so that a name given to another
// program, or the same name in another project, starts with nothing.
//
// The fields are: the server's id (two entries that run one program,
// say with two accounts' tokens, keep their own pins); the transport (stdio, streamable-http or sse, and
// whether it was left to be found); for a stdio server the command, the
// arguments, the working directory it starts in ([Server.WorkDir]), the
// names of its env entries and its envAllowlist; for an HTTP server the
// URL, the names of its headers and its auth config without the token
// and client secret (and without allowInsecureLoopback, which relaxes a
// rule but changes nothing the server is: a stored token stays the
// server's, and the rules of today decide whether it is refreshed). Values are hashed as written: an ${env:NAME}
// reference is never resolved, and the value of an env entry or a
// header never goes in (it is often a secret, and a new token is not a
// new server). A literal secret written in the arguments or the URL goes
// into the hash and nowhere else. Map order does not matter; list order
// does.
func (s Server) Identity() string {
	h := sha256.New()
	w := identityWriter{h: h}
	w.field("domain", identityDomain)
	w.field("id", s.ID)
	w.field("transport", s.Transport)
	w.field("transportAuto", fmt.Sprint(s.TransportAuto))
	// Paths absolute (absPath): a project given as "." is the same
	// project as its absolute path.
	if s.Layer.IsProject() {
		w.field("project", absPath(s.BaseDir))
	} else {
		w.field("project", "")
	}
	if s.IsStdio() {
		w.field("command", s.Command)
		w.list("args", s.Args)
		w.field("workDir", absPath(s.WorkDir(s.Cwd)))
		w.list("env", sortedKeys(s.Env))
		w.list("envAllowlist", sortedCopy(s.EnvAllowlist))
	} else {
		w.field("url", s.URL)
		w.list("headers", sortedHeaderNames(s.Headers))
		if a := s.Auth; a != nil {
			scheme := "<unset>"
			if a.Scheme != nil {
				scheme = *a.Scheme
			}
			w.list("auth", []string{a.Type, a.Variable, a.Header, scheme, a.Flow, a.Scope, a.ClientID,
				a.ClientMetadataURL, a.ResourceMetadataURL, a.TokenEndpointAuthMethod, a.Issuer})
		} else {
			w.list("auth", nil)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// identityWriter writes length-prefixed fields, so that no two lists of
// fields hash alike.
type identityWriter struct{ h hash.Hash }

func (w identityWriter) field(name, value string) {
	fmt.Fprintf(w.h, "%s=%d:%s;", name, len(value), value)
}

func (w identityWriter) list(name string, values []string) {
	fmt.Fprintf(w.h, "%s=[%d;", name, len(values))
	for _, v := range values {
		fmt.Fprintf(w.h, "%d:%s;", len(v), v)
	}
	fmt.Fprint(w.h, "];")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// sortedHeaderNames returns the header names, canonicalized the way
// HTTP treats them (case does not matter), sorted.
func sortedHeaderNames(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, strings.ToLower(k))
	}
	slices.Sort(keys)
	return keys
}

func sortedCopy(list []string) []string {
	out := slices.Clone(list)
	slices.Sort(out)
	return out
}
