package engine

import (
	"fmt"
	"path/filepath"

	"github.com/voltmcp/voltmcp/engine/internal/transport"
	"github.com/voltmcp/voltmcp/engine/serverlog"
)

// explain words an error that ended an exchange with the server during
// op (a JSON-RPC method, such as "tools/call"; "" for none) so that it
// names the server, the operation and the cause (see
// [transport.Explain]): for a stdio server that exited, its exit status
// or signal and the last lines of its stderr (scrubbed); for an HTTP
// server, the HTTP status or how the connection ended; for an answer
// nested too deep, the limit. Other errors (a timeout, the server's own
// error answer) come back as they are. It runs only on an error path: a
// call that succeeds never gets here.
//
// An error it explains (a transport error: a connection that ended or
// was refused, an exit, an answer nested too deep) is recorded in the
// server's log, once: [supervisor.fail] leaves such an error out of the
// log. One that quotes a stderr tail names the log.
func (s *supervisor) explain(op string, err error) error {
	out := transport.Explain(transport.Peer{Server: s.cfg.ID, Stdio: s.cfg.IsStdio(), Last: s.lastTransport, Stderr: s.stderr,
		Log: s.logHint(), Scrub: &s.scrub}, op, err)
	if out != err {
		s.serverLog.Record(serverlog.KindError, out.Error())
	}
	return out
}

// logHint says how to see the server's whole log and where its file is.
func (s *supervisor) logHint() string {
	return fmt.Sprintf("voltmcp logs %s (%s)", s.cfg.ID, s.logFile())
}

// logFile is the server's log file, under the home directory shortened
// to "~".
func (s *supervisor) logFile() string {
	path := s.serverLog.Path()
	if home := s.e.opts.Home; home != "" {
		if rel, err := filepath.Rel(home, path); err == nil && filepath.IsLocal(rel) {
			path = filepath.Join("~", rel)
		}
	}
	return path
}

// lastTransport returns the last stdio process started and the last
// HTTP transport made for the server, either nil.
func (s *supervisor) lastTransport() (*transport.Process, *transport.HeaderTransport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc, s.httpT
}
