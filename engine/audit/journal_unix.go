//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package audit

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// openJournal makes a new intent journal for the log at path: a file of
// journalBytes written with zeros (so that its blocks exist before any
// intent is stored), locked and mapped.
func openJournal(path string) (*journal, error) {
	dir := journalDir(path)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("audit: intent journal: %w", err)
	}
	if fi, err := os.Lstat(dir); err != nil {
		return nil, fmt.Errorf("audit: intent journal: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("audit: intent journal: %s is not a directory", dir)
	}
	var nonce [6]byte
	_, _ = rand.Read(nonce[:])
	name := filepath.Join(dir, fmt.Sprintf("j-%d-%s", os.Getpid(), hex.EncodeToString(nonce[:])))
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: intent journal: %w", err)
	}
	fail := func(err error) (*journal, error) {
		_ = f.Close()
		_ = os.Remove(name)
		return nil, fmt.Errorf("audit: intent journal: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fail(err)
	}
	if _, err := f.WriteAt(make([]byte, journalBytes), 0); err != nil {
		return fail(err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, journalBytes, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fail(err)
	}
	j := &journal{path: name, f: f, mem: mem, free: make([]int, 0, journalSlots)}
	for s := journalSlots - 1; s >= 0; s-- {
		j.free = append(j.free, s)
	}
	return j, nil
}

// unmapJournal unmaps a journal's memory.
func unmapJournal(mem []byte) error { return syscall.Munmap(mem) }

// readJournal reads the journal name, without waiting on anything that is
// not a regular file and without following a link: at most journalBytes.
func readJournal(name string) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	return io.ReadAll(io.LimitReader(f, journalBytes))
}

// takeDeadJournal opens the journal name if its writer ended: it takes the
// journal's flock, without waiting, and checks that name still names the
// file it opened (another process may have recovered and deleted it).
// It returns nil, nil for a journal whose writer lives, or that is gone.
// The bytes read are at most journalBytes.
func takeDeadJournal(name string) (*os.File, []byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		_ = f.Close()
		if err == nil {
			err = fmt.Errorf("%s is not a regular file", name)
		}
		return nil, nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil, nil // its writer lives
		}
		return nil, nil, err
	}
	if pi, err := os.Lstat(name); err != nil || !os.SameFile(fi, pi) {
		_ = f.Close()
		return nil, nil, nil // recovered by another process meanwhile
	}
	b, err := io.ReadAll(io.LimitReader(f, journalBytes))
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return f, b, nil
}
