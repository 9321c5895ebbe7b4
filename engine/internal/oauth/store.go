package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/oauth2"

	"github.com/voltmcp/voltmcp/engine/internal/oauthguard"
	"github.com/voltmcp/voltmcp/engine/internal/transport"
	"github.com/voltmcp/voltmcp/safefile"
)

// Format is the version of the [File] format this package reads and
// writes; a file of another format is not used.
const Format = 1

// maxFile is the size cap of a token file.
const maxFile = 1 << 20

// ErrSymlink is matched (with [errors.Is]) by the error of a token file,
// or of the directory that holds it, that is a symbolic link: the store
// never reads or writes a token through one, since a link planted there
// would send the tokens wherever it points.
var ErrSymlink = errors.New("is a symbolic link, which the token store does not follow (remove it)")

// File is a server's stored OAuth token. It is used only for the URL it
// was issued for.
type File struct {
	Format int    `json:"format"`
	Server string `json:"server"`
	// URL is the endpoint with its credentials redacted, for people;
	// URLHash is the sha256 of the endpoint as connected to ([URLHash]).
	URL     string `json:"url"`
	URLHash string `json:"urlSha256"`
	// The client the token was issued to, for refreshing it. ClientSecret
	// is only one the authorization server issued at registration; a
	// configured secret stays in the config. Issuer is the authorization
	// server the token came from: a pre-registered client uses only a
	// token of its own issuer.
	ClientID     string        `json:"clientId"`
	ClientSecret string        `json:"clientSecret,omitempty"`
	Issuer       string        `json:"issuer,omitempty"`
	TokenURL     string        `json:"tokenUrl"`
	AuthStyle    int           `json:"authStyle"`
	Scopes       []string      `json:"scopes,omitempty"`
	Token        *oauth2.Token `json:"token"`
	SavedAt      time.Time     `json:"savedAt"`
}

// URLHash returns the hex sha256 of an endpoint, as [File.URLHash] holds
// it.
func URLHash(u string) string {
	sum := sha256.Sum256([]byte(u))
	return hex.EncodeToString(sum[:])
}

// Path returns the token file of a server under an agent dir:
// <agentDir>/mcp/auth/<server>.json.
func Path(agentDir, server string) string {
	return filepath.Join(agentDir, "mcp", "auth", server+".json")
}

// StoreOptions tune [NewStore]. The zero value logs nothing and scrubs
// into a scrubber of the store's own.
type StoreOptions struct {
	// Log gets the store's warnings (a token file it ignores, a failed
	// refresh or write). Nil discards them.
	Log *slog.Logger
	// Scrub gets every token and client secret the store reads or a
	// refresh returns, and scrubs the errors it logs. Nil means a
	// scrubber of the store's own.
	Scrub *transport.Scrubber
}

// Store is the token store of one server: one file, written atomically
// with mode 0600, whose refreshes are serialized across processes by
// its lock ([safefile.Lock]). It never follows a symbolic link at the
// file or its directory ([ErrSymlink]), and never uses a token file that
// others than its owner can read or write: that token may have been read,
// so it counts as none (with a warning), and the next authorization
// replaces the file with one of mode 0600. It is safe for concurrent
// use.
type Store struct {
	path   string
	server string
	log    *slog.Logger
	scrub  *transport.Scrubber
}

// NewStore returns the store of the token file at path (see [Path]) of
// the server named server: a file that names another server is not
// used.
func NewStore(path, server string, opts *StoreOptions) *Store {
	s := &Store{path: path, server: server}
	if opts != nil {
		s.log, s.scrub = opts.Log, opts.Scrub
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.scrub == nil {
		s.scrub = new(transport.Scrubber)
	}
	return s
}

// Path returns the path of the store's file.
func (s *Store) Path() string { return s.path }

// Server returns the name of the server whose token the store holds.
func (s *Store) Server() string { return s.server }

// Check returns an error matching [ErrSymlink] when the token file or
// its directory is a symbolic link, naming which: the store will neither
// read nor write a token there.
func (s *Store) Check() error {
	for _, p := range []string{filepath.Dir(s.path), s.path} {
		if info, err := os.Lstat(p); err == nil && info.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("oauth token store: %s %w", p, ErrSymlink)
		}
	}
	return nil
}

// Read reads the token file: nil when there is none usable (no file, a
// symbolic link, a file others can read, an unreadable or corrupt one,
// one of another format or server, one without an access token), with a
// warning for those that are there but not usable. It does not take the
// lock.
func (s *Store) Read() *File {
	if err := s.Check(); err != nil {
		s.log.Warn("oauth token store: ignoring the token file", "err", err)
		return nil
	}
	data, err := safefile.ReadFile(s.path, &safefile.ReadOptions{MaxSize: maxFile, Private: true, NoFollow: true})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, safefile.ErrNotRegular):
		s.log.Warn("oauth token store: ignoring a token file that is not a regular file", "file", s.path)
		return nil
	case errors.Is(err, safefile.ErrNotPrivate):
		s.log.Warn("oauth token store: ignoring a token file that others can read", "file", s.path)
		return nil
	case err != nil:
		s.log.Warn("oauth token store: unreadable token file ignored", "file", s.path)
		return nil
	}
	var tf File
	if err := json.Unmarshal(data, &tf); err != nil {
		s.log.Warn("oauth token store: corrupt token file ignored", "file", s.path)
		return nil
	}
	if tf.Format != Format || tf.Server != s.server || tf.Token == nil || tf.Token.AccessToken == "" {
		return nil
	}
	return &tf
}

// Lock takes the token file's lock, waiting until it is free or ctx
// ends, and returns the function that releases it; it refuses a
// symbolic link at the file or its directory ([Store.Check]). The lock is not
// reentrant: a caller that holds it must not call Lock again.
func (s *Store) Lock(ctx context.Context) (unlock func(), err error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	unlock, err = safefile.Lock(ctx, s.path)
	if err != nil {
		return nil, fmt.Errorf("oauth token store: %w", err)
	}
	return unlock, nil
}

// Save writes f as the token file, atomically (a temporary file renamed
// over it) and with mode 0600, refusing a symbolic link at the file or
// its directory ([Store.Check]). The caller holds the lock
// ([Store.Lock]), having read the file again inside it, so that a token
// another process stored meanwhile is not overwritten unseen.
func (s *Store) Save(f *File) error {
	if err := s.Check(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("oauth token store: %w", err)
	}
	if err := safefile.WriteFile(s.path, data, nil); err != nil {
		return fmt.Errorf("oauth token store: %w", err)
	}
	return nil
}

// Load returns a token source of the stored token for endpoint, whose
// refreshes go through client. clientID and secret are the client the
// config names (both may be empty): the stored token of that client is
// refreshed with that secret, which the file does not hold. It returns
// nil when there is no token usable: no file, another URL, a file
// others can read, an expired token that cannot be refreshed, a token of
// the pre-registered client from an authorization server policy does not
// send it to (its refresh would carry the client's credentials there).
func (s *Store) Load(endpoint string, client *http.Client, clientID, secret string, policy *oauthguard.Policy) *TokenSource {
	tf := s.Read()
	switch {
	case tf == nil:
		return nil
	case tf.URLHash != URLHash(endpoint):
		s.log.Info("oauth token store: the stored token is for another URL; not used")
		return nil
	case !tf.Token.Valid() && tf.Token.RefreshToken == "":
		return nil // expired, and nothing to refresh it with
	case policy.Bound && tf.ClientID == clientID && (tf.Issuer == "" || policy.CheckIssuer("issuer", tf.Issuer) != nil):
		s.log.Info("oauth token store: the stored token is from another authorization server than the configured client's; not used")
		return nil
	}
	if tf.ClientSecret == "" && tf.ClientID == clientID {
		tf.ClientSecret = secret
	}
	s.scrub.Add(tf.Token.AccessToken, tf.Token.RefreshToken, tf.ClientSecret)
	cfg := &oauth2.Config{ClientID: tf.ClientID, ClientSecret: tf.ClientSecret, Scopes: tf.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: tf.TokenURL, AuthStyle: oauth2.AuthStyle(tf.AuthStyle)}}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, client)
	file := *tf
	file.Token = nil
	if file.ClientSecret == secret {
		file.ClientSecret = ""
	}
	return &TokenSource{store: s, cfg: cfg, ctx: ctx, file: file, tok: tf.Token, last: tf.Token.AccessToken, at: tf.SavedAt}
}

// NewTokenSource returns a token source of a token just obtained, tok,
// to be refreshed with cfg (under ctx, which carries the HTTP client of
// refreshes as [oauth2.HTTPClient]). file is what is stored beside the
// token (its Token and SavedAt are set at each store). The token is
// stored at its first use.
func (s *Store) NewTokenSource(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token, file File) *TokenSource {
	return &TokenSource{store: s, cfg: cfg, ctx: ctx, file: file, tok: tok, at: time.Now().UTC()}
}
