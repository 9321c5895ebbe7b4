package engine

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/internal/line"
	"github.com/voltmcp/voltmcp/engine/internal/transport"
	"github.com/voltmcp/voltmcp/engine/internal/turn"
)

// stdioTransport starts a server as a child process ([transport.Start],
// which stops every process the child started when it stops) and speaks
// MCP over its stdin and stdout, one JSON-RPC message a line.
type stdioTransport struct {
	cmd     transport.Command
	maxLine int
	// check, when set, checks the work on the connection's reader
	// (Engine.readerCheck).
	check *turn.Check

	mu   sync.Mutex
	proc *transport.Process // the running child, for its exit status
	conn *line.Conn         // its connection, for the engine's own calls
}

// Connect starts the process.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	p, err := transport.Start(t.cmd)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.proc = p
	t.mu.Unlock()
	conn, err := (&line.Transport{Reader: p.Reader(), Writer: p, MaxMessage: t.maxLine, Client: true, Check: t.check}).Connect(ctx)
	if err != nil {
		p.Close()
		return nil, err
	}
	t.mu.Lock()
	t.conn, _ = conn.(*line.Conn)
	t.mu.Unlock()
	return conn, nil
}

// process is the child Connect started, or nil before it.
func (t *stdioTransport) process() *transport.Process {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.proc
}

// lineConn is the connection Connect made, or nil before it.
func (t *stdioTransport) lineConn() *line.Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conn
}
