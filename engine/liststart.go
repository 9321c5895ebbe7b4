package engine

import (
	"context"
	"sort"
)

// listAtStartAtOnce bounds how many servers [Engine.ListUnlisted] lists
// at the same time.
const listAtStartAtOnce = 4

// startListing is the listing [Engine.ListUnlisted] queued for a
// server.
type startListing struct {
	// done closes when the listing ends: listed, failed or skipped.
	done chan struct{}
	// uses is the server's use count (supervisor.use) when the listing
	// was queued: a use since keeps a lazy server running after it.
	uses uint64
}

// ListUnlisted lists, in the background, each enabled server that is
// cold and has no metadata (cached or discovered), so that an agent's
// first search finds its tools; serve calls it once when it starts, and
// [Engine.Reload] calls it again, with the ctx of that first call, for
// the servers a reload adds. At most four servers are listed at a time
// (by each call).
//
// Such a listing is what a first use of the server would do, and
// nothing else: what asks for the server meanwhile sees it as being
// listed. A call, describe or any other action on the server waits for
// the listing in flight and is decided on what it listed, pin changes
// included, as if the listing had come first. A call or connect on a
// server whose listing is queued but not begun lists it itself, as it
// would without ListUnlisted, and the queued listing is then skipped;
// describe and the other actions that never start a server wait for the
// queued listing, within the server's connect and discovery timeouts. A
// search waits for queued and running listings briefly and says which
// servers were still being listed.
//
// A server that is neither eager nor keep-alive is stopped again after
// its listing, unless something used it since it was queued: then it
// stays, as after any use, until its idle timer stops it. A failure
// only shows in the server's status (error, with lastError saying why).
// Listings not begun when ctx ends are dropped; those begun end with
// the Engine ([Engine.Close]) or their connect and discovery timeouts.
// It does nothing when the setting listAtStart is false or the gateway
// is turned off, and returns the servers it queued, sorted.
func (e *Engine) ListUnlisted(ctx context.Context) []string {
	e.mu.Lock()
	if e.listCtx == nil {
		e.listCtx = ctx
	}
	e.mu.Unlock()
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
		if s.status == StatusCold && s.meta == nil && s.atStart == nil {
			s.atStart = &startListing{done: make(chan struct{}), uses: s.uses}
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
			defer s.endStartListing()
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

// endStartListing ends the listing ListUnlisted queued, waking whoever
// waits for it.
func (s *supervisor) endStartListing() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.atStart != nil {
		close(s.atStart.done)
		s.atStart = nil
	}
}

// listAtStart lists a server for ListUnlisted by connecting it, which
// lists it, unless something listed it or began to meanwhile (a use
// that came first lists it itself), and then stops a lazy server again
// unless it was used since it was queued.
//
// It connects through ensure, as any use does, and never lists a
// connected server a second time: a call decided on the listing a use
// made must not find another one numbered after it (errListedMeanwhile).
func (s *supervisor) listAtStart() {
	s.mu.Lock()
	untouched := s.status == StatusCold && s.meta == nil
	s.mu.Unlock()
	if !untouched || s.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, ms(s.cfg.ConnectTimeoutMs)+ms(s.cfg.DiscoveryTimeoutMs))
	_, err := s.ensure(ctx)
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
	// Whether to stop is decided, and the stop begun, under one hold of
	// s.mu: an action counts its use (use) before it reads the listing
	// or asks for the session, so either the use came first and the
	// server stays, or the action finds the connecting slot held (its
	// listing then says not connected, and ensure waits for the stop)
	// and starts the server again, deciding on what that lists. No
	// action decides on a session this stop then closes.
	s.mu.Lock()
	l := s.atStart
	if l == nil || s.uses != l.uses || s.inflight > 0 || s.connecting != nil || s.session == nil || s.status != StatusReady {
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

// use counts a use of the server: an action on it (see [Engine.use]).
// A lazy server listed at start stays running when it was used since
// its listing was queued (listAtStart).
func (s *supervisor) use() {
	s.mu.Lock()
	s.uses++
	s.mu.Unlock()
}

// use returns the supervisor of the server id for an action on it (a
// call, describe, connect, a resource or prompt read, a refresh), and
// counts the use (supervisor.use) before the action reads anything of
// the server. What only reads status or metadata for the user (status,
// search, pins) looks the server up with supervisor instead.
func (e *Engine) use(id string) (*supervisor, error) {
	s, err := e.supervisor(id)
	if err != nil {
		return nil, err
	}
	s.use()
	return s, nil
}
