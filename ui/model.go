package ui

import (
	"context"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// Options configure the UI.
type Options struct {
	// Client is the RPC connection; Events its inbox of mcp_event
	// notifications (nil: no live updates).
	Client Client
	Events *Events
	// Via says what the UI is connected to, for the header: "daemon" or
	// "own engine".
	Via string
	// Workspace is the project the UI manages, for the header.
	Workspace string
	// Plain draws without colour or style (NO_COLOR, TERM=dumb): the
	// selected row is marked by its ">" alone.
	Plain bool
}

// screen is one of the UI's views.
type screen int

const (
	screenList screen = iota
	screenInspect
	screenLogs
)

// Model is the UI: the state of every screen and the one that shows.
type Model struct {
	ctx    context.Context
	cancel context.CancelFunc
	opts   Options
	keys   keyMap
	help   help.Model
	st     styles

	width, height int
	screen        screen
	showHelp      bool

	list    listView
	inspect inspectView
	logs    logsView

	// servers is what the RPC last said of each server, by id.
	servers []ServerSummary
	loaded  bool
	// mcpOn is false when the gateway says MCP is turned off; notes are
	// the gateway status's notes (what did not load and why).
	mcpOn bool
	notes []string
	// inflight and dirty coalesce re-fetches: one request per server (""
	// for the list) at a time, and one more after it when an event came
	// meanwhile, so that a burst of events costs two requests and an
	// older answer never overwrites a newer one.
	inflight, dirty map[string]bool
	// message is the last action's outcome, shown in the footer.
	message string
	gone    error
}

// New returns the UI over opts' client. It makes no request until the
// program starts it (Init).
func New(ctx context.Context, opts Options) *Model {
	ctx, cancel := context.WithCancel(ctx)
	m := &Model{ctx: ctx, cancel: cancel, opts: opts, keys: newKeyMap(), help: help.New(), st: newStyles(opts.Plain),
		width: 80, height: 24, mcpOn: true, inflight: map[string]bool{}, dirty: map[string]bool{}}
	if opts.Plain {
		m.help.Styles = help.Styles{}
	}
	m.inspect.pane = viewport.New()
	return m
}

// Messages of the RPC's answers and the event stream.
type (
	subscribedMsg struct{ err error }
	listMsg       struct {
		servers []ServerSummary
		err     error
	}
	serverMsg struct {
		id  string
		s   *ServerSummary
		err error
	}
	actionMsg struct {
		verb, id string
		s        *ServerSummary
		err      error
	}
	statusMsg struct {
		st  gatewayStatus
		err error
	}
	eventMsg  struct{ ev Event }
	resyncMsg struct{}
	goneMsg   struct{ err error }
	toolsMsg  struct {
		id    string
		tools []Tool
		err   error
	}
	toolMsg struct {
		id, name string
		d        *ToolDetail
		err      error
	}
)

// Init subscribes to the events, then lists the servers.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.gatewayStatus(), m.waitGone()}
	if m.opts.Events != nil {
		cmds = append(cmds, m.call(mSubscribe, nil, nil, func(err error) tea.Msg { return subscribedMsg{err} }), m.waitEvent())
	} else {
		cmds = append(cmds, m.fetch(""))
	}
	return tea.Batch(cmds...)
}

// call makes one RPC call off the UI's goroutine and turns its outcome
// into a message.
func (m *Model) call(method string, params, result any, done func(error) tea.Msg) tea.Cmd {
	ctx, c := m.ctx, m.opts.Client
	return func() tea.Msg { return done(c.Call(ctx, method, params, result)) }
}

// fetch reads one server again (id) or the whole list (""), coalesced.
func (m *Model) fetch(id string) tea.Cmd {
	if m.inflight[id] {
		m.dirty[id] = true
		return nil
	}
	m.inflight[id] = true
	if id == "" {
		var res serverList
		return m.call(mListServers, nil, &res, func(err error) tea.Msg { return listMsg{res.Servers, err} })
	}
	var s ServerSummary
	return m.call(mGetServer, map[string]string{"id": id}, &s, func(err error) tea.Msg {
		if err != nil {
			return serverMsg{id: id, err: err}
		}
		return serverMsg{id: id, s: &s}
	})
}

// fetched ends a fetch, and starts the next when one was asked meanwhile.
func (m *Model) fetched(id string) tea.Cmd {
	m.inflight[id] = false
	if m.dirty[id] {
		m.dirty[id] = false
		return m.fetch(id)
	}
	return nil
}

func (m *Model) gatewayStatus() tea.Cmd {
	var st gatewayStatus
	return m.call(mGateway, map[string]string{"action": "status"}, &st, func(err error) tea.Msg { return statusMsg{st, err} })
}

// waitEvent waits for the next event, or a resync.
func (m *Model) waitEvent() tea.Cmd {
	ev, ctx := m.opts.Events, m.ctx
	return func() tea.Msg {
		select {
		case e := <-ev.ch:
			return eventMsg{e}
		case <-ev.resync:
			return resyncMsg{}
		case <-ctx.Done():
			return nil
		}
	}
}

// waitGone waits for the connection to end.
func (m *Model) waitGone() tea.Cmd {
	c, ctx := m.opts.Client, m.ctx
	return func() tea.Msg {
		select {
		case <-c.Done():
			return goneMsg{c.Err()}
		case <-ctx.Done():
			return nil
		}
	}
}

// action runs one of a server's actions, whose answer is its summary.
func (m *Model) action(verb, method string, params any, id string) tea.Cmd {
	var s ServerSummary
	return m.call(method, params, &s, func(err error) tea.Msg {
		if err != nil {
			return actionMsg{verb: verb, id: id, err: err}
		}
		return actionMsg{verb: verb, id: id, s: &s}
	})
}

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m, nil
	case tea.KeyPressMsg:
		return m, m.key(msg)
	case subscribedMsg:
		if msg.err != nil {
			m.message = "live updates are off: " + clean(msg.err.Error())
		}
		return m, m.fetch("")
	case listMsg:
		next := m.fetched("")
		if msg.err != nil {
			m.message = clean(msg.err.Error())
			return m, next
		}
		m.servers, m.loaded = msg.servers, true
		m.list.refilter(m)
		return m, next
	case serverMsg:
		next := m.fetched(msg.id)
		if msg.err != nil {
			// The server may be gone from the config: the list says.
			return m, tea.Batch(next, m.fetch(""))
		}
		m.put(*msg.s)
		return m, next
	case actionMsg:
		if msg.err != nil {
			m.message = fmt.Sprintf("%s %s: %s", msg.verb, clean(msg.id), clean(msg.err.Error()))
			return m, m.fetch(msg.id)
		}
		m.put(*msg.s)
		m.message = fmt.Sprintf("%s %s: %s", msg.verb, clean(msg.id), clean(msg.s.Status))
		return m, nil
	case statusMsg:
		if msg.err == nil {
			sc := msg.st.StructuredContent
			m.mcpOn = sc.Enabled == nil || *sc.Enabled
			m.notes = sc.Notes
		}
		return m, nil
	case eventMsg:
		return m, tea.Batch(m.event(msg.ev), m.waitEvent())
	case resyncMsg:
		return m, tea.Batch(m.fetch(""), m.gatewayStatus(), m.waitEvent())
	case goneMsg:
		m.gone = msg.err
		if m.gone == nil {
			m.gone = fmt.Errorf("the connection closed")
		}
		return m, nil
	case toolsMsg, toolMsg:
		return m, m.inspect.update(m, msg)
	case logMsg, logTickMsg:
		return m, m.logs.update(m, msg)
	}
	return m, nil
}

// event acts on one event: it reads again what the event says changed.
func (m *Model) event(ev Event) tea.Cmd {
	var cmds []tea.Cmd
	switch {
	case ev.Type == eventGap || ev.Type == eventReloaded || ev.Type == eventInvalid ||
		ev.Type == eventAuditErr || ev.Type == eventAuditBack || (ev.Type == eventServers && ev.Server == ""):
		cmds = append(cmds, m.fetch(""), m.gatewayStatus())
	case ev.Server != "":
		cmds = append(cmds, m.fetch(ev.Server))
	}
	if m.screen == screenInspect && ev.Server == m.inspect.id && (ev.Type == eventServers || ev.Type == "mcp_pins_changed") {
		cmds = append(cmds, m.inspect.load(m))
	}
	if m.screen == screenLogs && ev.Server == m.logs.id && ev.Type == "mcp_server_status_changed" {
		// A status change (an exit, an error) is often what the log
		// says next.
		cmds = append(cmds, m.logs.read(m))
	}
	return tea.Batch(cmds...)
}

// put sets one server's summary.
func (m *Model) put(s ServerSummary) {
	for i := range m.servers {
		if m.servers[i].ID == s.ID {
			m.servers[i] = s
			m.list.refilter(m)
			return
		}
	}
	m.servers = append(m.servers, s)
	m.list.refilter(m)
}

// key handles one key press on the screen that shows.
func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	if k.String() == "ctrl+c" {
		return m.quit()
	}
	if m.showHelp {
		m.showHelp = false
		return nil
	}
	if m.screen == screenList && m.list.typing || m.screen == screenInspect && m.inspect.typing {
		if m.screen == screenList {
			m.list.typeKey(m, k)
			return nil
		}
		return m.inspect.typeKey(m, k)
	}
	switch {
	case key.Matches(k, m.keys.Quit):
		return m.quit()
	case key.Matches(k, m.keys.Help):
		m.showHelp = true
		return nil
	}
	switch m.screen {
	case screenInspect:
		return m.inspect.key(m, k)
	case screenLogs:
		return m.logs.key(m, k)
	}
	return m.list.key(m, k)
}

func (m *Model) quit() tea.Cmd {
	m.cancel()
	return tea.Quit
}

// View draws the screen that shows.
func (m *Model) View() tea.View {
	var body string
	switch {
	case m.showHelp:
		body = m.helpView()
	case m.screen == screenInspect:
		body = m.inspect.view(m)
	case m.screen == screenLogs:
		body = m.logs.view(m)
	default:
		body = m.list.view(m)
	}
	v := tea.NewView(body)
	v.AltScreen = true
	v.WindowTitle = "voltmcp ui"
	return v
}

// header is the top two lines: MCP on or off, what the UI is connected
// to, the auth and error counts; then the note that matters most (a
// project config ignored because it is not trusted, first).
func (m *Model) header() []string {
	c := Count(m.servers)
	on := m.st.good.Render("MCP on")
	if !m.mcpOn {
		on = m.st.bad.Render("MCP off")
	}
	parts := []string{m.st.title.Render("voltmcp"), on}
	if m.opts.Via != "" {
		parts = append(parts, "via "+m.opts.Via)
	}
	if c.Auth > 0 {
		parts = append(parts, m.st.warn.Render(fmt.Sprintf("%d auth", c.Auth)))
	}
	if c.Errors > 0 {
		parts = append(parts, m.st.bad.Render(fmt.Sprintf("%d error", c.Errors)))
	}
	if m.opts.Workspace != "" {
		parts = append(parts, clean(m.opts.Workspace))
	}
	first := cut(strings.Join(parts, " · "), m.width)
	second := ""
	switch {
	case m.gone != nil:
		second = m.st.bad.Render(cut("disconnected: "+clean(m.gone.Error())+" (q to quit)", m.width))
	case c.Untrusted > 0:
		second = m.st.warn.Render(cut(fmt.Sprintf("project config ignored: not trusted (%d server(s) not loaded); review and trust it with 'voltmcp trust'", c.Untrusted), m.width))
	case len(m.notes) > 0:
		second = m.st.warn.Render(cut(clean(m.notes[0]), m.width))
	}
	return []string{first, second}
}

// footer is the status line and the last action's outcome.
func (m *Model) footer() string {
	line := StatusLine(m.servers)
	if !m.loaded {
		line = "MCP …"
	}
	if m.message != "" {
		line += " · " + m.message
	}
	return m.st.faint.Render(cut(line, m.width))
}

// helpLine is a screen's help line.
func (m *Model) helpLine(keys []key.Binding) string {
	m.help.SetWidth(m.width)
	return m.help.ShortHelpView(keys)
}

// helpView is the ? screen.
func (m *Model) helpView() string {
	full := m.keys.listFull()
	what := "server list"
	switch m.screen {
	case screenInspect:
		full, what = m.keys.inspectFull(), "tools of a server"
	case screenLogs:
		full, what = m.keys.logsFull(), "log of a server"
	}
	m.help.SetWidth(m.width)
	lines := []string{m.st.title.Render("voltmcp ui — keys (" + what + ")"), "", m.help.FullHelpView(full), ""}
	lines = append(lines, wrap("The list follows the daemon's event stream (mcp_events.v1): nothing is polled. "+
		"e writes the change to voltmcp's own overlay of the config layer that defines the server, as 'voltmcp enable' and 'disable' do. "+
		"docs/ui.md describes every column. Any key closes this help.", m.width, 6)...)
	return strings.Join(lines, "\n")
}

// styles are the UI's Lip Gloss styles; in plain mode, none.
type styles struct {
	title, good, bad, warn, faint, selected, head lipgloss.Style
}

func newStyles(plain bool) styles {
	if plain {
		s := lipgloss.NewStyle()
		return styles{s, s, s, s, s, s, s}
	}
	return styles{
		title:    lipgloss.NewStyle().Bold(true),
		good:     lipgloss.NewStyle().Foreground(lipgloss.Green),
		bad:      lipgloss.NewStyle().Foreground(lipgloss.Red),
		warn:     lipgloss.NewStyle().Foreground(lipgloss.Yellow),
		faint:    lipgloss.NewStyle().Faint(true),
		selected: lipgloss.NewStyle().Reverse(true),
		head:     lipgloss.NewStyle().Bold(true).Underline(true),
	}
}

// statusStyle colours a status.
func (st styles) status(s string) lipgloss.Style {
	switch s {
	case "ready", "connected":
		return st.good
	case "error":
		return st.bad
	case "needs_auth", "connecting":
		return st.warn
	case "disabled", "untrusted":
		return st.faint
	}
	return lipgloss.NewStyle()
}
