package transport

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/internal/line"
	"github.com/voltmcp/voltmcp/engine/internal/turn"
)

// Stdio is the [mcp.Transport] of a stdio server: it starts the server
// as a child process ([Start], which stops every process the child
// started when it stops) and speaks MCP over its stdin and stdout, one
// JSON-RPC message a line ([line.Transport]). It connects once.
type Stdio struct {
	// Command is the child to start.
	Command Command
	// MaxLine bounds a message from the server, in bytes; 0 is
	// [line.Transport]'s default.
	MaxLine int
	// Check, when set, checks the work on the connection's reader (see
	// [turn.Check]).
	Check *turn.Check
	// Tap, when set, sees the connection's messages (see [line.Tap]).
	Tap line.Tap
	// PeerMethods lists the methods of the server's requests that the
	// client answers (see [line.Transport]).
	PeerMethods []string

	mu   sync.Mutex
	proc *Process   // the running child, for its exit status
	conn *line.Conn // its connection, for the engine's own calls
}

// Connect starts the process.
func (t *Stdio) Connect(ctx context.Context) (mcp.Connection, error) {
	p, err := Start(t.Command)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.proc = p
	t.mu.Unlock()
	conn, err := (&line.Transport{Reader: p.Reader(), Writer: p, MaxMessage: t.MaxLine, Client: true, Check: t.Check, Tap: t.Tap, PeerMethods: t.PeerMethods}).Connect(ctx)
	if err != nil {
		p.Close()
		return nil, err
	}
	t.mu.Lock()
	t.conn, _ = conn.(*line.Conn)
	t.mu.Unlock()
	return conn, nil
}

// Process is the child Connect started, or nil before it.
func (t *Stdio) Process() *Process {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.proc
}

// Conn is the connection Connect made, or nil before it.
func (t *Stdio) Conn() *line.Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conn
}
