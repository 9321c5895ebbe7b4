//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package audit

import (
	"errors"
	"os"
)

// openJournal fails where there is no flock: a journal's writer could not
// be told alive from ended. Intents are then written to the log.
func openJournal(string) (*journal, error) {
	return nil, errors.New("audit: intent journal: not supported on this system")
}

// unmapJournal has nothing to unmap.
func unmapJournal([]byte) error { return nil }

// takeDeadJournal finds no journal.
func takeDeadJournal(string) (*os.File, []byte, error) { return nil, nil, nil }

// readJournal finds no journal.
func readJournal(string) ([]byte, error) { return nil, os.ErrNotExist }
