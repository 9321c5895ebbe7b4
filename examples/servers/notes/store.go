package main

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// A note is one entry of the store.
type note struct {
	ID      string    `json:"id"`
	Title   string    `json:"title"`
	Body    string    `json:"body"`
	Tags    []string  `json:"tags,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// matches reports whether every word of query occurs in the note's title,
// body or tags, ignoring case.
func (n note) matches(query string) bool {
	text := strings.ToLower(n.Title + "\n" + n.Body + "\n" + strings.Join(n.Tags, " "))
	words := strings.Fields(strings.ToLower(query))
	for _, w := range words {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return len(words) > 0
}

// store holds notes in memory, in the order they were added. It is safe
// for concurrent use.
type store struct {
	mu    sync.Mutex
	notes []note
	next  int // number of the next id
	now   func() time.Time
}

// newStore returns a store holding notes, which keep their ids.
func newStore(notes []note, now func() time.Time) *store {
	return &store{notes: slices.Clone(notes), next: len(notes) + 1, now: now}
}

// list returns every note.
func (s *store) list() []note {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.notes)
}

// search returns the notes that match query.
func (s *store) search(query string) []note {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []note
	for _, n := range s.notes {
		if n.matches(query) {
			out = append(out, n)
		}
	}
	return out
}

// get returns the note with id.
func (s *store) get(id string) (note, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.index(id)
	if i < 0 {
		return note{}, false
	}
	return s.notes[i], true
}

// add stores a new note and returns it with its id.
func (s *store) add(title, body string) note {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.now().UTC()
	n := note{ID: fmt.Sprintf("n%d", s.next), Title: title, Body: body, Created: t, Updated: t}
	s.next++
	s.notes = append(s.notes, n)
	return n
}

// delete removes the note with id and reports whether there was one.
func (s *store) delete(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.index(id)
	if i < 0 {
		return false
	}
	s.notes = slices.Delete(s.notes, i, i+1)
	return true
}

func (s *store) index(id string) int {
	return slices.IndexFunc(s.notes, func(n note) bool { return n.ID == id })
}

// seedNotes are the notes the server starts with: a small team's notes
// around a product launch.
func seedNotes() []note {
	day := func(d int) time.Time { return time.Date(2025, time.March, d, 9, 30, 0, 0, time.UTC) }
	notes := []note{
		{Title: "Launch checklist", Tags: []string{"launch", "release"}, Body: "Freeze the release branch on Monday. Run the full test suite and the load test against staging. Update the status page, prepare the rollback plan, and make sure support has the FAQ before the announcement goes out."},
		{Title: "Launch announcement draft", Tags: []string{"launch", "marketing"}, Body: "Headline: one gateway for every MCP server. Three short paragraphs: the problem (too many tools in the prompt), what voltmcp does, how to try it in one command. Link the quick start and the security page."},
		{Title: "Launch retro", Tags: []string{"launch", "retro"}, Body: "What went well: the staged rollout and the rollback drill. What did not: the docs search broke for an hour and nobody owned the status page. Actions: name an owner per launch task and rehearse the announcement."},
		{Title: "Weekly sync 2025-03-03", Tags: []string{"meeting"}, Body: "Agreed on the launch date. Priya takes the load test, Tom the docs review. Open question: do we ship the SSE fallback on by default? Decision deferred to Thursday."},
		{Title: "Customer interview: Acme", Tags: []string{"research"}, Body: "Acme runs forty MCP servers across three teams. Pain points: token cost of tool lists, no audit trail, secrets pasted into config files. They would pay for policy controls before anything else."},
		{Title: "Incident 42: stuck connections", Tags: []string{"incident", "ops"}, Body: "A keep-alive server crashed in a loop and the backoff reset too early. Fixed by resetting only after a connection lasted a minute. Follow-up: alert on more than five reconnects an hour."},
		{Title: "Hiring plan Q2", Tags: []string{"team"}, Body: "Two backend engineers (Go), one developer advocate. Interview loop: a pairing session on a small MCP server, a design discussion, a values chat. Target start dates in May."},
		{Title: "Reading list", Tags: []string{"personal"}, Body: "The MCP specification (2025-06-18), the OAuth 2.1 draft, 'Designing Data-Intensive Applications' chapters 8 and 9, and the Go blog post on structured logging."},
		{Title: "Pricing ideas", Tags: []string{"business"}, Body: "Free for individuals. Team plan per seat with shared policies and the audit log. Enterprise: SSO, on-prem policy bundles, support SLA. Check with Acme whether per-seat works for them."},
		{Title: "Ideas backlog", Tags: []string{"product"}, Body: "Direct tools for the top five most used tools. A web view of the audit log. Import config from Cursor and VS Code in one command. Post-launch: a plugin gallery."},
	}
	for i := range notes {
		notes[i].ID = fmt.Sprintf("n%d", i+1)
		notes[i].Created = day(i + 1)
		notes[i].Updated = day(i + 2)
	}
	return notes
}
