//go:build !unix

package daemon

import (
	"context"
	"errors"
)

// Start is not built here: the daemon serves on a unix socket.
func Start(ctx context.Context, agentDir, exe string, args, env []string) error {
	return errors.New("starting a voltmcp daemon in the background needs a unix system")
}
