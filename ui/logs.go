package ui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
)

// logRecords is how many of a server's last log records the logs screen
// asks for (read_mcp_server_log).
const logRecords = 500

// logFollow is how often the logs screen reads a followed log again,
// while it shows: a log has no event of its own.
const logFollow = time.Second

// LogRecord is one record of a server's log (McpLogRecord).
type LogRecord struct {
	Time string `json:"time"`
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// serverLog is read_mcp_server_log's answer (McpServerLog).
type serverLog struct {
	ID        string      `json:"id"`
	Records   []LogRecord `json:"records"`
	Truncated bool        `json:"truncated"`
}

// logMsg is a read of a server's log; logTickMsg asks for the next read
// of a followed log (gen tells a tick of an earlier opening apart).
type (
	logMsg struct {
		id  string
		log serverLog
		err error
	}
	logTickMsg struct{ gen int }
)

// logsView is a server's log: its last records in a pane, the newest at
// the bottom, read again every second while it is followed.
type logsView struct {
	id     string
	log    serverLog
	loaded bool
	err    string
	follow bool
	gen    int
	pane   viewport.Model
}

// open shows server id's log, followed.
func (v *logsView) open(m *Model, id string) tea.Cmd {
	*v = logsView{id: id, follow: true, gen: v.gen + 1, pane: viewport.New()}
	m.screen = screenLogs
	return tea.Batch(v.read(m), v.tick())
}

// read reads the log (read_mcp_server_log).
func (v *logsView) read(m *Model) tea.Cmd {
	id := v.id
	var res serverLog
	return m.call(mServerLog, map[string]any{"id": id, "limit": logRecords}, &res, func(err error) tea.Msg { return logMsg{id, res, err} })
}

func (v *logsView) tick() tea.Cmd {
	gen := v.gen
	return tea.Tick(logFollow, func(time.Time) tea.Msg { return logTickMsg{gen} })
}

func (v *logsView) update(m *Model, msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case logMsg:
		if msg.id != v.id {
			return nil
		}
		v.loaded = true
		if msg.err != nil {
			v.err = clean(msg.err.Error())
			return nil
		}
		bottom := v.pane.AtBottom() || v.pane.TotalLineCount() == 0
		v.log, v.err = msg.log, ""
		v.pane.SetContent(v.text(m.width))
		if bottom {
			v.pane.GotoBottom()
		}
	case logTickMsg:
		// Only the opening that started it, on show and followed, reads
		// again; another opening has ticks of its own.
		if msg.gen != v.gen || m.screen != screenLogs || !v.follow {
			return nil
		}
		return tea.Batch(v.read(m), v.tick())
	}
	return nil
}

func (v *logsView) key(m *Model, k tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(k, m.keys.Back):
		m.screen = screenList
	case key.Matches(k, m.keys.Follow):
		v.follow = !v.follow
		if v.follow {
			v.gen++
			return tea.Batch(v.read(m), v.tick())
		}
	case key.Matches(k, m.keys.Up):
		v.pane.ScrollUp(1)
	case key.Matches(k, m.keys.Down):
		v.pane.ScrollDown(1)
	case key.Matches(k, m.keys.PageUp):
		v.pane.PageUp()
	case key.Matches(k, m.keys.PageDown):
		v.pane.PageDown()
	case key.Matches(k, m.keys.Bottom):
		v.pane.GotoBottom()
	}
	return nil
}

// text is the pane's text: a line per record, "TIME KIND TEXT", every
// server's string cleaned, wrapped to the width.
func (v *logsView) text(width int) string {
	var b []string
	if v.log.Truncated {
		b = append(b, fmt.Sprintf("(the last %d records; voltmcp logs %s has the whole log)", len(v.log.Records), clean(v.id)))
	}
	for _, r := range v.log.Records {
		at := r.Time
		if t, err := time.Parse(time.RFC3339Nano, r.Time); err == nil {
			at = t.Local().Format("15:04:05.000")
		}
		b = append(b, wrap(clean(at)+" "+fit(clean(r.Kind), 6)+" "+clean(r.Text), width, 8)...)
	}
	return strings.Join(b, "\n")
}

// view draws the logs screen.
func (v *logsView) view(m *Model) string {
	lines := m.header()
	title := fmt.Sprintf("log of %s: %d records", clean(v.id), len(v.log.Records))
	if v.follow {
		title += " · following"
	}
	lines = append(lines, m.st.title.Render(cut(title, m.width)))
	v.pane.SetWidth(m.width)
	v.pane.SetHeight(max(1, m.height-len(lines)-2))
	switch {
	case !v.loaded:
		lines = append(lines, "  loading…")
	case v.err != "":
		lines = append(lines, "  "+cut(v.err, m.width-2))
	case len(v.log.Records) == 0:
		lines = append(lines, cut("  nothing logged: the server wrote nothing to stderr and its connection never failed", m.width))
	default:
		lines = append(lines, v.pane.View())
	}
	lines = strings.Split(strings.Join(lines, "\n"), "\n")
	for len(lines) < m.height-2 {
		lines = append(lines, "")
	}
	lines = append(lines, cut(m.helpLine(m.keys.logsHelp()), m.width), m.footer())
	return strings.Join(lines, "\n")
}
