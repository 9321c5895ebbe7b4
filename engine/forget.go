package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/internal/oauth"
	"github.com/voltmcp/voltmcp/engine/internal/output"
	"github.com/voltmcp/voltmcp/engine/internal/pin"
	"github.com/voltmcp/voltmcp/engine/serverlog"
)

// Forgotten says what [Forget] deleted.
type Forgotten struct {
	// Pins is true when the server's pins and approval were deleted.
	Pins bool `json:"pins"`
	// Cache is true when its cached metadata was deleted.
	Cache bool `json:"cache"`
	// Outputs counts the stored outputs deleted, of every workspace.
	Outputs int `json:"outputs"`
	// Token is true when its OAuth token file was deleted (not revoked).
	Token bool `json:"token"`
	// Log is true when its log (engine/serverlog) was deleted.
	Log bool `json:"log"`
}

// Forget deletes what voltmcp keeps about the server srv under the agent
// directory agentDir, found by its identity ([cue.Server.Identity]): its
// pins, held changes and approval, its cached metadata, its stored
// outputs in every workspace's directory, its log, and, for an OAuth server, its
// token file (a token is bound to the URL it was issued for, and kept
// under the server's id). The token is deleted, not revoked (revoking
// needs the network; `voltmcp auth logout` does it). It also
// deletes the pin and cache files that versions before identities kept
// under the server's name, which nothing reads any more. `voltmcp
// remove` calls it for the definition it removed, so that a server added
// later under the same name starts with nothing. Every deletion is
// tried; the error joins the failures.
func Forget(ctx context.Context, agentDir string, srv cue.Server) (Forgotten, error) {
	var f Forgotten
	if agentDir == "" {
		return f, errors.New("forget: no agent directory")
	}
	ident := srv.Identity()
	var errs []error
	var err error
	if f.Pins, err = pin.Remove(pinDirOf(agentDir), ident); err != nil {
		errs = append(errs, err)
	}
	cache := cacheStore{dir: cacheDirOf(agentDir)}
	if f.Cache, err = removeFile(cache.path(ident)); err != nil {
		errs = append(errs, fmt.Errorf("metadata cache: %w", err))
	}
	if f.Outputs, err = output.RemoveServer(outputDirOf(agentDir), ident); err != nil {
		errs = append(errs, err)
	}
	if f.Log, err = serverlog.Remove(serverlog.Path(agentDir, ident)); err != nil {
		errs = append(errs, err)
	}
	if srv.Auth != nil && srv.Auth.Type == "oauth" {
		tokens := oauth.NewStore(oauth.Path(agentDir, srv.ID), srv.ID, nil)
		if f.Token, err = tokens.Discard(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	// The files of versions that keyed state by name. An id (48
	// characters at most) never has the length of an identity, so such
	// a file is never another server's identity file; the check keeps it
	// so.
	if len(srv.ID) != len(ident) {
		for _, legacy := range []string{filepath.Join(pinDirOf(agentDir), srv.ID+".json"), cache.path(srv.ID)} {
			if _, err := removeFile(legacy); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return f, errors.Join(errs...)
}

// removeFile removes path and reports whether it was there.
func removeFile(path string) (bool, error) {
	switch err := os.Remove(path); {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}
