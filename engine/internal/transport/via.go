package transport

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// ViaHeader is the request header in which a voltmcp gateway names the
// gateways a request to an HTTP server has come through, the first
// gateway first and the sender last. A gateway names itself by the id it
// gives that server ([ViaID]), so that two servers cannot tell from it
// that their requests come from one gateway. A gateway that finds one of
// its ids there refuses the request with [http.StatusLoopDetected]: the
// request went round a loop of gateways (A lists B, B lists A), which
// would otherwise call on without end.
const ViaHeader = "Voltmcp-Via"

// ViaID is the id by which the gateway whose secret is key names itself
// to the server at origin in ViaHeader: 26 characters of base32 of an
// HMAC-SHA256 of the origin.
func ViaID(key []byte, origin Origin) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(origin.String()))
	return base32.StdEncoding.EncodeToString(m.Sum(nil))[:26]
}

// MaxVia is the most gateways a request may come through: a longer
// chain, longer than any setup of gateways needs, is refused as a loop
// too, whatever its ids, which also bounds what the header may hold.
const MaxVia = 8

// ViaSet is the ids a gateway has named itself by ([ViaID]): a request
// whose ViaHeader holds one came back round a loop. The zero ViaSet is
// empty and ready to use; it is safe for concurrent use.
type ViaSet struct {
	mu  sync.RWMutex
	ids map[string]struct{}
}

// Add records id.
func (v *ViaSet) Add(id string) {
	v.mu.RLock()
	_, ok := v.ids[id]
	v.mu.RUnlock()
	if ok {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ids == nil {
		v.ids = map[string]struct{}{}
	}
	v.ids[id] = struct{}{}
}

// Has reports whether id was added.
func (v *ViaSet) Has(id string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	_, ok := v.ids[id]
	return ok
}

// viaKey is the context key of the chain of gateways the request being
// served came through.
type viaKey struct{}

// WithVia returns ctx carrying chain, the gateways the request being
// served came through ([ParseVia]): every request a [HeaderTransport]
// sends with the returned context names them before its own gateway.
func WithVia(ctx context.Context, chain []string) context.Context {
	if len(chain) == 0 {
		return ctx
	}
	return context.WithValue(ctx, viaKey{}, slices.Clip(chain))
}

// ViaOf returns the chain [WithVia] put in ctx, nil without one.
func ViaOf(ctx context.Context) []string {
	chain, _ := ctx.Value(viaKey{}).([]string)
	return chain
}

// ParseVia returns the gateways that the request whose header is h came
// through, from its ViaHeader: nil without one. A malformed header (an
// empty or overlong id, a character other than a letter or a digit) or
// a chain longer than MaxVia is an error.
func ParseVia(h http.Header) ([]string, error) {
	values := h.Values(ViaHeader)
	if len(values) == 0 {
		return nil, nil
	}
	var chain []string
	for _, v := range values {
		for id := range strings.SplitSeq(v, ",") {
			id = strings.TrimSpace(id)
			if !validInstance(id) {
				return nil, fmt.Errorf("the %s header is not a list of gateway ids", ViaHeader)
			}
			if len(chain) == MaxVia {
				return nil, ErrTooManyGateways
			}
			chain = append(chain, id)
		}
	}
	return chain, nil
}

// ErrTooManyGateways is ParseVia's error for a chain longer than MaxVia.
var ErrTooManyGateways = fmt.Errorf("the request came through more than %d voltmcp gateways", MaxVia)

// validInstance reports whether id can be a gateway's instance id: 1 to
// 64 letters and digits.
func validInstance(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range []byte(id) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// RefuseLoop answers a request that came back to the gateway whose ids
// own recognizes, or through too many gateways, and reports whether it
// did; else the request may be served, with the chain it came through in
// its context ([WithVia]).
func RefuseLoop(w http.ResponseWriter, r *http.Request, own func(id string) bool) (*http.Request, bool) {
	chain, err := ParseVia(r.Header)
	switch {
	case errors.Is(err, ErrTooManyGateways):
		http.Error(w, "voltmcp: refused: "+err.Error()+"; gateways that list each other make a loop", http.StatusLoopDetected)
		return r, true
	case err != nil:
		http.Error(w, "voltmcp: refused: "+err.Error(), http.StatusBadRequest)
		return r, true
	case slices.ContainsFunc(chain, own):
		n := len(chain) - slices.IndexFunc(chain, own)
		http.Error(w, fmt.Sprintf("voltmcp: refused: the request came back to this gateway, round a loop of %d gateways that list each other", n), http.StatusLoopDetected)
		return r, true
	}
	return r.WithContext(WithVia(r.Context(), chain)), false
}

// LoopError is a request that a voltmcp gateway refused because it had
// come through that gateway already, or through too many: the server is
// a gateway that leads back to this one.
type LoopError struct {
	Server string // the server's name
}

func (e *LoopError) Error() string {
	return fmt.Sprintf("server %s leads back to this gateway: it is a voltmcp gateway that, directly or through others, lists this one, so the call would go round without end; remove one of the entries that make the loop", e.Server)
}
