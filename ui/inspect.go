package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
)

// inspectView is a server's tools: a list with a search box, and the
// describe pane of the selected tool.
type inspectView struct {
	id       string
	tools    []Tool
	loaded   bool
	err      string
	rows     []int
	selected string
	search   string
	typing   bool
	top      int
	details  map[string]*ToolDetail
	failed   map[string]string
	pane     viewport.Model
	shown    string // the tool whose details the pane holds
}

// open shows server id's tools.
func (v *inspectView) open(m *Model, id string) tea.Cmd {
	*v = inspectView{id: id, details: map[string]*ToolDetail{}, failed: map[string]string{}, pane: viewport.New()}
	m.screen = screenInspect
	return v.load(m)
}

// load lists the server's tools (list_mcp_tools).
func (v *inspectView) load(m *Model) tea.Cmd {
	id := v.id
	var res toolList
	return m.call(mListTools, map[string]string{"id": id}, &res, func(err error) tea.Msg { return toolsMsg{id, res.Tools, err} })
}

// describe gets one tool's details (get_mcp_tool).
func (v *inspectView) describe(m *Model, name string) tea.Cmd {
	if name == "" || v.details[name] != nil || v.failed[name] != "" {
		return nil
	}
	id := v.id
	var d ToolDetail
	return m.call(mGetTool, map[string]string{"id": id, "name": name}, &d, func(err error) tea.Msg {
		if err != nil {
			return toolMsg{id: id, name: name, err: err}
		}
		return toolMsg{id: id, name: name, d: &d}
	})
}

func (v *inspectView) update(m *Model, msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case toolsMsg:
		if msg.id != v.id {
			return nil
		}
		v.loaded = true
		if msg.err != nil {
			v.err = clean(msg.err.Error())
			return nil
		}
		v.tools, v.err = msg.tools, ""
		// A listing that changed may change a tool's details.
		clear(v.details)
		clear(v.failed)
		v.shown = ""
		v.refilter()
		return v.describe(m, v.selected)
	case toolMsg:
		if msg.id != v.id {
			return nil
		}
		if msg.err != nil {
			v.failed[msg.name] = clean(msg.err.Error())
		} else {
			v.details[msg.name] = msg.d
		}
		v.shown = ""
	}
	return nil
}

func (v *inspectView) refilter() {
	v.rows = v.rows[:0]
	q := strings.ToLower(v.search)
	for i, t := range v.tools {
		if q == "" || strings.Contains(strings.ToLower(clean(t.Name+" "+t.Title+" "+t.Description)), q) {
			v.rows = append(v.rows, i)
		}
	}
	if v.current() == nil {
		v.selected = ""
		if len(v.rows) > 0 {
			v.selected = v.tools[v.rows[0]].Name
		}
	}
}

func (v *inspectView) current() *Tool {
	for _, i := range v.rows {
		if v.tools[i].Name == v.selected {
			return &v.tools[i]
		}
	}
	return nil
}

func (v *inspectView) position() int {
	for n, i := range v.rows {
		if v.tools[i].Name == v.selected {
			return n
		}
	}
	return 0
}

func (v *inspectView) move(m *Model, by int) tea.Cmd {
	if len(v.rows) == 0 {
		return nil
	}
	at := min(max(v.position()+by, 0), len(v.rows)-1)
	v.selected = v.tools[v.rows[at]].Name
	return v.describe(m, v.selected)
}

func (v *inspectView) key(m *Model, k tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(k, m.keys.Back):
		if v.search != "" {
			v.search = ""
			v.refilter()
			return v.describe(m, v.selected)
		}
		m.screen = screenList
	case key.Matches(k, m.keys.Up):
		return v.move(m, -1)
	case key.Matches(k, m.keys.Down):
		return v.move(m, 1)
	case key.Matches(k, m.keys.PageDown):
		v.pane.PageDown()
	case key.Matches(k, m.keys.PageUp):
		v.pane.PageUp()
	case key.Matches(k, m.keys.Filter):
		v.typing = true
	}
	return nil
}

func (v *inspectView) typeKey(m *Model, k tea.KeyPressMsg) tea.Cmd {
	v.search, v.typing = editLine(v.search, k)
	v.refilter()
	return v.describe(m, v.selected)
}

// view draws the tools screen: the list on top, the describe pane under
// it.
func (v *inspectView) view(m *Model) string {
	lines := m.header()
	title := fmt.Sprintf("tools of %s: %d cached", clean(v.id), len(v.tools))
	if v.search != "" || v.typing {
		title += fmt.Sprintf(" · %d match /%s", len(v.rows), v.search)
		if v.typing {
			title += "█"
		}
	}
	lines = append(lines, m.st.title.Render(cut(title, m.width)))
	avail := max(4, m.height-len(lines)-2)
	listH := max(2, avail/2-1)
	paneH := max(1, avail-listH-1)
	nameW := min(28, max(12, m.width/3))
	rows := []string{}
	switch {
	case !v.loaded:
		rows = append(rows, "  loading…")
	case v.err != "":
		rows = append(rows, "  "+cut(v.err, m.width-2))
	case len(v.tools) == 0:
		rows = append(rows, "  no cached tools: r on the list refreshes the server")
	case len(v.rows) == 0:
		rows = append(rows, "  no tool matches /"+v.search)
	}
	at := v.position()
	if at < v.top {
		v.top = at
	}
	if at >= v.top+listH {
		v.top = at - listH + 1
	}
	v.top = max(0, min(v.top, len(v.rows)-listH))
	for n := v.top; n < len(v.rows) && n < v.top+listH; n++ {
		t := &v.tools[v.rows[n]]
		mark := "  "
		if t.Name == v.selected {
			mark = "> "
		}
		desc := t.Title
		if desc == "" {
			desc = t.Description
		}
		row := mark + fit(clean(t.Name), nameW) + " " + fit(orDash(t.Risk), 11) + " " + fit(orDash(t.PinState), 8) + " " + clean(desc)
		row = cut(row, m.width)
		if t.Name == v.selected {
			row = m.st.selected.Render(row)
		}
		rows = append(rows, row)
	}
	for len(rows) < listH {
		rows = append(rows, "")
	}
	lines = append(lines, rows...)
	lines = append(lines, m.st.faint.Render(strings.Repeat("─", m.width)))
	v.pane.SetWidth(m.width)
	v.pane.SetHeight(paneH)
	if v.shown != v.selected || v.pane.GetContent() == "" {
		v.pane.SetContent(v.describeText(m.width))
		v.pane.GotoTop()
		v.shown = v.selected
	}
	lines = append(lines, v.pane.View())
	if v.typing {
		lines = append(lines, cut("search: "+v.search+"█  (enter keeps it, esc clears it)", m.width))
	} else {
		lines = append(lines, cut(m.helpLine(m.keys.inspectHelp()), m.width))
	}
	lines = append(lines, m.footer())
	return strings.Join(lines, "\n")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return clean(s)
}

// describeText is the describe pane's text: the tool's risk and why, its
// pin state, description and bounded schemas, every string cleaned.
func (v *inspectView) describeText(width int) string {
	t := v.current()
	if t == nil {
		return ""
	}
	if msg := v.failed[t.Name]; msg != "" {
		return "describe " + clean(t.Name) + ": " + msg
	}
	d := v.details[t.Name]
	if d == nil {
		return "describing " + clean(t.Name) + "…"
	}
	var b []string
	head := clean(d.Name)
	if d.Title != "" {
		head += " — " + clean(d.Title)
	}
	b = append(b, head)
	risk := "risk: " + orDash(d.Risk)
	if d.RiskReason != "" {
		risk += " (" + clean(d.RiskReason) + ")"
	}
	b = append(b, wrap(risk, width, 4)...)
	pin := "pin: " + orDash(t.PinState)
	if d.TaskSupport != "" {
		pin += " · task support: " + clean(d.TaskSupport)
	}
	b = append(b, pin)
	if d.Warning != "" {
		b = append(b, wrap("warning: "+clean(d.Warning), width, 3)...)
	}
	if d.Description != "" {
		b = append(b, "")
		b = append(b, wrap(clean(d.Description), width, 20)...)
	}
	for _, s := range []struct {
		name string
		raw  json.RawMessage
	}{{"input schema", d.InputSchema}, {"output schema", d.OutputSchema}} {
		if len(s.raw) == 0 {
			continue
		}
		var ind bytes.Buffer
		if json.Indent(&ind, s.raw, "", "  ") != nil {
			continue
		}
		b = append(b, "", s.name+":")
		for _, line := range strings.Split(cleanBlock(ind.String()), "\n") {
			b = append(b, cut(line, width))
		}
	}
	return strings.Join(b, "\n")
}
