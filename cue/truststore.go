package cue

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
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
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read trust records: %w", err)
	}
	defer f.Close()
	data := make([]byte, maxTrustStore+1)
	n, _ := readFull(f, data)
	if n > maxTrustStore {
		return nil, fmt.Errorf("read trust records %s: larger than %d bytes", path, maxTrustStore)
	}
	var st trustStore
	if err := json.Unmarshal(data[:n], &st); err != nil {
		return nil, fmt.Errorf("read trust records %s: %w", path, err)
	}
	if st.Version != 1 {
		return nil, fmt.Errorf("read trust records %s: unknown version %d", path, st.Version)
	}
	return st.Projects, nil
}

// SaveTrustRecord adds rec to the records at path, replacing any record
// of the same project, and writes the file atomically with mode 0600.
func SaveTrustRecord(path string, rec TrustRecord) error {
	recs, err := ReadTrustRecords(path)
	if err != nil {
		return err
	}
	recs = slices.DeleteFunc(recs, func(r TrustRecord) bool { return r.Project == rec.Project })
	recs = append(recs, rec)
	slices.SortFunc(recs, func(a, b TrustRecord) int { return strings.Compare(a.Project, b.Project) })
	return writeTrustRecords(path, recs)
}

// RemoveTrustRecord removes the record of project from path, and reports
// whether there was one.
func RemoveTrustRecord(path, project string) (bool, error) {
	recs, err := ReadTrustRecords(path)
	if err != nil {
		return false, err
	}
	project = absPath(project)
	n := len(recs)
	recs = slices.DeleteFunc(recs, func(r TrustRecord) bool { return r.Project == project })
	if len(recs) == n {
		return false, nil
	}
	return true, writeTrustRecords(path, recs)
}

func writeTrustRecords(path string, recs []TrustRecord) error {
	data, err := json.MarshalIndent(trustStore{Version: 1, Projects: recs}, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, append(data, '\n'), 0o600)
}

// readFull reads into b until it is full or the reader ends.
func readFull(f *os.File, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := f.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
