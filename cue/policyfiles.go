package cue

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

// The bounds of what the settings.policies entries of a project's layers
// bring in, together: every file counts against them, and a walk that
// passes one stops with an error naming the file and the limit.
const (
	// MaxProjectPolicyFiles is how many policy files a project may name.
	MaxProjectPolicyFiles = 256
	// MaxPolicyFileSize is the largest policy file read, in bytes; the
	// policy loader's own limit for the files it reads is the same.
	MaxPolicyFileSize = 4 << 20
	// MaxProjectPolicyBytes is how many bytes of policy a project may
	// name in all.
	MaxProjectPolicyBytes = 16 << 20
	// MaxProjectPolicyEntries is how many directory entries (files of
	// any kind and directories) the walk of a project's policy
	// directories may meet: a project that names its root, or /, is
	// refused quickly rather than walked on every load.
	MaxProjectPolicyEntries = 10000
)

// PolicyFile is one file read under a project's settings.policies entry:
// the bytes project trust hashed, which are the bytes the policy set
// loads (engine.LoadPolicies gives them to the policy loader, which reads
// no project file itself).
type PolicyFile struct {
	// Path is the file, absolute.
	Path string `json:"path"`
	// SHA256 is the hex digest of Data.
	SHA256 string `json:"sha256"`
	// Data is the file's content.
	Data []byte `json:"-"`
}

// policyBudget is what is left of a project's bounds.
type policyBudget struct {
	files   int
	bytes   int64
	entries int
}

func newPolicyBudget() *policyBudget {
	return &policyBudget{files: MaxProjectPolicyFiles, bytes: MaxProjectPolicyBytes, entries: MaxProjectPolicyEntries}
}

// isPolicyFile reports whether a file met in a policy directory is a
// policy: a .rego file that is not a test (*_test.rego). A file an entry
// names directly is a policy whatever its name.
func isPolicyFile(name string) bool {
	return strings.HasSuffix(name, ".rego") && !strings.HasSuffix(name, "_test.rego")
}

// readPolicySource reads the policy files of one settings.policies entry
// of a project layer, as the policy loader would find them: the file the
// path names, or every policy file (isPolicyFile) under the directory,
// searched recursively without following links to directories. Each file
// is read without blocking, only when it is a regular file, and within the
// budget. It returns the files and the directories it walked (a file
// added to one of them changes the set), or the error that keeps the
// entry from loading, which names the file or directory and the limit.
func readPolicySource(path string, b *policyBudget) (files []PolicyFile, dirs []string, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("policy path %s: %w", path, pathlessError(err))
	}
	if !fi.IsDir() {
		f, err := readPolicyFile(path, b)
		if err != nil {
			return nil, nil, err
		}
		return []PolicyFile{f}, nil, nil
	}
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if b.entries--; b.entries < 0 {
			return &policyLimitError{fmt.Sprintf("policy directory %s: the walk of the project's policy directories met more than %d entries at %s; that is the limit", path, MaxProjectPolicyEntries, p)}
		}
		if d.IsDir() {
			dirs = append(dirs, p)
			return nil
		}
		if !isPolicyFile(d.Name()) {
			return nil
		}
		f, err := readPolicyFile(p, b)
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	})
	var limit *policyLimitError
	switch {
	case errors.As(err, &limit), errors.Is(err, safefile.ErrNotRegular), errors.Is(err, safefile.ErrTooLarge):
		return nil, nil, err // the error names the file
	case err != nil:
		return nil, nil, fmt.Errorf("read policy directory %s: %w", path, err)
	case len(files) == 0:
		return nil, nil, fmt.Errorf("policy directory %s holds no policy: no .rego file other than *_test.rego", path)
	}
	return files, dirs, nil
}

// policyLimitError is the error of a project whose policies pass a bound.
type policyLimitError struct{ msg string }

func (e *policyLimitError) Error() string { return e.msg }

// readPolicyFile reads one policy file within the budget.
func readPolicyFile(path string, b *policyBudget) (PolicyFile, error) {
	if b.files <= 0 {
		return PolicyFile{}, &policyLimitError{fmt.Sprintf("policy file %s: the project names more than %d policy files; the limit is %d", path, MaxProjectPolicyFiles, MaxProjectPolicyFiles)}
	}
	data, err := safefile.ReadFile(path, &safefile.ReadOptions{MaxSize: MaxPolicyFileSize})
	switch {
	case errors.Is(err, safefile.ErrNotRegular), errors.Is(err, safefile.ErrTooLarge):
		return PolicyFile{}, fmt.Errorf("policy file %w", err) // the error names the file and the limit
	case err != nil:
		return PolicyFile{}, fmt.Errorf("policy file %s: %w", path, pathlessError(err))
	}
	b.files--
	b.bytes -= int64(len(data))
	if b.bytes < 0 {
		return PolicyFile{}, &policyLimitError{fmt.Sprintf("policy file %s: the project's policy files pass %d bytes (16 MiB) in all; that is the limit", path, MaxProjectPolicyBytes)}
	}
	sum := sha256.Sum256(data)
	return PolicyFile{Path: path, SHA256: hex.EncodeToString(sum[:]), Data: data}, nil
}
