package devices_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/devices"
)

// TestStore pairs, lists, verifies and revokes devices: a token works
// until its device is revoked, the file holds no token and is 0600, and
// a token of another shape, or one changed by a character, is refused.
func TestStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "daemon", "devices.json")
	s := devices.New(path, nil)
	phone, phoneToken, err := s.Pair(ctx, "phone")
	if err != nil {
		t.Fatal(err)
	}
	_, laptopToken, err := s.Pair(ctx, "laptop browser")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(phoneToken, devices.TokenPrefix) || phoneToken == laptopToken {
		t.Fatalf("tokens %q %q", phoneToken, laptopToken)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), phoneToken) || strings.Contains(string(b), strings.TrimPrefix(laptopToken, devices.TokenPrefix)) {
		t.Fatal("the store holds a token")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the store's mode: %v %v", fi.Mode(), err)
	}
	list, err := s.List()
	if err != nil || len(list) != 2 || list[0].Name != "phone" || list[1].Name != "laptop browser" {
		t.Fatalf("list: %+v %v", list, err)
	}
	if d, ok := s.Verify(phoneToken); !ok || d.ID != phone.ID {
		t.Fatalf("the phone's token: %+v %v", d, ok)
	}
	last := phoneToken[len(phoneToken)-1]
	for _, bad := range []string{"", devices.TokenPrefix, phoneToken[:len(phoneToken)-1] + string(last^1), strings.TrimPrefix(phoneToken, devices.TokenPrefix), phoneToken + "x"} {
		if _, ok := s.Verify(bad); ok {
			t.Errorf("token %q accepted", bad)
		}
	}
	if _, err := s.Revoke(ctx, phone.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Verify(phoneToken); ok {
		t.Error("a revoked device's token is accepted")
	}
	if _, ok := s.Verify(laptopToken); !ok {
		t.Error("revoking one device refused another")
	}
	if _, err := s.Revoke(ctx, "laptop browser"); err != nil {
		t.Errorf("revoke by name: %v", err)
	}
	if _, err := s.Revoke(ctx, "nope"); !errors.Is(err, devices.ErrUnknownDevice) {
		t.Errorf("revoke an unknown device: %v", err)
	}
}

// TestPairRefuses bad names, a second device of one name and more than
// MaxDevices devices, each with an error that says which.
func TestPairRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := devices.New(filepath.Join(t.TempDir(), "devices.json"), nil)
	for _, c := range []struct{ name, why string }{
		{"", "needs a name"},
		{strings.Repeat("n", devices.MaxNameBytes+1), "over the limit"},
		{"tab\there", "control characters"},
		{"esc\x1b[31m", "control characters"},
		{"bad\xff", "not UTF-8"},
	} {
		if _, _, err := s.Pair(ctx, c.name); err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("pair %q: %v, want %q", c.name, err, c.why)
		}
	}
	if _, _, err := s.Pair(ctx, "phone"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Pair(ctx, "phone"); err == nil || !strings.Contains(err.Error(), "paired already") {
		t.Errorf("a second phone: %v", err)
	}
	for i := 1; i < devices.MaxDevices; i++ {
		if _, _, err := s.Pair(ctx, fmt.Sprint("d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.Pair(ctx, "one more"); err == nil || !strings.Contains(err.Error(), "revoke one first") {
		t.Errorf("past MaxDevices: %v", err)
	}
}

// TestPairConcurrent pairs from several goroutines at once: every device
// is kept and every token verifies.
func TestPairConcurrent(t *testing.T) {
	t.Parallel()
	s := devices.New(filepath.Join(t.TempDir(), "devices.json"), nil)
	const n = 16
	tokens := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, tok, err := s.Pair(context.Background(), fmt.Sprint("device ", i))
			if err != nil {
				t.Error(err)
			}
			tokens[i] = tok
		})
	}
	wg.Wait()
	list, err := s.List()
	if err != nil || len(list) != n {
		t.Fatalf("%d devices after %d pairs (%v)", len(list), n, err)
	}
	for i, tok := range tokens {
		if _, ok := s.Verify(tok); !ok {
			t.Errorf("device %d's token refused", i)
		}
	}
}

// TestStoreFailsClosed puts what is not a store where the store is: a
// FIFO (never blocked on), a link, a file others can read, a file that
// does not decode. No token verifies, and List and Pair say why.
func TestStoreFailsClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	good := filepath.Join(t.TempDir(), "devices.json")
	_, token, err := devices.New(good, nil).Pair(ctx, "phone")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		make func(path string) error
		why  string
	}{
		{"fifo", func(path string) error { return syscall.Mkfifo(path, 0o600) }, "not a regular file"},
		{"symlink", func(path string) error { return os.Symlink(good, path) }, "not a regular file (symlink)"},
		{"readable by others", func(path string) error {
			if err := os.WriteFile(path, data, 0o600); err != nil {
				return err
			}
			return os.Chmod(path, 0o644)
		}, "readable or writable by others"},
		{"garbage", func(path string) error { return os.WriteFile(path, []byte("{not json"), 0o600) }, "invalid character"},
		{"other version", func(path string) error { return os.WriteFile(path, []byte(`{"version":2,"devices":[]}`), 0o600) }, "version 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "devices.json")
			if err := c.make(path); err != nil {
				t.Fatal(err)
			}
			s := devices.New(path, nil)
			if _, ok := s.Verify(token); ok {
				t.Error("a token verified against a broken store")
			}
			if _, err := s.List(); err == nil || !strings.Contains(err.Error(), c.why) {
				t.Errorf("list: %v, want %q", err, c.why)
			}
			if _, _, err := s.Pair(ctx, "tablet"); err == nil {
				t.Error("paired into a broken store")
			}
		})
	}
}

func ExampleStore() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "devices")
	defer os.RemoveAll(dir)
	s := devices.New(filepath.Join(dir, "devices.json"), nil)
	d, token, _ := s.Pair(ctx, "phone")
	_, ok := s.Verify(token)
	fmt.Println(d.Name, ok)
	_, _ = s.Revoke(ctx, d.ID)
	_, ok = s.Verify(token)
	fmt.Println(ok)
	// Output:
	// phone true
	// false
}

// TestTouch records a device's last use at most once per TouchEvery, and
// never brings back a device revoked meanwhile.
func TestTouch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 12, 8, 1, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s := devices.New(filepath.Join(t.TempDir(), "devices.json"), &devices.Options{Now: clock})
	_, token, err := s.Pair(ctx, "phone")
	if err != nil {
		t.Fatal(err)
	}
	lastUsed := func() time.Time {
		d, ok := s.Verify(token)
		if !ok {
			t.Fatal("the token is refused")
		}
		return d.LastUsedAt
	}
	if !lastUsed().IsZero() {
		t.Fatal("a device never served has a last use")
	}
	for _, step := range []struct {
		advance time.Duration
		want    time.Time
	}{
		{0, now},                // the first use is recorded
		{30 * time.Second, now}, // within TouchEvery: not written
		{devices.TouchEvery, now.Add(30*time.Second + devices.TouchEvery)}, // past it: written
	} {
		advance(step.advance)
		d, _ := s.Verify(token)
		if err := s.Touch(ctx, d); err != nil {
			t.Fatal(err)
		}
		if got := lastUsed(); !got.Equal(step.want) {
			t.Errorf("after %v: last used %v, want %v", step.advance, got, step.want)
		}
	}
	d, _ := s.Verify(token)
	if _, err := s.Revoke(ctx, "phone"); err != nil {
		t.Fatal(err)
	}
	advance(2 * devices.TouchEvery)
	if err := s.Touch(ctx, d); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.List(); len(list) != 0 {
		t.Errorf("a touch brought back a revoked device: %+v", list)
	}
}
