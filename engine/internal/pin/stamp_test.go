package pin

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStampOf(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pins")
	if st, err := StampOf(dir, "srv"); err != nil || st != (Stamp{}) {
		t.Fatalf("no directory: %+v, %v", st, err)
	}
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Observe("srv", []Meta{base()}, nil); err != nil {
		t.Fatal(err)
	}
	first, err := StampOf(dir, "srv")
	if err != nil || !first.Exists {
		t.Fatalf("after a write: %+v, %v", first, err)
	}
	if again, _ := StampOf(dir, "srv"); again != first {
		t.Errorf("the same file stamped twice: %+v, %+v", again, first)
	}
	// Another write (another process approving, say) changes the stamp.
	later := time.Now().Add(time.Minute) // testwait: a time stamp, not a wait
	if err := os.Chtimes(filepath.Join(dir, "srv.json"), later, later); err != nil {
		t.Fatal(err)
	}
	if changed, _ := StampOf(dir, "srv"); changed == first || !changed.Exists {
		t.Errorf("a changed file kept its stamp: %+v", changed)
	}
	// A stat that fails otherwise (a directory that is a file) is an
	// error.
	if _, err := StampOf(filepath.Join(dir, "srv.json"), "x"); err == nil {
		t.Error("a failed stat stamped as a missing file")
	}
}
