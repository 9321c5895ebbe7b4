package ui

import (
	"context"
	"io"

	tea "charm.land/bubbletea/v2"
)

// Run runs the UI on a terminal (in, out) until the user quits, ctx ends
// or the program fails. environ is the process's environment, from which
// Bubble Tea reads the terminal's colour support (NO_COLOR, TERM).
func Run(ctx context.Context, opts Options, in io.Reader, out io.Writer, environ []string) error {
	m := New(ctx, opts)
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out), tea.WithEnvironment(environ))
	_, err := p.Run()
	m.cancel()
	if ctx.Err() != nil {
		return nil
	}
	return err
}
