package engine

import (
	"context"
	"sort"
)

// listAtStartAtOnce bounds how many servers [Engine.ListUnlisted] lists
// at the same time.
const listAtStartAtOnce = 4

// ListUnlisted lists, in the background, each enabled server that is
// cold and has no metadata (cached or discovered), so that an agent's
// first search finds its tools; serve calls it once when it starts. At
// most four servers are listed at a time. A server that is neither
// eager nor keep-alive is stopped again after its listing, unless a
// call is in flight on it then (its idle timer stops it later); a failure only shows in the server's status.
// A search made while these listings are queued or in flight waits for
// them briefly and says so. Listings not begun when ctx ends are
// dropped; those begun end with the Engine ([Engine.Close]) or their
// connect and discovery timeouts. It does nothing when the setting
// listAtStart is false or the gateway is turned off, and returns the
// servers it queued, sorted.
func (e *Engine) ListUnlisted(ctx context.Context) []string {
	if e.TurnedOff() != "" || !e.Config().Settings.ListAtStart {
		return nil
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	var sups []*supervisor
	for _, s := range e.servers {
		s.mu.Lock()
		if s.status == StatusCold && s.meta == nil && s.queued == nil {
			s.queued = make(chan struct{})
			s.wg.Add(1)
			sups = append(sups, s)
		}
		s.mu.Unlock()
	}
	e.mu.Unlock()
	sort.Slice(sups, func(i, j int) bool { return sups[i].cfg.ID < sups[j].cfg.ID })
	ids := make([]string, 0, len(sups))
	sem := make(chan struct{}, listAtStartAtOnce)
	for _, s := range sups {
		ids = append(ids, s.cfg.ID)
		go func() {
			defer s.wg.Done()
			defer s.endQueued()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			case <-s.ctx.Done():
				return
			}
			defer func() { <-sem }()
			s.listAtStart()
		}()
	}
	return ids
}

// endQueued ends the listing ListUnlisted queued, waking the searches
// that wait for it.
func (s *supervisor) endQueued() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queued != nil {
		close(s.queued)
		s.queued = nil
	}
}

// listAtStart lists a server for ListUnlisted, as voltmcp refresh does,
// unless something started it meanwhile, and stops a lazy one again.
func (s *supervisor) listAtStart() {
	s.mu.Lock()
	untouched := s.status == StatusCold && s.meta == nil
	s.mu.Unlock()
	if !untouched || s.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, ms(s.cfg.ConnectTimeoutMs)+ms(s.cfg.DiscoveryTimeoutMs))
	err := s.refresh(ctx)
	cancel()
	if err != nil {
		// The status is error, with lastError saying why; whatever
		// failed closed its own session.
		s.log.Debug("listing at start failed", "err", s.scrub.Err(err))
		return
	}
	if s.cfg.Lifecycle == "eager" || s.cfg.Lifecycle == "keep-alive" {
		return
	}
	// Connecting counts as a use (touch), so lastUse cannot tell
	// whether a call came meanwhile; one still in flight keeps it. The
	// stop holds the connecting slot, so that a call arriving meanwhile
	// waits for it in ensure and then starts the server again, rather
	// than fail to connect while it is disconnecting.
	s.mu.Lock()
	if s.inflight > 0 || s.connecting != nil {
		s.mu.Unlock()
		return
	}
	hold := make(chan struct{})
	s.connecting = hold
	s.mu.Unlock()
	s.disconnect(StatusCold)
	s.mu.Lock()
	s.connecting = nil
	s.mu.Unlock()
	close(hold)
}
