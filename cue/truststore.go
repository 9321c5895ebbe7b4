package cue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/voltmcp/voltmcp/safefile"
)

// TrustStoreFile is the name of the host's record of trusted projects in
// voltmcp's state directory (the agent dir).
const TrustStoreFile = "trusted-projects.json"

// maxTrustStore bounds the trust record file that is read.
const maxTrustStore = 4 << 20

// trustStore is the file's format.
type trustStore struct {
	Version  int           `json:"version"`
	Projects []TrustRecord `json:"projects"`
}

// ReadTrustRecords reads the trust records at path. A missing file holds
// no records; a file that cannot be read or decoded is an error that
// names it, and the caller should trust nothing from it.
func ReadTrustRecords(path string) ([]TrustRecord, error) {
	data, err := safefile.ReadFile(path, &safefile.ReadOptions{MaxSize: maxTrustStore})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return decodeTrustRecords(path, data, err)
}

// decodeTrustRecords decodes the bytes of the trust record file at path,
// read with err.
func decodeTrustRecords(path string, data []byte, err error) ([]TrustRecord, error) {
	if errors.Is(err, safefile.ErrTooLarge) {
		return nil, fmt.Errorf("read trust records %s: larger than %d bytes", path, maxTrustStore)
	}
	if err != nil {
		return nil, fmt.Errorf("read trust records: %w", err)
	}
	var st trustStore
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("read trust records %s: %w", path, err)
	}
	if st.Version != 1 {
		return nil, fmt.Errorf("read trust records %s: unknown version %d", path, st.Version)
	}
	return st.Projects, nil
}

// SaveTrustRecord adds rec to the records at path, replacing any record
// of the same project, and writes the file atomically with mode 0600. The
// read and the write hold the file's lock (safefile.Update), so records
// saved at once by two processes are both kept.
func SaveTrustRecord(path string, rec TrustRecord) error {
	return updateTrustRecords(path, func(recs []TrustRecord) ([]TrustRecord, bool) {
		recs = slices.DeleteFunc(recs, func(r TrustRecord) bool { return r.Project == rec.Project })
		recs = append(recs, rec)
		slices.SortFunc(recs, func(a, b TrustRecord) int { return strings.Compare(a.Project, b.Project) })
		return recs, true
	})
}

// RemoveTrustRecord removes the record of project from path, and reports
// whether there was one.
func RemoveTrustRecord(path, project string) (bool, error) {
	project = absPath(project)
	var removed bool
	err := updateTrustRecords(path, func(recs []TrustRecord) ([]TrustRecord, bool) {
		n := len(recs)
		recs = slices.DeleteFunc(recs, func(r TrustRecord) bool { return r.Project == project })
		removed = len(recs) != n
		return recs, removed
	})
	return removed && err == nil, err
}

// updateTrustRecords applies edit to the records at path under the
// file's lock, and writes them when edit says they changed.
func updateTrustRecords(path string, edit func([]TrustRecord) ([]TrustRecord, bool)) error {
	edited := false
	err := safefile.Update(context.Background(), path, &safefile.WriteOptions{Read: &safefile.ReadOptions{MaxSize: maxTrustStore}},
		func(old []byte) ([]byte, error) {
			edited = true
			var recs []TrustRecord
			if old != nil {
				var err error
				if recs, err = decodeTrustRecords(path, old, nil); err != nil {
					return nil, err
				}
			}
			recs, changed := edit(recs)
			if !changed {
				return nil, nil
			}
			data, err := json.MarshalIndent(trustStore{Version: 1, Projects: recs}, "", "  ")
			if err != nil {
				return nil, err
			}
			return append(data, '\n'), nil
		})
	if err != nil && !edited {
		_, err = decodeTrustRecords(path, nil, err) // a read or lock error, named as a read
	}
	return err
}

// keepTrust moves the trust record of project from the content old of
// its file path (nil: the file did not exist) to written, when the
// record trusts exactly old: voltmcp's own write to a trusted project
// keeps it trusted (WriteOptions.TrustStore). The check and the update
// hold the record file's lock, so the entry is replaced only if it
// still holds old's hash. A project with no record, or whose record
// does not trust old, is left as it is: trust is never created here.
func keepTrust(store, project, path string, old, written []byte) error {
	project, path = absPath(project), absPath(path)
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	newSum := sum(written)
	return updateTrustRecords(store, func(recs []TrustRecord) ([]TrustRecord, bool) {
		i := slices.IndexFunc(recs, func(r TrustRecord) bool { return r.Project == project })
		if i < 0 {
			return recs, false
		}
		r := &recs[i]
		j := slices.IndexFunc(r.Files, func(f TrustedFile) bool { return f.Path == path })
		switch {
		case j >= 0 && old != nil && r.Files[j].SHA256 == sum(old):
			r.Files[j].SHA256 = newSum
		case j < 0 && old == nil:
			r.Files = append(r.Files, TrustedFile{Path: path, SHA256: newSum})
		default:
			return recs, false
		}
		return recs, true
	})
}
