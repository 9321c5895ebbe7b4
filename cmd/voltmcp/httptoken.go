package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/voltmcp/voltmcp/daemon"
)

// httpTokenBytes is how many random bytes make the bearer token of
// `voltmcp serve --http`.
const httpTokenBytes = 32

// maxTokenFile bounds what is read of a token file.
const maxTokenFile = 1 << 10

// defaultTokenFile is where `voltmcp serve --http` keeps its bearer
// token when --token-file does not say.
func defaultTokenFile(agentDir string) string {
	return filepath.Join(agentDir, "http", "token")
}

// loadOrCreateToken returns the bearer token kept in path, and whether
// it was made now. A file already there is used as it is, so that a
// client's config stays valid across restarts, provided it is a regular
// file (not a symlink), owned by this user, readable by no one else, in
// a directory no one else can write, and holds one valid token; anything
// else is refused by name, never replaced: something may be wrong. A
// missing file is created with O_EXCL|O_NOFOLLOW, mode 0600, holding a
// new token of httpTokenBytes bytes from crypto/rand, base64url. A
// missing directory is created 0700. Errors never hold the token.
func loadOrCreateToken(path string) (token string, created bool, err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, fmt.Errorf("token file %s: %w", path, err)
	}
	if err := daemon.CheckPrivateDir(dir); err != nil {
		return "", false, fmt.Errorf("token file %s: %w", path, err)
	}
	for range 2 {
		token, err = readTokenFile(path)
		if !errors.Is(err, fs.ErrNotExist) {
			return token, false, err
		}
		token, err = newToken()
		if err != nil {
			return "", false, err
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue // another serve made it in between: use its token
		}
		if err != nil {
			return "", false, fmt.Errorf("token file %s: %w", path, err)
		}
		_, werr := io.WriteString(f, token+"\n")
		if serr := f.Sync(); werr == nil {
			werr = serr
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			_ = os.Remove(path)
			return "", false, fmt.Errorf("token file %s: write: %w", path, werr)
		}
		return token, true, nil
	}
	return "", false, fmt.Errorf("token file %s: made and removed while being read; try again", path)
}

// newToken returns httpTokenBytes random bytes, base64url without
// padding.
func newToken() (string, error) {
	b := make([]byte, httpTokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make a token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// readTokenFile reads the token of an existing token file; the error
// wraps fs.ErrNotExist when there is none.
func readTokenFile(path string) (string, error) {
	f, err := openPrivateFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	if len(b) > maxTokenFile {
		return "", fmt.Errorf("token file %s: larger than %d bytes; delete it to make a new token", path, maxTokenFile)
	}
	token := strings.TrimSpace(string(b))
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) < httpTokenBytes {
		return "", fmt.Errorf("token file %s: does not hold a token (base64url of %d random bytes or more); delete it to make a new one", path, httpTokenBytes)
	}
	return token, nil
}

// gatewayTokens are the bearer tokens of this user's voltmcp serve
// --http that the engine refuses to send to an HTTP server
// (engine.Options.GatewayTokens): the token of the default token file,
// when there is a valid one, and serving (the token this serve serves
// with), when not "". A token file that cannot be read adds nothing:
// serve itself refuses to use it.
func gatewayTokens(agentDir, serving string) []string {
	var tokens []string
	if serving != "" {
		tokens = append(tokens, serving)
	}
	if tok, err := readTokenFile(defaultTokenFile(agentDir)); err == nil && tok != serving {
		tokens = append(tokens, tok)
	}
	return tokens
}
