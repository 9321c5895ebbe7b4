package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/voltmcp/voltmcp/engine/internal/oauthguard"
	"github.com/voltmcp/voltmcp/engine/internal/transport"
)

// syncBuffer is a log sink for tests that log from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newTestStore returns a store under a fresh agent dir, its log and its
// scrubber.
func newTestStore(t *testing.T) (*Store, *syncBuffer, *transport.Scrubber) {
	t.Helper()
	log := new(syncBuffer)
	scrub := new(transport.Scrubber)
	s := NewStore(Path(t.TempDir(), "srv"), "srv", &StoreOptions{Log: slog.New(slog.NewTextHandler(log, nil)), Scrub: scrub})
	return s, log, scrub
}

// writeFile writes v as JSON (or as it is, when it is []byte) with mode.
func writeFile(t *testing.T, path string, v any, mode os.FileMode) {
	t.Helper()
	data, ok := v.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

const testURL = "https://mcp.example.com/mcp?key=url-secret-1234"

func validFile() *File {
	return &File{Format: Format, Server: "srv", URL: "https://mcp.example.com/mcp", URLHash: URLHash(testURL), ClientID: "client-1",
		TokenURL: "https://as.example.com/token", Token: &oauth2.Token{AccessToken: "access-token-1", RefreshToken: "refresh-token-1",
			Expiry: time.Now().Add(time.Hour)}, SavedAt: time.Now().UTC().Add(-time.Minute)}
}

func TestPath(t *testing.T) {
	if got, want := Path("/agent", "github"), filepath.Join("/agent", "mcp", "auth", "github.json"); got != want {
		t.Errorf("Path = %q, want %q", got, want)
	}
}

func TestStoreSaveAndRead(t *testing.T) {
	s, _, _ := newTestStore(t)
	if f := s.Read(); f != nil {
		t.Fatalf("Read of no file = %+v, want nil", f)
	}
	want := validFile()
	if err := s.Save(want); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	got := s.Read()
	if got == nil || got.Token.AccessToken != want.Token.AccessToken || got.URLHash != want.URLHash || !got.SavedAt.Equal(want.SavedAt) {
		t.Fatalf("Read = %+v, want %+v", got, want)
	}
}

func TestStoreReadIgnoresUnusableFiles(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*File)
		raw  string
		mode os.FileMode
		warn string // in the log; empty: no warning
	}{
		"readable by others": {mode: 0o644, warn: "others can read"},
		"corrupt":            {raw: "{not json", warn: "corrupt token file"},
		"another format":     {edit: func(f *File) { f.Format = 2 }},
		"another server":     {edit: func(f *File) { f.Server = "other" }},
		"no token":           {edit: func(f *File) { f.Token = nil }},
		"no access token":    {edit: func(f *File) { f.Token.AccessToken = "" }},
	} {
		t.Run(name, func(t *testing.T) {
			s, log, _ := newTestStore(t)
			f := validFile()
			if tc.edit != nil {
				tc.edit(f)
			}
			mode := tc.mode
			if mode == 0 {
				mode = 0o600
			}
			var v any = f
			if tc.raw != "" {
				v = []byte(tc.raw)
			}
			writeFile(t, s.Path(), v, mode)
			if got := s.Read(); got != nil {
				t.Errorf("Read = %+v, want nil", got)
			}
			if tc.warn != "" && !strings.Contains(log.String(), tc.warn) {
				t.Errorf("log %q lacks %q", log.String(), tc.warn)
			}
			if tc.warn == "" && log.String() != "" {
				t.Errorf("unexpected log %q", log.String())
			}
		})
	}
}

func TestStoreLoad(t *testing.T) {
	bound := &oauthguard.Policy{Bound: true, Issuer: "https://as.example.com"}
	for name, tc := range map[string]struct {
		edit     func(*File)
		endpoint string
		policy   *oauthguard.Policy
		ok       bool
	}{
		"usable":                      {ok: true},
		"another URL":                 {endpoint: "https://mcp.example.com/other"},
		"expired with refresh token":  {edit: func(f *File) { f.Token.Expiry = time.Now().Add(-time.Hour) }, ok: true},
		"expired, nothing to refresh": {edit: func(f *File) { f.Token.Expiry, f.Token.RefreshToken = time.Now().Add(-time.Hour), "" }},
		"bound client, its issuer":    {edit: func(f *File) { f.Issuer = "https://as.example.com" }, policy: bound, ok: true},
		"bound client, other issuer":  {edit: func(f *File) { f.Issuer = "https://evil.example.com" }, policy: bound},
		"bound client, no issuer":     {policy: bound},
		"bound, another client":       {edit: func(f *File) { f.ClientID = "registered" }, policy: bound, ok: true},
	} {
		t.Run(name, func(t *testing.T) {
			s, _, scrub := newTestStore(t)
			f := validFile()
			if tc.edit != nil {
				tc.edit(f)
			}
			if err := s.Save(f); err != nil {
				t.Fatal(err)
			}
			endpoint := tc.endpoint
			if endpoint == "" {
				endpoint = testURL
			}
			policy := tc.policy
			if policy == nil {
				policy = &oauthguard.Policy{}
			}
			ts := s.Load(endpoint, http.DefaultClient, "client-1", "configured-secret-1", policy)
			if (ts != nil) != tc.ok {
				t.Fatalf("Load = %v, want a token source: %v", ts, tc.ok)
			}
			if ts == nil {
				return
			}
			if got := scrub.Text(f.Token.AccessToken + " " + f.Token.RefreshToken); strings.Contains(got, "token-1") {
				t.Errorf("the stored tokens are not scrubbed: %q", got)
			}
			if ts.file.Token != nil || ts.file.ClientSecret != "" {
				t.Errorf("what is stored beside the token holds %+v", ts.file)
			}
			if f.ClientID == "client-1" && ts.cfg.ClientSecret != "configured-secret-1" {
				t.Errorf("the configured client refreshes with secret %q", ts.cfg.ClientSecret)
			}
			if f.ClientID != "client-1" && ts.cfg.ClientSecret != "" {
				t.Errorf("another client refreshes with the configured secret %q", ts.cfg.ClientSecret)
			}
		})
	}
}

func TestStoreLoadKeepsARegisteredSecret(t *testing.T) {
	s, _, scrub := newTestStore(t)
	f := validFile()
	f.ClientID, f.ClientSecret = "registered", "registered-secret-1"
	if err := s.Save(f); err != nil {
		t.Fatal(err)
	}
	ts := s.Load(testURL, http.DefaultClient, "", "", &oauthguard.Policy{})
	if ts == nil {
		t.Fatal("no token source")
	}
	if ts.cfg.ClientSecret != f.ClientSecret || ts.file.ClientSecret != f.ClientSecret {
		t.Errorf("the registered secret is lost: cfg %q, file %q", ts.cfg.ClientSecret, ts.file.ClientSecret)
	}
	if strings.Contains(scrub.Text(f.ClientSecret), "registered-secret") {
		t.Error("the registered secret is not scrubbed")
	}
}

func TestStoreRefusesSymlinks(t *testing.T) {
	for _, at := range []string{"file", "directory"} {
		t.Run(at, func(t *testing.T) {
			s, log, _ := newTestStore(t)
			elsewhere := filepath.Join(t.TempDir(), "elsewhere")
			link := s.Path()
			if at == "directory" {
				link = filepath.Dir(s.Path())
				if err := os.MkdirAll(elsewhere, 0o700); err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(elsewhere, filepath.Base(s.Path())), validFile(), 0o600)
			} else {
				writeFile(t, elsewhere, validFile(), 0o600)
			}
			if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, link); err != nil {
				t.Fatal(err)
			}
			if err := s.Check(); !errors.Is(err, ErrSymlink) || !strings.Contains(err.Error(), link+" is a symbolic link") {
				t.Errorf("Check = %v", err)
			}
			if f := s.Read(); f != nil {
				t.Error("read a token through a symbolic link")
			}
			if !strings.Contains(log.String(), "symbolic link") {
				t.Errorf("no warning names the link: %s", log.String())
			}
			if err := s.Save(validFile()); !errors.Is(err, ErrSymlink) {
				t.Errorf("Save = %v, want ErrSymlink", err)
			}
			if _, err := s.Lock(context.Background()); !errors.Is(err, ErrSymlink) {
				t.Errorf("Lock = %v, want ErrSymlink", err)
			}
			if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link was replaced: %v", err)
			}
		})
	}
}
