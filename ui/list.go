package ui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// column is one column of the server list. A column with a lower drop
// is kept longer when the terminal is narrow; those the width leaves
// out are in the selected server's detail lines.
type column struct {
	title string
	width int
	drop  int
	cell  func(s *ServerSummary) string
	// sortKey orders the column; nil sorts by the cell.
	sortKey func(s *ServerSummary) string
}

// errorColumn is the last column: the last error, one line, in the
// width the others leave.
const errorColumn = "LAST ERROR"

// minErrorWidth is the least width the last error gets.
const minErrorWidth = 10

func num(n int) string { return fmt.Sprintf("%012d", n) }

// columns are the spec's columns, in order.
var columns = []column{
	{title: "SERVER", width: 18, drop: 0, cell: serverName},
	{title: "SCOPE", width: 7, drop: 6, cell: func(s *ServerSummary) string { return s.SourceScope }},
	{title: "ON", width: 3, drop: 1, cell: func(s *ServerSummary) string {
		if s.Enabled {
			return "on"
		}
		return "off"
	}},
	{title: "TRANSPORT", width: 9, drop: 5, cell: func(s *ServerSummary) string {
		if s.Transport == "streamable_http" {
			return "http"
		}
		return s.Transport
	}},
	{title: "LIFECYCLE", width: 10, drop: 7, cell: func(s *ServerSummary) string { return s.Lifecycle }},
	{title: "STATUS", width: 12, drop: 0, cell: func(s *ServerSummary) string { return s.Status }},
	{title: "AUTH", width: 8, drop: 3, cell: func(s *ServerSummary) string {
		if s.AuthState == "none" || s.AuthState == "" {
			return "-"
		}
		return s.AuthState
	}},
	{title: "TOOLS c/l/e", width: 11, drop: 2, cell: toolCounts, sortKey: func(s *ServerSummary) string { return num(s.ToolCounts.Cached) }},
	{title: "RES", width: 4, drop: 8, cell: func(s *ServerSummary) string { return strconv.Itoa(s.ResourceCount) },
		sortKey: func(s *ServerSummary) string { return num(s.ResourceCount) }},
	{title: "PRM", width: 4, drop: 8, cell: func(s *ServerSummary) string { return strconv.Itoa(s.PromptCount) },
		sortKey: func(s *ServerSummary) string { return num(s.PromptCount) }},
	{title: "CALLS", width: 5, drop: 4, cell: func(s *ServerSummary) string { return strconv.Itoa(len(s.RecentCalls)) },
		sortKey: func(s *ServerSummary) string { return num(len(s.RecentCalls)) }},
	{title: "CONNECTED", width: 11, drop: 6, cell: func(s *ServerSummary) string { return when(s.LastConnectedAt) },
		sortKey: func(s *ServerSummary) string { return s.LastConnectedAt }},
	{title: errorColumn, width: minErrorWidth, drop: 0, cell: lastError},
}

// serverName is a server's id, and its display name when it differs.
func serverName(s *ServerSummary) string {
	if s.DisplayName != "" && s.DisplayName != s.ID {
		return s.ID + " (" + s.DisplayName + ")"
	}
	return s.ID
}

// toolCounts is cached/live/enabled, "-" for a count the answer lacks.
func toolCounts(s *ServerSummary) string {
	opt := func(n *int) string {
		if n == nil {
			return "-"
		}
		return strconv.Itoa(*n)
	}
	return strconv.Itoa(s.ToolCounts.Cached) + "/" + opt(s.ToolCounts.Live) + "/" + opt(s.ToolCounts.Enabled)
}

// lastError is the last error, else why the server does not run.
func lastError(s *ServerSummary) string {
	if s.LastError != "" {
		return s.LastError
	}
	return s.Reason
}

// when is an RFC 3339 time as the list shows it: the local time of day
// when today, else the date.
func when(rfc string) string {
	if rfc == "" {
		return "-"
	}
	t, err := time.Parse(time.RFC3339Nano, rfc)
	if err != nil {
		return "?"
	}
	t = t.Local()
	if y, m, d := t.Date(); y == time.Now().Year() && m == time.Now().Month() && d == time.Now().Day() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02")
}

// listView is the server list: the filter, the sort, the selection.
type listView struct {
	rows     []int // indexes into Model.servers, filtered and sorted
	selected string
	sortCol  int
	reverse  bool
	filter   string
	typing   bool
	top      int // first row shown
}

// refilter computes the rows from the servers, the filter and the sort,
// keeping the selected server selected.
func (l *listView) refilter(m *Model) {
	l.rows = l.rows[:0]
	f := strings.ToLower(l.filter)
	for i := range m.servers {
		s := &m.servers[i]
		hay := strings.ToLower(clean(s.ID + " " + s.DisplayName + " " + s.Status + " " + s.SourceScope + " " + s.Transport + " " + s.AuthState))
		if f == "" || strings.Contains(hay, f) {
			l.rows = append(l.rows, i)
		}
	}
	col := columns[l.sortCol]
	sortKey := col.sortKey
	if sortKey == nil {
		sortKey = func(s *ServerSummary) string { return strings.ToLower(clean(col.cell(s))) }
	}
	slices.SortStableFunc(l.rows, func(a, b int) int {
		c := strings.Compare(sortKey(&m.servers[a]), sortKey(&m.servers[b]))
		if c == 0 {
			c = strings.Compare(m.servers[a].ID, m.servers[b].ID)
		}
		if l.reverse {
			c = -c
		}
		return c
	})
	if l.current(m) == nil {
		l.selected = ""
		if len(l.rows) > 0 {
			l.selected = m.servers[l.rows[0]].ID
		}
	}
}

// current is the selected server, nil when none.
func (l *listView) current(m *Model) *ServerSummary {
	for _, i := range l.rows {
		if m.servers[i].ID == l.selected {
			return &m.servers[i]
		}
	}
	return nil
}

func (l *listView) move(m *Model, by int) {
	at := 0
	for n, i := range l.rows {
		if m.servers[i].ID == l.selected {
			at = n
		}
	}
	at = min(max(at+by, 0), len(l.rows)-1)
	if at >= 0 {
		l.selected = m.servers[l.rows[at]].ID
	}
}

// key handles a key of the list.
func (l *listView) key(m *Model, k tea.KeyPressMsg) tea.Cmd {
	keys := m.keys
	switch {
	case key.Matches(k, keys.Up):
		l.move(m, -1)
	case key.Matches(k, keys.Down):
		l.move(m, 1)
	case key.Matches(k, keys.PageUp):
		l.move(m, -10)
	case key.Matches(k, keys.PageDown):
		l.move(m, 10)
	case key.Matches(k, keys.Sort):
		vis := m.visibleColumns()
		next := 0
		for i, c := range vis {
			if c == l.sortCol {
				next = (i + 1) % len(vis)
			}
		}
		l.sortCol, l.reverse = vis[next], false
		l.refilter(m)
		m.message = "sorted by " + strings.ToLower(columns[l.sortCol].title)
	case key.Matches(k, keys.Reverse):
		l.reverse = !l.reverse
		l.refilter(m)
	case key.Matches(k, keys.Filter):
		l.typing = true
	case key.Matches(k, keys.Back):
		if l.filter != "" {
			l.filter = ""
			l.refilter(m)
		}
	case key.Matches(k, keys.Enable):
		s := l.current(m)
		if s == nil {
			return nil
		}
		if !s.Capabilities.CanEnable {
			m.message = clean(s.ID) + " cannot be enabled or disabled here"
			return nil
		}
		verb := "disable"
		if !s.Enabled {
			verb = "enable"
		}
		m.message = verb + " " + clean(s.ID) + "…"
		return m.action(verb, mSetEnabled, map[string]any{"id": s.ID, "enabled": !s.Enabled}, s.ID)
	case key.Matches(k, keys.Connect):
		s := l.current(m)
		switch {
		case s == nil:
			return nil
		case s.Capabilities.CanDisconnect:
			m.message = "disconnect " + clean(s.ID) + "…"
			return m.action("disconnect", mDisconnect, map[string]string{"id": s.ID}, s.ID)
		case s.Capabilities.CanConnect:
			m.message = "connect " + clean(s.ID) + "…"
			return m.action("connect", mConnect, map[string]string{"id": s.ID}, s.ID)
		}
		m.message = clean(s.ID) + " cannot connect now (" + clean(s.Status) + ")"
	case key.Matches(k, keys.Refresh):
		s := l.current(m)
		if s == nil {
			return nil
		}
		if !s.Capabilities.CanRefresh {
			m.message = clean(s.ID) + " cannot be refreshed now (" + clean(s.Status) + ")"
			return nil
		}
		m.message = "refresh " + clean(s.ID) + "…"
		return m.action("refresh", mRefresh, map[string]string{"id": s.ID}, s.ID)
	case key.Matches(k, keys.Inspect):
		s := l.current(m)
		if s == nil {
			return nil
		}
		return m.inspect.open(m, s.ID)
	case key.Matches(k, keys.Logs):
		s := l.current(m)
		if s == nil {
			return nil
		}
		return m.logs.open(m, s.ID)
	}
	return nil
}

// typeKey edits the filter: typed text goes in, backspace takes out,
// enter keeps it, esc clears it.
func (l *listView) typeKey(m *Model, k tea.KeyPressMsg) {
	l.filter, l.typing = editLine(l.filter, k)
	l.refilter(m)
}

// editLine applies one key to a line being typed and says whether typing
// goes on.
func editLine(s string, k tea.KeyPressMsg) (string, bool) {
	switch k.String() {
	case "enter":
		return s, false
	case "esc":
		return "", false
	case "backspace":
		r := []rune(s)
		if len(r) > 0 {
			r = r[:len(r)-1]
		}
		return string(r), true
	}
	if k.Text != "" {
		return s + clean(k.Text), true
	}
	return s, true
}

// visibleColumns are the indexes of the columns that fit the width.
func (m *Model) visibleColumns() []int {
	var vis []int
	for i := range columns {
		vis = append(vis, i)
	}
	width := func() int {
		w := 2 // the selection mark
		for _, i := range vis {
			w += columns[i].width + 1
		}
		return w
	}
	for width() > m.width {
		worst := -1
		for n, i := range vis {
			if columns[i].drop > 0 && (worst < 0 || columns[i].drop >= columns[vis[worst]].drop) {
				worst = n
			}
		}
		if worst < 0 {
			break
		}
		vis = slices.Delete(vis, worst, worst+1)
	}
	return vis
}

// detailLines is how many lines the selected server's details take.
const detailLines = 3

// view draws the list screen.
func (l *listView) view(m *Model) string {
	lines := m.header()
	vis := m.visibleColumns()
	used := 2
	for _, i := range vis {
		if columns[i].title != errorColumn {
			used += columns[i].width + 1
		}
	}
	errW := max(minErrorWidth, m.width-used)
	widthOf := func(i int) int {
		if columns[i].title == errorColumn {
			return errW
		}
		return columns[i].width
	}
	var head strings.Builder
	head.WriteString("  ")
	for _, i := range vis {
		t := columns[i].title
		if i == l.sortCol {
			if l.reverse {
				t += "↑"
			} else {
				t += "↓"
			}
		}
		head.WriteString(fit(t, widthOf(i)) + " ")
	}
	lines = append(lines, m.st.head.Render(cut(strings.TrimRight(head.String(), " "), m.width)))

	rowsH := max(1, m.height-len(lines)-detailLines-2)
	at := 0
	for n, i := range l.rows {
		if m.servers[i].ID == l.selected {
			at = n
		}
	}
	if at < l.top {
		l.top = at
	}
	if at >= l.top+rowsH {
		l.top = at - rowsH + 1
	}
	l.top = max(0, min(l.top, len(l.rows)-rowsH))
	switch {
	case !m.loaded:
		lines = append(lines, "  loading…")
	case len(l.rows) == 0 && l.filter != "":
		lines = append(lines, "  no server matches /"+l.filter+" (esc clears the filter)")
	case len(l.rows) == 0:
		lines = append(lines, "  no server is configured: 'voltmcp add' adds one")
	}
	for n := l.top; n < len(l.rows) && n < l.top+rowsH; n++ {
		s := &m.servers[l.rows[n]]
		mark := "  "
		if s.ID == l.selected {
			mark = "> "
		}
		var row strings.Builder
		row.WriteString(mark)
		for _, i := range vis {
			cell := fit(clean(columns[i].cell(s)), widthOf(i))
			if columns[i].title == "STATUS" && s.ID != l.selected {
				cell = m.st.status(s.Status).Render(cell)
			}
			row.WriteString(cell + " ")
		}
		text := strings.TrimRight(row.String(), " ")
		if s.ID == l.selected {
			text = m.st.selected.Render(text)
		}
		lines = append(lines, text)
	}
	for len(lines) < m.height-detailLines-2 {
		lines = append(lines, "")
	}
	lines = append(lines, l.details(m)...)
	if l.typing {
		lines = append(lines, cut("/"+l.filter+"█  (enter keeps the filter, esc clears it)", m.width))
	} else {
		hl := m.helpLine(m.keys.listHelp())
		if l.filter != "" {
			hl = cut("filter /"+l.filter+" (esc clears) · ", m.width) + hl
		}
		lines = append(lines, cut(hl, m.width))
	}
	lines = append(lines, m.footer())
	return strings.Join(lines, "\n")
}

// details are the selected server's lines under the list: what the
// columns the width dropped say, and its last error in full.
func (l *listView) details(m *Model) []string {
	s := l.current(m)
	out := make([]string, 0, detailLines)
	if s != nil {
		lc := when(s.LastConnectedAt)
		out = append(out, m.st.faint.Render(cut(fmt.Sprintf("%s · %s · %s · %s · tools %s · %d resources · %d prompts · %d recent calls · connected %s",
			clean(s.SourceLabel), clean(s.SourceScope), clean(s.Transport), clean(s.Lifecycle), toolCounts(s), s.ResourceCount, s.PromptCount, len(s.RecentCalls), lc), m.width)))
		switch {
		case s.LastError != "":
			out = append(out, wrap("error: "+clean(s.LastError), m.width, detailLines-1)...)
		case s.Reason != "":
			msg := clean(s.Reason)
			if s.Fix != "" {
				msg += "; fix: " + clean(s.Fix)
			}
			out = append(out, wrap(msg, m.width, detailLines-1)...)
		case s.PendingChanges > 0:
			out = append(out, cut(fmt.Sprintf("%d tool change(s) wait for approval: voltmcp pins %s", s.PendingChanges, clean(s.ID)), m.width))
		}
	}
	for len(out) < detailLines {
		out = append(out, "")
	}
	return out
}
