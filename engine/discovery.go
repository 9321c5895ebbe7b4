package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/internal/bound"
	"github.com/voltmcp/voltmcp/engine/internal/output"
	"github.com/voltmcp/voltmcp/engine/internal/turn"
)

// maxPages bounds discovery: a server that pages forever is cut off.
const maxPages = 100

// discovery is one listing of a server's metadata in flight; done
// closes when it ends, err then saying how.
type discovery struct {
	done chan struct{}
	err  error
}

// wait waits for the discovery to end, or for ctx, and returns its
// error. It lets ctx's reader go first: a discovery takes a while.
func (d *discovery) wait(ctx context.Context) error {
	select {
	case <-d.done:
		return d.err
	default:
	}
	turn.Yield(ctx)
	select {
	case <-d.done:
		return d.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// discover lists the server's tools, resources, resource templates and
// prompts, following cursors within bounds, and caches the result.
// While it runs, s.discovery is it, for others to wait for.
func (s *supervisor) discover(ctx context.Context, cs *mcp.ClientSession) (err error) {
	d := &discovery{done: make(chan struct{})}
	s.mu.Lock()
	s.discovery = d
	s.mu.Unlock()
	defer func() {
		d.err = err
		s.mu.Lock()
		if s.discovery == d {
			s.discovery = nil
		}
		s.mu.Unlock()
		close(d.done)
	}()
	s.setStatus(StatusDiscovering, "")
	dctx, cancel := context.WithTimeout(ctx, ms(s.cfg.DiscoveryTimeoutMs))
	defer cancel()
	m, err := s.list(dctx, cs)
	if err != nil {
		if dctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			err = fmt.Errorf("discovery timed out after %s", ms(s.cfg.DiscoveryTimeoutMs))
		}
		return s.fail(fmt.Errorf("discover: %w", err))
	}
	// The tools are rated until the caller gives up or the engine
	// closes, whichever comes first: a classifier that takes its whole
	// deadline for each tool holds neither up for every tool in turn.
	rctx, stopRating := context.WithCancel(ctx)
	defer stopRating()
	defer context.AfterFunc(s.ctx, stopRating)()
	pinEvents, err := s.observePins(rctx, m)
	if err != nil {
		return s.fail(fmt.Errorf("discover: %w", err))
	}
	// The listing is stored with its tools' ratings, so that an engine
	// started later rates none of them again while its classifiers are
	// the same (see guard.rateListing). Rated before the new listing is
	// published: a rating stored with the old one still counts.
	m.Ratings = s.e.guard.Load().rateListing(rctx, s.cfg.ID, m)
	if err := s.e.cache.save(m); err != nil {
		s.log.Warn("metadata cache", "err", err)
	}
	s.mu.Lock()
	s.meta, s.cacheErr = m, ""
	s.listings++
	s.mu.Unlock()
	s.setStatus(StatusReady, "")
	if sum := boundsSummary(m); sum != "" {
		s.e.bus.publish(Event{Type: EventMetadataBounded, Server: s.cfg.ID, Message: sum})
	}
	for _, ev := range pinEvents {
		s.e.bus.publish(ev)
	}
	s.e.bus.publish(Event{Type: EventServersChanged, Server: s.cfg.ID})
	return nil
}

// list lists the server's metadata and bounds it (see bounder): nothing
// of it is kept unbounded, not even between pages.
func (s *supervisor) list(ctx context.Context, cs *mcp.ClientSession) (*Metadata, error) {
	l, limitNotes := s.lim, s.limNotes
	b := newBounder(s.cfg.ID, l)
	init := cs.InitializeResult()
	m := &Metadata{Format: cacheFormat, Server: s.cfg.ID, Identity: s.ident, FetchedAt: time.Now().UTC(), Tools: []Tool{}}
	s.mu.Lock()
	m.Transport = s.transport
	s.mu.Unlock()
	var caps *mcp.ServerCapabilities
	if init != nil {
		caps = init.Capabilities
		// What the server says of itself is untrusted text like its
		// tools' metadata: cleaned, and capped like a title.
		// Secrets are scrubbed before clipping too, which could leave a
		// secret's first characters.
		clean := func(t string, maxChars int) string { return output.CleanText(s.scrub.Text(t), maxChars) }
		m.ProtocolVersion = clean(init.ProtocolVersion, serverInfoMaxChars)
		if init.ServerInfo != nil {
			m.Name = clean(init.ServerInfo.Name, serverInfoMaxChars)
			m.Title = clean(init.ServerInfo.Title, l.MaxTitleChars)
			m.Version = clean(init.ServerInfo.Version, serverInfoMaxChars)
		}
		m.Capabilities, _ = json.Marshal(caps)
	}
	if caps == nil || caps.Tools != nil {
		err := pages(ctx, "tools", &m.Notes, func(cursor string) (string, error) {
			r, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
			if err != nil {
				return "", s.explain("tools/list", err)
			}
			s.mu.Lock()
			tasks := s.tasks.Take()
			s.mu.Unlock()
			page := make([]Tool, 0, len(r.Tools))
			for _, t := range r.Tools {
				if t == nil {
					continue
				}
				tool := rawToolOf(t)
				tool.TaskSupport = tasks[t.Name]
				page = append(page, tool)
			}
			b.addTools(scrubTools(m, page, &s.scrub, true))
			return r.NextCursor, nil
		})
		if err != nil {
			return nil, err
		}
	}
	if caps != nil && caps.Resources != nil {
		err := pages(ctx, "resources", &m.Notes, func(cursor string) (string, error) {
			r, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
			if err != nil {
				return "", s.explain("resources/list", err)
			}
			for _, x := range r.Resources {
				if x != nil {
					m.Resources = append(m.Resources, Resource{URI: x.URI, Name: x.Name, Title: x.Title, Description: x.Description, MIMEType: x.MIMEType, Size: x.Size})
				}
			}
			return r.NextCursor, nil
		})
		if err != nil {
			return nil, err
		}
		err = pages(ctx, "resource templates", &m.Notes, func(cursor string) (string, error) {
			r, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
			if err != nil {
				return "", s.explain("resources/templates/list", err)
			}
			for _, x := range r.ResourceTemplates {
				if x != nil {
					m.ResourceTemplates = append(m.ResourceTemplates, ResourceTemplate{URITemplate: x.URITemplate, Name: x.Name, Title: x.Title, Description: x.Description, MIMEType: x.MIMEType})
				}
			}
			return r.NextCursor, nil
		})
		if err != nil {
			m.Notes = append(m.Notes, "resource templates: "+s.scrub.Err(err).Error())
		}
	}
	if caps != nil && caps.Prompts != nil {
		err := pages(ctx, "prompts", &m.Notes, func(cursor string) (string, error) {
			r, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
			if err != nil {
				return "", s.explain("prompts/list", err)
			}
			for _, x := range r.Prompts {
				if x == nil {
					continue
				}
				p := Prompt{Name: x.Name, Title: x.Title, Description: x.Description}
				for _, a := range x.Arguments {
					if a != nil {
						p.Arguments = append(p.Arguments, PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
					}
				}
				m.Prompts = append(m.Prompts, p)
			}
			return r.NextCursor, nil
		})
		if err != nil {
			return nil, err
		}
	}
	// What a server lists is scrubbed of its secrets as it comes (before
	// bounding clips a text, which could leave a secret's first
	// characters) and once bounded (cleaning may join a secret split by
	// hidden characters): before it is pinned, cached, indexed or shown.
	scrubMetadata(m, &s.scrub)
	dropped, cleaned := m.Dropped, m.Cleaned
	b.finish(m)
	m.Dropped = append(dropped, m.Dropped...)[:min(len(dropped)+len(m.Dropped), bound.MaxListedItems)]
	m.Cleaned = append(cleaned, m.Cleaned...)[:min(len(cleaned)+len(m.Cleaned), bound.MaxListedItems)]
	m.Notes = append(m.Notes, limitNotes...)
	m.Limits = limitsKey(l)
	scrubMetadata(m, &s.scrub)
	return m, nil
}

// pages calls page with each cursor until there is none, at most
// maxPages times, and stops early at a cursor it has seen before.
func pages(ctx context.Context, what string, notes *[]string, page func(cursor string) (string, error)) error {
	seen := map[string]bool{}
	cursor := ""
	for i := 0; ; i++ {
		if i == maxPages {
			*notes = append(*notes, fmt.Sprintf("%s: stopped after %d pages", what, maxPages))
			return nil
		}
		next, err := page(cursor)
		if err != nil {
			return fmt.Errorf("list %s: %w", what, err)
		}
		if next == "" {
			return nil
		}
		if seen[next] {
			*notes = append(*notes, fmt.Sprintf("%s: the server repeated a cursor; stopped after %d pages", what, i+1))
			return nil
		}
		seen[next] = true
		cursor = next
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// toolOf converts a listed tool, as is, and hashes it.
func toolOf(t *mcp.Tool) Tool {
	out := rawToolOf(t)
	out.Hash = toolHash(out)
	return out
}

// rawToolOf converts a listed tool, as is, without its hash: the bounder
// hashes what it keeps.
func rawToolOf(t *mcp.Tool) Tool {
	out := Tool{Name: t.Name, Title: t.Title, Description: t.Description}
	if t.InputSchema != nil {
		out.InputSchema, _ = json.Marshal(t.InputSchema)
	}
	if t.OutputSchema != nil {
		out.OutputSchema, _ = json.Marshal(t.OutputSchema)
	}
	if t.Annotations != nil {
		out.Annotations, _ = json.Marshal(t.Annotations)
	}
	return out
}

// refreshAsync refreshes the metadata in the background, once at a time,
// when the server says a list changed. A change announced during a
// refresh is not lost: the refresh runs once more.
func (s *supervisor) refreshAsync(why string) {
	s.mu.Lock()
	if s.session == nil || s.ctx.Err() != nil {
		s.mu.Unlock()
		return
	}
	if s.refreshing {
		// The refresh running may have listed before the change that
		// asks for this one: it runs once more when it ends.
		s.refreshAgain = true
		s.mu.Unlock()
		return
	}
	s.refreshing = true
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		for {
			s.log.Debug("refreshing metadata", "why", why)
			ctx, cancel := context.WithTimeout(s.ctx, ms(s.cfg.DiscoveryTimeoutMs))
			_ = s.refresh(ctx)
			cancel()
			s.mu.Lock()
			again := s.refreshAgain && s.session != nil && s.ctx.Err() == nil
			s.refreshAgain = false
			if !again {
				s.refreshing = false
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
			why = "changed while refreshing"
		}
	}()
}

// refresh lists the metadata again on the current session, connecting
// first if needed; a connection made for it lists once, not twice (a
// server that changes its list between two listings would otherwise be
// seen changing by one refresh).
//
// A refresh asked for while a discovery runs (the first one of a
// connection, or another refresh) waits for that discovery and returns
// its result, bounded by the discovery's own timeout and by ctx: many
// first calls to a server that was never listed all wait for the one
// listing, rather than find no metadata yet.
func (s *supervisor) refresh(ctx context.Context) error {
	return s.relist(ctx, false)
}

// refreshStale is refresh for metadata that is missing or stale (see
// stale), which it checks under the same hold of s.mu as the listing in
// flight: metadata a listing (a first use's, one [Engine.ListUnlisted]
// began) set just before is not listed again, which would number a new
// listing after the one a call in flight was decided on.
func (s *supervisor) refreshStale(ctx context.Context) error {
	return s.relist(ctx, true)
}

// relist is refresh, or refreshStale when onlyStale is set.
func (s *supervisor) relist(ctx context.Context, onlyStale bool) error {
	for {
		s.mu.Lock()
		if onlyStale && s.discovery == nil && !s.staleLocked() {
			s.mu.Unlock()
			return nil
		}
		// A session still connecting is not connected yet: its
		// discovery lists what this refresh would.
		d, connected := s.discovery, s.session != nil && s.connecting == nil
		s.mu.Unlock()
		if d == nil {
			cs, err := s.ensure(ctx)
			if err != nil {
				return err
			}
			s.mu.Lock()
			d = s.discovery // one that began while ensure ran
			s.mu.Unlock()
			if d == nil {
				if !connected {
					return nil // connecting discovered it just now
				}
				if s.getStatus() != StatusReady {
					return nil // the session ended meanwhile: the next use connects
				}
				turn.Yield(ctx)
				return s.discover(ctx, cs)
			}
		}
		err := d.wait(ctx)
		if err != nil && ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			// The discovery ran under the context of a caller who gave
			// up on it; this one has not: try again.
			continue
		}
		return err
	}
}

// stale reports whether the metadata is missing or older than
// metadataRefreshMs.
func (s *supervisor) stale() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.staleLocked()
}

// staleLocked is stale with s.mu held.
func (s *supervisor) staleLocked() bool {
	return s.meta == nil || s.meta.Stale(ms(s.cfg.MetadataRefreshMs), time.Now())
}

// anyListing is the listing of a call no decision gates.
const anyListing = ^uint64(0)

// errListedMeanwhile is why a call was not sent: the server's tools were
// listed again between the call's decision and its dispatch.
var errListedMeanwhile = errors.New("the server's tools were listed again while the call was being decided")

// listing is what a decision about one of the server's tools is made on:
// its metadata, the number of the discovery that listed it (0 for the
// cache a previous run wrote) and whether a session is open and done
// connecting (its discovery listed meta).
type listing struct {
	meta      *Metadata
	num       uint64
	connected bool
}

// currentListing returns the server's current listing.
func (s *supervisor) currentListing() listing {
	s.mu.Lock()
	defer s.mu.Unlock()
	return listing{meta: s.meta, num: s.listings, connected: s.session != nil && s.connecting == nil}
}

// listedOrAwait returns the server's current listing, as currentListing
// does; when the server was never listed and a listing of it is in
// flight (a discovery, or a connect, whose discovery follows), it first
// waits for that listing to end, so that who needs the metadata while
// the first listing runs finds it rather than "not listed yet"; a
// listing [Engine.ListUnlisted] queued and not begun yet is waited for
// too. It never starts a listing. The wait is bounded by ctx, by within when within is
// positive, and by the listing's own timeouts (connectTimeoutMs,
// discoveryTimeoutMs): past them the listing found so far is returned.
func (s *supervisor) listedOrAwait(ctx context.Context, within time.Duration) listing {
	// The usual case, a server with metadata, is one lock, as
	// currentListing is.
	s.mu.Lock()
	inFlight := s.firstListingLocked()
	if inFlight == nil {
		l := listing{meta: s.meta, num: s.listings, connected: s.session != nil && s.connecting == nil}
		s.mu.Unlock()
		return l
	}
	s.mu.Unlock()
	if within <= 0 {
		within = ms(s.cfg.ConnectTimeoutMs) + ms(s.cfg.DiscoveryTimeoutMs)
	}
	timer := time.NewTimer(within)
	defer timer.Stop()
	turn.Yield(ctx) // a listing takes a while
	for inFlight != nil {
		select {
		case <-inFlight:
		case <-timer.C:
			return s.currentListing()
		case <-ctx.Done():
			return s.currentListing()
		}
		s.mu.Lock()
		inFlight = s.firstListingLocked()
		s.mu.Unlock()
	}
	return s.currentListing()
}

// firstListingLocked returns, with s.mu held, what closes when the
// first listing in flight ends, or nil when the server has metadata or
// nothing lists it now. A listing [Engine.ListUnlisted] queued counts as
// in flight from when it is queued, begun or not.
func (s *supervisor) firstListingLocked() <-chan struct{} {
	switch {
	case s.meta != nil:
		return nil
	case s.discovery != nil:
		return s.discovery.done
	case s.connecting != nil:
		return s.connecting
	case s.atStart != nil:
		return s.atStart.done
	}
	return nil
}
