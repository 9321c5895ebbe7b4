package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"

	"github.com/voltmcp/voltmcp/safefile"
)

// maxStampHash is the largest file whose content a [stampSet] hashes
// when its stamp changes (a plugin module may be large); a larger file
// counts as changed whenever its stamp does.
const maxStampHash = 64 << 20

// pathStamp identifies a version of a path: what lstat and stat say of
// it (a link swapped in shows in the first, a changed target in the
// second). Taking one never opens the path, so a FIFO or device in its
// place cannot block.
type pathStamp struct {
	link, target fs.FileInfo
	linkErr      bool
	targetErr    bool
}

func stampOf(path string) pathStamp {
	var s pathStamp
	var err error
	if s.link, err = os.Lstat(path); err != nil {
		s.link, s.linkErr = nil, true
	}
	if s.target, err = os.Stat(path); err != nil {
		s.target, s.targetErr = nil, true
	}
	return s
}

func sameInfo(a, b fs.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.Mode() == b.Mode() && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

func (s pathStamp) same(o pathStamp) bool {
	return s.linkErr == o.linkErr && s.targetErr == o.targetErr && sameInfo(s.link, o.link) && sameInfo(s.target, o.target)
}

// regular reports whether the stamp is of a regular file (through any
// link).
func (s pathStamp) regular() bool { return s.target != nil && s.target.Mode().IsRegular() }

// stampSet watches paths by their stamps (size, mtime, inode and mode,
// of the path and of what it links to), and, for a regular file whose
// stamp changed, by a hash of its content, so that a touch or a rewrite
// with the same bytes is no change. A path that does not exist is
// watched as well: its creation is a change. Both the project-trust
// watch (trustwatch.go) and the config watch ([Engine.Watch]) look at
// their paths through it. A stampSet is not safe for concurrent use.
type stampSet struct {
	paths  []string
	stamps []pathStamp // nil until the first look
	sums   []string    // of the regular files among paths; "" when unknown
}

func newStampSet(paths []string) *stampSet { return &stampSet{paths: paths} }

// look stamps every path and reports whether any changed since the last
// look. The first look reports a change.
func (s *stampSet) look() bool {
	stamps := make([]pathStamp, len(s.paths))
	for i, p := range s.paths {
		stamps[i] = stampOf(p)
	}
	if s.stamps == nil {
		s.stamps, s.sums = stamps, make([]string, len(s.paths))
		for i, p := range s.paths {
			s.sums[i] = sumOf(p, stamps[i])
		}
		return true
	}
	changed := false
	for i, p := range s.paths {
		if stamps[i].same(s.stamps[i]) {
			continue
		}
		sum := sumOf(p, stamps[i])
		if sum == "" || sum != s.sums[i] || stamps[i].regular() != s.stamps[i].regular() {
			changed = true
		}
		s.stamps[i], s.sums[i] = stamps[i], sum
	}
	return changed
}

// forget drops what the set knows, so that the next look reports a
// change.
func (s *stampSet) forget() { s.stamps, s.sums = nil, nil }

// with returns a set of paths that knows, of the paths s watches too,
// what s knows, and stamps the others now: a change to a path of both
// since s last looked is still reported by the new set's next look.
func (s *stampSet) with(paths []string) *stampSet {
	known := map[string]int{}
	if s != nil && s.stamps != nil {
		for i, p := range s.paths {
			known[p] = i
		}
	}
	n := &stampSet{paths: paths, stamps: make([]pathStamp, len(paths)), sums: make([]string, len(paths))}
	for i, p := range paths {
		if j, ok := known[p]; ok {
			n.stamps[i], n.sums[i] = s.stamps[j], s.sums[j]
			continue
		}
		n.stamps[i] = stampOf(p)
		n.sums[i] = sumOf(p, n.stamps[i])
	}
	return n
}

// sumOf returns the hex SHA-256 of the regular file at path, read
// without blocking, or "" when it is not a regular file within
// maxStampHash or cannot be read.
func sumOf(path string, st pathStamp) string {
	if !st.regular() {
		return ""
	}
	f, _, err := safefile.Open(path, &safefile.ReadOptions{MaxSize: maxStampHash})
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}
