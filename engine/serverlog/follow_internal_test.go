package serverlog

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestFollowBetweenLooks rotates a followed log between two of the
// follower's looks, as often as the shapes below say: every line
// written is seen once, in order, whenever the generations that hold it
// are still there (a rotation keeps one older generation).
func TestFollowBetweenLooks(t *testing.T) {
	for _, rotations := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("rotations=%d", rotations), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "srv.log")
			line := 0
			var want []string
			write := func() {
				t.Helper()
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				for range 3 {
					text := fmt.Sprintf("line %02d", line)
					b, err := encode(Record{Server: "srv", Kind: KindStderr, Text: text})
					if err != nil {
						t.Fatal(err)
					}
					if _, err := f.Write(b); err != nil {
						t.Fatal(err)
					}
					want, line = append(want, text), line+1
				}
			}
			write()
			looked, resume := make(chan struct{}), make(chan bool)
			var seen []string
			done := make(chan error, 1)
			go func() {
				done <- follow(path, func(r Record) error {
					seen = append(seen, r.Text)
					return nil
				}, func() bool {
					looked <- struct{}{}
					return <-resume
				})
			}()
			<-looked
			write()
			for range rotations {
				if err := os.Rename(path, path+".1"); err != nil {
					t.Fatal(err)
				}
				write()
			}
			resume <- true
			select {
			case <-looked:
			case <-testwait.Context(t).Done():
				t.Fatal("the follower never looked again")
			}
			resume <- false
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(seen, want) {
				t.Errorf("seen %q, want %q", seen, want)
			}
		})
	}
}
