package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"

	"github.com/voltmcp/voltmcp/engine/internal/transport"
)

// Remove deletes the token file, holding its lock, and returns what it
// held: nil when there was no usable token (a file that is there but not
// usable is deleted all the same). The lock file stays.
func (s *Store) Remove(ctx context.Context) (*File, error) {
	unlock, err := s.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	f := s.Read()
	if f != nil {
		s.scrub.Add(f.Token.AccessToken, f.Token.RefreshToken, f.ClientSecret)
	}
	if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return f, fmt.Errorf("oauth token store: remove the token file: %w", errors.Unwrap(err))
	}
	return f, nil
}

// Forget drops the token source in use: the next connection reads the
// store, which [Store.Remove] may have emptied.
func (o *State) Forget() {
	o.mu.Lock()
	o.ts, o.endpoint = nil, ""
	o.gen++
	o.mu.Unlock()
}

// Revoke revokes the tokens of f (as [Store.Remove] returned it) at the
// authorization server f.Issuer names, when its metadata offers a
// revocation_endpoint (RFC 7009): the refresh token first (which
// revokes its access tokens on most servers), then the access token.
// Every request goes through the handler's guard. It returns false and
// no error when the authorization server offers no revocation; its
// errors name the step and an origin, never a token.
func (h *Handler) Revoke(ctx context.Context, f *File) (revoked bool, err error) {
	if f == nil || f.Token == nil {
		return false, nil
	}
	h.scrub.Add(f.Token.AccessToken, f.Token.RefreshToken, f.ClientSecret)
	defer func() { err = h.scrub.Err(err) }()
	if f.Issuer == "" {
		return false, errors.New("the token file names no authorization server to revoke the tokens at")
	}
	if err := h.guard.Policy().CheckURL("issuer", f.Issuer); err != nil {
		return false, err
	}
	meta, err := auth.GetAuthServerMetadata(ctx, f.Issuer, h.client)
	if err != nil {
		if r := h.guard.Refusal(); r != nil {
			return false, r
		}
		return false, fmt.Errorf("read the authorization server's metadata: %w", err)
	}
	if meta == nil || meta.RevocationEndpoint == "" {
		return false, nil
	}
	if err := h.guard.Policy().CheckURL("revocation_endpoint", meta.RevocationEndpoint); err != nil {
		return false, err
	}
	secret := f.ClientSecret
	if secret == "" && f.ClientID == h.opts.ClientID {
		secret = h.opts.ClientSecret
	}
	h.scrub.Add(secret)
	for _, t := range []struct{ hint, tok string }{{"refresh_token", f.Token.RefreshToken}, {"access_token", f.Token.AccessToken}} {
		if t.tok == "" {
			continue
		}
		if err := h.revoke(ctx, meta.RevocationEndpoint, f, secret, t.hint, t.tok); err != nil {
			return false, err
		}
	}
	return true, nil
}

// revoke sends one RFC 7009 revocation request.
func (h *Handler) revoke(ctx context.Context, endpoint string, f *File, secret, hint, tok string) error {
	form := url.Values{"token": {tok}, "token_type_hint": {hint}}
	basic := secret != "" && f.AuthStyle != int(oauth2.AuthStyleInParams)
	if !basic {
		form.Set("client_id", f.ClientID)
		if secret != "" {
			form.Set("client_secret", secret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return errors.New("revocation_endpoint is not a URL")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth(url.QueryEscape(f.ClientID), url.QueryEscape(secret))
	}
	origin := "the revocation endpoint"
	if o, ok := transport.OriginOf(req.URL); ok {
		origin = o.String()
	}
	resp, err := h.client.Do(req)
	if err != nil {
		if r := h.guard.Refusal(); r != nil {
			return r
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL
		}
		return fmt.Errorf("revoke the %s at %s: %w", strings.ReplaceAll(hint, "_", " "), origin, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	// RFC 7009 §2.2: 200 for a token revoked or one the server does not
	// know (already invalid).
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("revoke the %s at %s: the server answered %s", strings.ReplaceAll(hint, "_", " "), origin, resp.Status)
	}
	return nil
}

// Discard deletes the token file, holding its lock, without reading or
// revoking it, and reports whether there was one: what `voltmcp remove`
// does with the token of the server it removes. The lock file stays.
func (s *Store) Discard(ctx context.Context) (bool, error) {
	unlock, err := s.Lock(ctx)
	if err != nil {
		return false, err
	}
	defer unlock()
	switch err := os.Remove(s.path); {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("oauth token store: remove the token file: %w", errors.Unwrap(err))
	}
	return true, nil
}
