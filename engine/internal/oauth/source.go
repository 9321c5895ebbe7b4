package oauth

import (
	"context"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// ErrNeedsGrant is what a [TokenSource] answers once it cannot refresh:
// invalid_grant, which the go-sdk's transport takes as "no token".
var ErrNeedsGrant = &oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: "the token could not be refreshed"}

// lockTimeout bounds the wait for another process's refresh.
const lockTimeout = time.Minute

// RefreshMargin is how long before its expiry a token is refreshed: a
// token that expires within it is not sent, so that it cannot expire
// on its way (a slow network, a request queued behind others) or by the
// clock of a resource server a little ahead of the gateway's. oauth2's
// own margin, 10 s, covers little of either; a minute does, and still
// uses a token of a few minutes (which some providers issue) for most of
// its life. A token that lives less than twice the margin is refreshed
// halfway through its life instead (see [TokenSource]).
const RefreshMargin = time.Minute

// margin returns how long before its expiry tok is refreshed, tok having
// been obtained (or stored by the process that obtained it) at obtained:
// [RefreshMargin], or half its lifetime when that is shorter, so that a
// token the server issues for less than the margin is used for half its
// life rather than refreshed again at every use.
func margin(tok *oauth2.Token, obtained time.Time) time.Duration {
	if life := tok.Expiry.Sub(obtained); life > 0 && life/2 < RefreshMargin {
		return life / 2
	}
	return RefreshMargin
}

// due reports whether tok, obtained at obtained, must be refreshed
// before it is sent: it has no access token, or it expires within its
// [margin].
func due(tok *oauth2.Token, obtained time.Time) bool {
	return tok == nil || tok.AccessToken == "" || !tok.Expiry.IsZero() && time.Until(tok.Expiry) < margin(tok, obtained)
}

// TokenSource hands out a server's token, refreshing it [RefreshMargin]
// before it expires (half its lifetime, for a token that lives less
// than twice that), and stores every new one in its [Store]. Concurrent
// callers share one refresh: they wait for the one in progress and take
// its token. A server that issues tokens shorter than the margin is
// logged once, as such. After a failed refresh it
// answers [ErrNeedsGrant]: the request goes without a token, and the
// server's 401 starts a new authorization rather than every request
// failing.
//
// A refresh is serialized with every other process that shares the
// token file: it holds the file's lock ([Store.Lock]), reads the file
// again inside it, and when another gateway has already refreshed (the
// file holds a token other than the one this source has), takes that
// token rather than presenting a refresh token that was already used,
// which an authorization server that rotates refresh tokens answers by
// revoking the whole grant. The refresh token a refresh answers replaces
// the old one in the same atomic write as the access token (one that
// answers none keeps the old one, RFC 6749 section 6).
//
// Make one with [Store.Load] or [Store.NewTokenSource]; it is safe for
// concurrent use.
type TokenSource struct {
	store *Store
	cfg   *oauth2.Config
	ctx   context.Context // carries the HTTP client of refreshes
	file  File            // what is stored beside the token

	mu   sync.Mutex
	tok  *oauth2.Token // the token in use
	at   time.Time     // when tok was obtained or stored
	last string        // the access token last stored
	dead bool
	// short is set once a token shorter than twice RefreshMargin was
	// logged.
	short bool
}

// Dead reports whether a refresh failed: the source answers only
// [ErrNeedsGrant] since, and a new authorization must replace it.
func (t *TokenSource) Dead() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dead
}

// Token returns a valid token: the one in use, the one another process
// stored after refreshing it, or a fresh one from a refresh, and stores
// it when it has not been stored yet. A failure to store is logged, not
// returned.
func (t *TokenSource) Token() (*oauth2.Token, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dead {
		return nil, ErrNeedsGrant
	}
	if !due(t.tok, t.at) && t.tok.AccessToken == t.last {
		return t.tok, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), lockTimeout)
	defer cancel()
	s := t.store
	unlock, err := s.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if due(t.tok, t.at) {
		// Another gateway may have refreshed while this one waited: its
		// token, newer and for the same URL and client, replaces this one.
		if tf := s.Read(); tf != nil && tf.SavedAt.After(t.at) && tf.URLHash == t.file.URLHash &&
			tf.ClientID == t.file.ClientID && tf.TokenURL == t.file.TokenURL && tf.Token.AccessToken != t.tok.AccessToken {
			s.scrub.Add(tf.Token.AccessToken, tf.Token.RefreshToken)
			t.tok, t.last, t.at = tf.Token, tf.Token.AccessToken, tf.SavedAt
		}
	}
	if !due(t.tok, t.at) && t.tok.AccessToken == t.last {
		return t.tok, nil
	}
	tok := t.tok
	switch {
	case !due(tok, t.at):
	case tok.RefreshToken == "" && tok.Valid():
		// Nothing to refresh it with: it serves until it expires.
		if tok.AccessToken == t.last {
			return tok, nil
		}
	default:
		// Only the refresh token: oauth2 would hand back an access token
		// that is still valid by its own 10 s margin instead of
		// refreshing it.
		if tok, err = t.cfg.TokenSource(t.ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); err != nil {
			t.dead = true
			s.log.Warn("oauth token refresh failed; the server will need a new authorization", "err", s.scrub.Err(err))
			return nil, ErrNeedsGrant
		}
		s.scrub.Add(tok.AccessToken, tok.RefreshToken)
	}
	if life := time.Until(tok.Expiry); !tok.Expiry.IsZero() && life < 2*RefreshMargin && !t.short {
		t.short = true
		s.log.Warn("oauth server issues short-lived tokens; each is refreshed halfway through its life",
			"server", t.file.Server, "lifetime", life.Round(time.Second), "refresh_margin", RefreshMargin)
	}
	f := t.file
	f.Token, f.SavedAt = tok, time.Now().UTC()
	t.tok, t.last, t.at = tok, tok.AccessToken, f.SavedAt
	if err := s.Save(&f); err != nil {
		s.log.Warn("oauth token store", "err", s.scrub.Err(err))
	}
	return tok, nil
}
