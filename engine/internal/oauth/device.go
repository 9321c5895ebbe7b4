package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/voltmcp/voltmcp/engine/internal/transport"
)

// The device authorization grant (RFC 8628), for a user without a
// browser where voltmcp runs: the go-sdk has none, so [Handler] runs it
// with golang.org/x/oauth2 (Config.DeviceAuth and DeviceAccessToken),
// every request through its guard, after the same discovery and client
// registration as the SDK's authorization code flow. The token is stored
// as that flow's is.

// The flows a [Handler] runs, as [Options.Flow] names them.
const (
	// FlowBrowser is the authorization code flow with PKCE, through
	// [Options.Authorize] (the default).
	FlowBrowser = "browser"
	// FlowDevice is the device authorization grant, through
	// [Options.DeviceAuthorize].
	FlowDevice = "device"
	// FlowAuto is the device authorization grant when
	// [Options.DeviceAuthorize] is set and the authorization server
	// offers it, else the browser flow.
	FlowAuto = "auto"
)

// Named errors of the device authorization grant.
var (
	// ErrNoDeviceEndpoint: the authorization server's metadata names no
	// device_authorization_endpoint.
	ErrNoDeviceEndpoint = errors.New("the authorization server offers no device authorization (its metadata has no device_authorization_endpoint)")
	// ErrVerificationURI: the verification URI to show is not an https
	// URL with a host; it is never shown.
	ErrVerificationURI = errors.New("the device authorization's verification URI is refused")
	// ErrDeviceExpired: the device code expired before the user
	// approved (expired_token, or its expires_in passed).
	ErrDeviceExpired = errors.New("the device code expired before the user approved it (expired_token); log in again")
	// ErrDeviceDenied: the user refused (access_denied).
	ErrDeviceDenied = errors.New("the authorization was refused: access_denied (the user denied the device authorization)")
)

// DeviceCode is what a user needs to approve a device authorization:
// the page to visit and the code to enter there. Neither is a secret;
// the device code that polls for the token is, and is not here.
type DeviceCode struct {
	// VerificationURI is the page, an https URL with a host.
	VerificationURI string
	// VerificationURIComplete is the page with the user code in it, an
	// https URL at the same host, or "" when the server gives none.
	VerificationURIComplete string
	// UserCode is the code to enter: at most 64 printable ASCII bytes.
	UserCode string
	// Expiry is when the codes expire; zero when the server does not say.
	Expiry time.Time
}

// Bounds of a device authorization answer.
const (
	maxUserCode        = 64
	maxDeviceCode      = 2048
	maxVerificationURI = 2048
	maxInterval        = 3600 // seconds
)

// useDevice reports whether an authorization tries the device grant.
func (h *Handler) useDevice() bool {
	switch h.opts.Flow {
	case FlowDevice:
		return true
	case FlowAuto:
		return h.opts.DeviceAuthorize != nil
	}
	return false
}

// canAsk reports whether the handler has a way to ask the user for the
// flow it runs.
func (h *Handler) canAsk() bool {
	switch h.opts.Flow {
	case FlowDevice:
		return h.opts.DeviceAuthorize != nil
	case FlowAuto:
		return h.opts.DeviceAuthorize != nil || h.opts.Authorize != nil
	}
	return h.opts.Authorize != nil
}

// authorize runs the flow of [Options.Flow]: the device grant, falling
// back under [FlowAuto] to the browser flow when the authorization
// server has none, or the SDK's authorization code flow.
func (h *Handler) authorize(ctx context.Context, req *http.Request, resp *http.Response, challenges []oauthex.Challenge) error {
	if h.useDevice() {
		err := h.device(ctx, req, challenges)
		if !errors.Is(err, ErrNoDeviceEndpoint) || h.opts.Flow != FlowAuto || h.opts.Authorize == nil {
			transport.Discard(resp)
			return err
		}
		h.log.Info("oauth: the authorization server offers no device authorization; the browser flow instead")
		h.guard.Reset()
	}
	return h.sdk.Authorize(ctx, req, resp)
}

// device runs the device authorization grant: the protected resource
// metadata and the authorization server's, the client (as the browser
// flow has it), the device code, the user through
// [Options.DeviceAuthorize], and the polls of the token endpoint.
func (h *Handler) device(ctx context.Context, req *http.Request, challenges []oauthex.Challenge) error {
	prm, err := h.resourceMetadata(ctx, challenges, req.URL.String())
	if err != nil {
		return err
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], h.client)
	if err != nil {
		return fmt.Errorf("failed to get authorization server metadata: %w", err)
	}
	endpoint := h.guard.DeviceEndpoint()
	if asm == nil || endpoint == "" {
		return ErrNoDeviceEndpoint
	}
	cfg, err := h.deviceClient(ctx, asm)
	if err != nil {
		return err
	}
	cfg.Endpoint.DeviceAuthURL = endpoint
	cfg.Scopes = h.deviceScopes(challenges, prm, asm)
	h.scrub.Add(cfg.ClientSecret)
	cctx := context.WithValue(ctx, oauth2.HTTPClient, h.client)
	resource := oauth2.SetAuthURLParam("resource", prm.Resource)
	authOpts := []oauth2.AuthCodeOption{resource}
	if cfg.ClientSecret != "" && cfg.Endpoint.AuthStyle == oauth2.AuthStyleInParams {
		// x/oauth2 sends only the client_id here; a confidential client
		// authenticates as at the token endpoint (RFC 8628 §3.1).
		authOpts = append(authOpts, oauth2.SetAuthURLParam("client_secret", cfg.ClientSecret))
	}
	da, err := cfg.DeviceAuth(cctx, authOpts...)
	if err != nil {
		return fmt.Errorf("device authorization request failed: %w", err)
	}
	h.scrub.Add(da.DeviceCode)
	code, err := checkDeviceAnswer(da)
	if err != nil {
		return err
	}
	if err := h.opts.DeviceAuthorize(ctx, h.server, code); err != nil {
		return err
	}
	tok, err := cfg.DeviceAccessToken(cctx, da, resource)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return fmt.Errorf("the user code was not approved: %w", ctx.Err())
	case retrieveCode(err) == "access_denied":
		return ErrDeviceDenied
	case retrieveCode(err) == "expired_token", errors.Is(err, context.DeadlineExceeded):
		// DeadlineExceeded without ctx's: the answer's expires_in passed.
		return ErrDeviceExpired
	default:
		return fmt.Errorf("device token request failed: %w", err)
	}
	h.scrub.Add(tok.AccessToken, tok.RefreshToken)
	refresh := context.WithValue(context.Background(), oauth2.HTTPClient, h.client)
	_, err = h.newTokenSource(refresh, cfg, tok)
	return err
}

// retrieveCode returns the OAuth error code of a token endpoint's error
// answer, or "".
func retrieveCode(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return ""
}

// resourceMetadata finds the protected resource metadata as the SDK's
// authorization code handler does (the configured URL or the
// challenge's, then the well-known URLs at the endpoint's path and at its
// root), and, without any, takes the endpoint's origin as the
// authorization server (the 2025-03-26 spec's fallback).
func (h *Handler) resourceMetadata(ctx context.Context, challenges []oauthex.Challenge, endpoint string) (*oauthex.ProtectedResourceMetadata, error) {
	type candidate struct{ url, resource string }
	var cands []candidate
	first := h.resourceMeta
	if first == "" {
		for _, c := range challenges {
			if u := c.Params["resource_metadata"]; u != "" {
				first = u
				break
			}
		}
	}
	if first != "" {
		cands = append(cands, candidate{first, endpoint})
	}
	ru, err := url.Parse(endpoint)
	if err != nil {
		return nil, errors.New("the server's url is not a URL")
	}
	mu := *ru
	mu.RawQuery, mu.Fragment = "", ""
	mu.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(ru.Path, "/")
	cands = append(cands, candidate{mu.String(), endpoint})
	mu.Path = "/.well-known/oauth-protected-resource"
	root := *ru
	root.Path, root.RawPath, root.RawQuery, root.Fragment = "", "", "", ""
	cands = append(cands, candidate{mu.String(), root.String()})
	for _, c := range cands {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, c.url, c.resource, h.client)
		if err != nil || prm == nil {
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, errors.New("protected resource metadata has no authorization servers specified")
		}
		return prm, nil
	}
	return &oauthex.ProtectedResourceMetadata{AuthorizationServers: []string{root.String()}, Resource: endpoint}, nil
}

// deviceClient returns the client of a device authorization, chosen as
// the SDK's authorization code handler chooses it: a client ID metadata
// document where configured and supported, else the pre-registered
// client, else one registered dynamically (RFC 7591) for the device
// grant.
func (h *Handler) deviceClient(ctx context.Context, asm *oauthex.AuthServerMeta) (*oauth2.Config, error) {
	o := &h.opts
	cfg := &oauth2.Config{Endpoint: oauth2.Endpoint{TokenURL: asm.TokenEndpoint}}
	switch {
	case o.ClientID == "" && o.ClientMetadataURL != "" && asm.ClientIDMetadataDocumentSupported:
		cfg.ClientID = o.ClientMetadataURL
		cfg.Endpoint.AuthStyle = oauth2.AuthStyleInParams
	case o.ClientID != "":
		if o.Issuer != "" && strings.TrimSuffix(o.Issuer, "/") != strings.TrimSuffix(asm.Issuer, "/") {
			return nil, errors.New("the authorization server is not the configured client's issuer")
		}
		cfg.ClientID = o.ClientID
		if o.TokenEndpointAuthMethod != "none" {
			cfg.ClientSecret = o.ClientSecret
		}
		switch {
		case o.TokenEndpointAuthMethod == "none" || slices.Contains(asm.TokenEndpointAuthMethodsSupported, "client_secret_post"):
			cfg.Endpoint.AuthStyle = oauth2.AuthStyleInParams
		case slices.Contains(asm.TokenEndpointAuthMethodsSupported, "client_secret_basic"):
			cfg.Endpoint.AuthStyle = oauth2.AuthStyleInHeader
		}
	case asm.RegistrationEndpoint != "":
		meta := &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{h.redirect}, ClientName: "voltmcp",
			GrantTypes:              []string{"urn:ietf:params:oauth:grant-type:device_code", "refresh_token"},
			TokenEndpointAuthMethod: o.TokenEndpointAuthMethod,
		}
		reg, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, meta, h.client)
		if err != nil {
			return nil, fmt.Errorf("failed to register client: %w", err)
		}
		cfg.ClientID, cfg.ClientSecret = reg.ClientID, reg.ClientSecret
		cfg.Endpoint.AuthStyle = oauth2.AuthStyleInHeader
		if reg.TokenEndpointAuthMethod == "none" || reg.TokenEndpointAuthMethod == "client_secret_post" {
			cfg.Endpoint.AuthStyle = oauth2.AuthStyleInParams
		}
	default:
		return nil, errors.New("no configured client registration methods are supported by the authorization server")
	}
	return cfg, nil
}

// deviceScopes are the scopes of a device authorization, as the browser
// flow asks for them: the challenge's, else the resource's
// scopes_supported, replaced by the configured ones (a step-up adds the
// challenge's), with offline_access when the authorization server
// supports it.
func (h *Handler) deviceScopes(challenges []oauthex.Challenge, prm *oauthex.ProtectedResourceMetadata, asm *oauthex.AuthServerMeta) []string {
	var scopes []string
	if s := bearerParam(challenges, "scope"); s != "" {
		scopes = strings.Fields(s)
	} else {
		scopes = slices.Clone(prm.ScopesSupported)
	}
	if len(h.opts.Scopes) > 0 {
		scopes = h.filterScopes(scopes)
	}
	if slices.Contains(asm.ScopesSupported, "offline_access") && !slices.Contains(scopes, "offline_access") {
		scopes = append(scopes, "offline_access")
	}
	return scopes
}

// checkDeviceAnswer checks a device authorization answer before anything
// of it is shown or used: a bounded device code and user code of
// printable ASCII, https verification URIs at one host, an interval in
// range. Its errors name the field, never the value.
func checkDeviceAnswer(da *oauth2.DeviceAuthResponse) (*DeviceCode, error) {
	if da.DeviceCode == "" || len(da.DeviceCode) > maxDeviceCode {
		return nil, errors.New("the device authorization answer has no device_code, or one over 2048 bytes")
	}
	if da.UserCode == "" {
		return nil, errors.New("the device authorization answer has no user_code")
	}
	if err := printable("user_code", da.UserCode, maxUserCode); err != nil {
		return nil, err
	}
	host, err := verificationHost("verification_uri", da.VerificationURI)
	if err != nil {
		return nil, err
	}
	if da.VerificationURIComplete != "" {
		h2, err := verificationHost("verification_uri_complete", da.VerificationURIComplete)
		if err != nil {
			return nil, err
		}
		if h2 != host {
			return nil, fmt.Errorf("%w: verification_uri_complete is at another host than verification_uri", ErrVerificationURI)
		}
	}
	if da.Interval < 0 || da.Interval > maxInterval {
		return nil, fmt.Errorf("the device authorization answer's interval is out of range (0 to %d seconds)", maxInterval)
	}
	return &DeviceCode{VerificationURI: da.VerificationURI, VerificationURIComplete: da.VerificationURIComplete,
		UserCode: da.UserCode, Expiry: da.Expiry}, nil
}

// verificationHost returns the host of a verification URI, which must be
// an absolute https URL with a host and no user or password, at most
// 2048 printable ASCII bytes.
func verificationHost(field, raw string) (string, error) {
	if raw == "" {
		return "", fmt.Errorf("%w: the answer has no %s", ErrVerificationURI, field)
	}
	if err := printable(field, raw, maxVerificationURI); err != nil {
		return "", fmt.Errorf("%w: %w", ErrVerificationURI, err)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs() || u.Opaque != "" || u.Hostname() == "" || u.User != nil:
		return "", fmt.Errorf("%w: %s is not an absolute URL with a host", ErrVerificationURI, field)
	case u.Scheme != "https":
		// The scheme is one a server chose: shown only when short and plain.
		scheme := u.Scheme
		if len(scheme) > 16 {
			scheme = scheme[:16] + "…"
		}
		return "", fmt.Errorf("%w: %s is not https (its scheme is %q); it is not shown", ErrVerificationURI, field, scheme)
	}
	return strings.ToLower(u.Host), nil
}

// printable refuses a value over max bytes or with a byte outside
// printable ASCII, naming the field, never the value.
func printable(field, v string, max int) error {
	if len(v) > max {
		return fmt.Errorf("%s is over %d bytes", field, max)
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x21 || v[i] > 0x7e {
			return fmt.Errorf("%s holds a byte outside printable ASCII (at offset %d)", field, i)
		}
	}
	return nil
}
