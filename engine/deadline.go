package engine

import (
	"context"
	"time"

	"github.com/voltmcp/voltmcp/engine/internal/deadline"
)

// callDeadlines end an engine's tool calls whose time is up
// (supervisor.call), with one timer for all of them: see
// [deadline.Timer]. The zero value is ready to use.
type callDeadlines struct{ t deadline.Timer }

// withTimeout is [deadline.Timer.WithTimeout].
func (d *callDeadlines) withTimeout(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return d.t.WithTimeout(parent, timeout)
}
