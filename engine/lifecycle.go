package engine

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// watch waits for a session to end. An end the supervisor did not ask for
// is a crash: the status becomes error, and a keep-alive server is
// reconnected after a backoff.
func (s *supervisor) watch(cs *mcp.ClientSession, gen uint64) {
	defer s.wg.Done()
	_ = cs.Wait()
	// Close even a session the server ended: it releases what the SDK
	// holds for it (the subscription stream, the process).
	_ = cs.Close()
	s.mu.Lock()
	current := s.gen == gen && s.session == cs
	if current {
		s.session, s.conn = nil, nil
		if s.endSession != nil {
			s.endSession()
			s.endSession = nil
		}
	}
	status := s.status
	s.mu.Unlock()
	if !current || status == StatusDisconnecting || s.ctx.Err() != nil {
		return
	}
	s.noteFailure()
	ended := errors.New("the server closed the connection")
	if s.cfg.IsStdio() {
		// Its exit status and stderr tail say why.
		_ = s.fail(s.explain("", fmt.Errorf("%w: %w", ended, io.EOF)))
	} else {
		_ = s.fail(s.withStderr(ended))
	}
	if s.cfg.Lifecycle == "keep-alive" {
		s.reconnectLater()
	}
}

// noteFailure counts a failure for the backoff, forgetting old ones once
// a connection has been stable.
func (s *supervisor) noteFailure() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.lastConnectedAt.IsZero() && time.Since(s.lastConnectedAt) > stableAfter {
		s.attempts = 0
	}
	s.attempts++
}

// backoff is the wait before reconnect attempt n: 0.5 s doubling, capped.
func backoff(n int) time.Duration {
	d := 500 * time.Millisecond
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// reconnectLater reconnects a keep-alive server after the backoff, and
// keeps trying until it succeeds or the supervisor closes.
func (s *supervisor) reconnectLater() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			s.mu.Lock()
			wait := backoff(s.attempts)
			s.mu.Unlock()
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(wait):
			}
			if st := s.getStatus(); st != StatusError {
				return // someone else connected, disconnected or disabled it
			}
			if _, err := s.ensure(s.ctx); err == nil || s.ctx.Err() != nil {
				return
			}
		}
	}()
}

// disconnect closes the session and stops the process; the status ends
// as final (cold after idling, disconnected on request, disabled).
func (s *supervisor) disconnect(final Status) {
	s.mu.Lock()
	s.stopIdleLocked()
	cs, end, ht := s.session, s.endSession, s.httpT
	s.session, s.conn, s.endSession = nil, nil, nil
	s.gen++
	s.mu.Unlock()
	if cs != nil {
		s.setStatus(StatusDisconnecting, "")
		if ht != nil {
			ht.EndSession()
		}
		if err := cs.Close(); err != nil {
			s.log.Debug("close session", "err", s.scrub.Err(err))
		}
	}
	if end != nil {
		end()
	}
	st := s.getStatus()
	switch {
	case st == final:
	case canMove(st, final):
		s.setStatus(final, "")
	case final == StatusDisabled && canMove(st, StatusDisconnecting):
		s.setStatus(StatusDisconnecting, "")
		s.setStatus(final, "")
	}
}

// closeSession ends a session after a failed discovery; the status stays
// error.
func (s *supervisor) closeSession(gen uint64) {
	s.mu.Lock()
	cs, end, ht := s.session, s.endSession, s.httpT
	if s.gen == gen {
		s.session, s.conn, s.endSession = nil, nil, nil
		s.gen++
	} else {
		cs, end = nil, nil
	}
	s.mu.Unlock()
	if cs != nil {
		if ht != nil {
			ht.EndSession()
		}
		_ = cs.Close()
	}
	if end != nil {
		end()
	}
}

// close stops everything the supervisor started.
func (s *supervisor) close() {
	s.cancel()
	s.disconnect(StatusDisconnected)
	s.wg.Wait()
	// What the server wrote last is in its log before the engine closes.
	_ = s.serverLog.Flush()
}
