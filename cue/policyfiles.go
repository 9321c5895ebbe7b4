package cue

import (
	"github.com/voltmcp/voltmcp/regofile"
)

// The bounds of what the settings.policies entries of a project's layers
// bring in, together: every file counts against them, and a walk that
// passes one stops with an error naming the file and the limit.
const (
	// MaxProjectPolicyFiles is how many policy files a project may name.
	MaxProjectPolicyFiles = 256
	// MaxPolicyFileSize is the largest policy file read, in bytes; the
	// policy loader's own limit for the files it reads is the same
	// ([regofile.DefaultMaxFileSize]).
	MaxPolicyFileSize = regofile.DefaultMaxFileSize
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

// newPolicyReader returns the reader of a project's policy files, which
// holds the project's bounds for every entry of its layers.
func newPolicyReader() *regofile.Reader {
	return regofile.NewReader(&regofile.Options{
		MaxFiles:    MaxProjectPolicyFiles,
		MaxFileSize: MaxPolicyFileSize,
		MaxBytes:    MaxProjectPolicyBytes,
		MaxEntries:  MaxProjectPolicyEntries,
	})
}

// readPolicySource reads the policy files of one settings.policies entry
// of a project layer, as the policy loader would find them, with the walk
// the loader uses ([regofile.Reader.Read]): the file the path names, or
// every .rego file but *_test.rego under the directory, within the
// project's bounds. It returns the files and the directories it walked
// (a file added to one of them changes the set), or the error that keeps
// the entry from loading, which names the file or directory and the limit.
func readPolicySource(path string, r *regofile.Reader) (files []PolicyFile, dirs []string, err error) {
	read, dirs, err := r.Read(path)
	if err != nil {
		return nil, nil, err
	}
	files = make([]PolicyFile, len(read))
	for i, f := range read {
		files[i] = PolicyFile{Path: f.Path, SHA256: f.SHA256, Data: f.Data}
	}
	return files, dirs, nil
}
