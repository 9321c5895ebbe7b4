package ui

import "charm.land/bubbles/v2/key"

// keyMap is every key of the UI, with the help each shows: the help line
// and the ? screen are drawn from it, so a key and its help never part.
type keyMap struct {
	Up, Down, Sort, Reverse, Filter    key.Binding
	Enable, Connect, Refresh, Inspect  key.Binding
	Logs, Follow, Bottom               key.Binding
	Back, PageUp, PageDown, Help, Quit key.Binding
}

func newKeyMap() keyMap {
	return keyMap{
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Sort:     key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort by next column")),
		Reverse:  key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "reverse the sort")),
		Filter:   key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Enable:   key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "enable/disable")),
		Connect:  key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "connect/disconnect")),
		Refresh:  key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "refresh")),
		Inspect:  key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "inspect")),
		Logs:     key.NewBinding(key.WithKeys("l"), key.WithHelp("l", "log")),
		Follow:   key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "follow on/off")),
		Bottom:   key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "newest")),
		Back:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+u"), key.WithHelp("pgup", "scroll up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+d"), key.WithHelp("pgdn", "scroll down")),
		Help:     key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:     key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
	}
}

// listHelp is the list screen's help line; listFull its ? screen.
func (k keyMap) listHelp() []key.Binding {
	return []key.Binding{k.Up, k.Down, k.Enable, k.Connect, k.Refresh, k.Inspect, k.Logs, k.Sort, k.Filter, k.Help, k.Quit}
}

func (k keyMap) listFull() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.Sort, k.Reverse, k.Filter},
		{k.Enable, k.Connect, k.Refresh, k.Inspect, k.Logs},
		{k.Help, k.Back, k.Quit},
	}
}

// inspectHelp is the tools screen's help line.
func (k keyMap) inspectHelp() []key.Binding {
	return []key.Binding{k.Up, k.Down, k.Filter, k.PageDown, k.PageUp, k.Back, k.Help, k.Quit}
}

func (k keyMap) inspectFull() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.Filter},
		{k.PageDown, k.PageUp},
		{k.Help, k.Back, k.Quit},
	}
}

// logsHelp is the logs screen's help line; logsFull its ? screen.
func (k keyMap) logsHelp() []key.Binding {
	return []key.Binding{k.Up, k.Down, k.PageDown, k.PageUp, k.Bottom, k.Follow, k.Back, k.Help, k.Quit}
}

func (k keyMap) logsFull() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.PageDown, k.PageUp, k.Bottom},
		{k.Follow},
		{k.Help, k.Back, k.Quit},
	}
}
