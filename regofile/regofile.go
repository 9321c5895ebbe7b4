// Package regofile finds and reads the policy files under a path: the
// file the path names, or every .rego file under the directory it names,
// searched recursively without following links to directories. It is the
// one walk behind project trust (package cue hashes a project's policy
// files with it) and the policy loader and `voltmcp policy test` (package
// policies reads user policy directories with it), so what is a policy
// file, and how far a walk may go, is decided in one place.
//
// Each file is read through [safefile.ReadFile]: without blocking, only
// when it is a regular file, and within a size cap. A [Reader] holds one
// budget of files, bytes and directory entries for every path it reads;
// a walk that passes a limit stops with an error naming the file or
// directory and the limit.
package regofile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/voltmcp/voltmcp/safefile"
)

// The defaults of [Options]: what a zero field, or nil Options, means.
const (
	// DefaultMaxFiles is how many policy files a Reader reads in all.
	DefaultMaxFiles = 1024
	// DefaultMaxFileSize is the largest policy file read, in bytes.
	DefaultMaxFileSize = 4 << 20
	// DefaultMaxBytes is how many bytes of policy a Reader reads in all.
	DefaultMaxBytes = 64 << 20
	// DefaultMaxEntries is how many directory entries (files of any kind
	// and directories) the walks of a Reader may meet in all.
	DefaultMaxEntries = 100_000
)

// Options say which files a walk takes and the limits of a [Reader]. A
// zero limit means its default; nil Options mean every default and no
// tests.
type Options struct {
	// Tests also takes *_test.rego files from directories. Without it a
	// directory's policy files are its .rego files other than tests.
	Tests bool
	// MaxFiles is how many files the Reader reads in all
	// ([DefaultMaxFiles]).
	MaxFiles int
	// MaxFileSize is the largest file read, in bytes
	// ([DefaultMaxFileSize]).
	MaxFileSize int64
	// MaxBytes is how many bytes the Reader reads in all
	// ([DefaultMaxBytes]).
	MaxBytes int64
	// MaxEntries is how many directory entries the Reader's walks meet in
	// all ([DefaultMaxEntries]).
	MaxEntries int
}

// File is one policy file read.
type File struct {
	// Path is the file, as the walk met it: the path given, or joined
	// under the directory given.
	Path string
	// SHA256 is the hex digest of Data.
	SHA256 string
	// Data is the file's content.
	Data []byte
}

// IsPolicy reports whether a file named name, met in a directory, is a
// policy file: a .rego file, and with tests also a *_test.rego file, else
// not one. A file a path names directly is read whatever its name.
func IsPolicy(name string, tests bool) bool {
	return strings.HasSuffix(name, ".rego") && (tests || !strings.HasSuffix(name, "_test.rego"))
}

// LimitError is the error of a walk that passes one of its limits; its
// message names the file or directory and the limit.
type LimitError struct{ msg string }

func (e *LimitError) Error() string { return e.msg }

// A Reader reads policy files within one budget shared by every path it
// reads. It is not safe for concurrent use.
type Reader struct {
	opts    Options
	files   int
	bytes   int64
	entries int
}

// NewReader returns a Reader with the limits of opts; nil means the
// defaults and no tests.
func NewReader(opts *Options) *Reader {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	return &Reader{opts: o, files: o.MaxFiles, bytes: o.MaxBytes, entries: o.MaxEntries}
}

// Read reads the policy files of path with a Reader of its own: see
// [Reader.Read].
func Read(path string, opts *Options) (files []File, dirs []string, err error) {
	return NewReader(opts).Read(path)
}

// Read reads the policy files of path: the file it names, or every
// policy file ([IsPolicy]) under the directory it names, in lexical
// order, without following links to directories. It returns the files
// and the directories it walked (a file added to one of them changes the
// set), or the error that keeps path from loading, which names the file
// or directory and, for a limit, the limit. A missing path, and a
// directory with no policy file in it, are errors: whoever named it meant
// to have policies there.
func (r *Reader) Read(path string) (files []File, dirs []string, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("policy path %s: %w", path, safefile.Pathless(err))
	}
	if !fi.IsDir() {
		f, err := r.readFile(path)
		if err != nil {
			return nil, nil, err
		}
		return []File{f}, nil, nil
	}
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if r.entries--; r.entries < 0 {
			return &LimitError{fmt.Sprintf("policy directory %s: the walk met more than %d entries at %s; that is the limit", path, r.opts.MaxEntries, p)}
		}
		if d.IsDir() {
			dirs = append(dirs, p)
			return nil
		}
		if !IsPolicy(d.Name(), r.opts.Tests) {
			return nil
		}
		f, err := r.readFile(p)
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	})
	var limit *LimitError
	switch {
	case errors.As(err, &limit), errors.Is(err, safefile.ErrNotRegular), errors.Is(err, safefile.ErrTooLarge):
		return nil, nil, err // the error names the file
	case err != nil:
		return nil, nil, fmt.Errorf("read policy directory %s: %w", path, err)
	case len(files) == 0 && r.opts.Tests:
		return nil, nil, fmt.Errorf("policy directory %s holds no .rego file", path)
	case len(files) == 0:
		return nil, nil, fmt.Errorf("policy directory %s holds no policy: no .rego file other than *_test.rego", path)
	}
	return files, dirs, nil
}

// readFile reads one policy file within the budget.
func (r *Reader) readFile(path string) (File, error) {
	if r.files <= 0 {
		return File{}, &LimitError{fmt.Sprintf("policy file %s: more than %d policy files; the limit is %d", path, r.opts.MaxFiles, r.opts.MaxFiles)}
	}
	data, err := safefile.ReadFile(path, &safefile.ReadOptions{MaxSize: r.opts.MaxFileSize})
	switch {
	case errors.Is(err, safefile.ErrNotRegular), errors.Is(err, safefile.ErrTooLarge):
		return File{}, fmt.Errorf("policy file %w", err) // the error names the file and the limit
	case err != nil:
		return File{}, fmt.Errorf("policy file %s: %w", path, safefile.Pathless(err))
	}
	r.files--
	r.bytes -= int64(len(data))
	if r.bytes < 0 {
		return File{}, &LimitError{fmt.Sprintf("policy file %s: the policy files pass %s in all; that is the limit", path, size(r.opts.MaxBytes))}
	}
	sum := sha256.Sum256(data)
	return File{Path: path, SHA256: hex.EncodeToString(sum[:]), Data: data}, nil
}

// size writes a byte count, with its MiB when it is a whole number of
// them.
func size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d bytes (%d MiB)", n, n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
