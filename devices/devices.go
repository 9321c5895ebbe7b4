// Package devices keeps the clients paired with a user's voltmcp daemon
// (the spec's mobile app, a browser UI): each device has a name, an id and
// a bearer token of its own, apart from the owner's, which the daemon's
// HTTP listener accepts and `voltmcp daemon devices revoke` takes back.
//
// The store is one JSON file, 0600, written atomically and serialized
// between processes (package safefile). It holds each token's SHA-256,
// never the token: the token is shown once, when the device is paired,
// and a copy of the file lets no one in. A token is checked in constant
// time against every device's hash.
package devices

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/voltmcp/voltmcp/safefile"
)

// TokenPrefix starts every device token, so that one is told from the
// owner's token and from other secrets at a glance (and by scanners).
const TokenPrefix = "vmd_"

// Limits of a store.
const (
	// MaxDevices is how many devices may be paired at once.
	MaxDevices = 64
	// MaxNameBytes bounds a device's name.
	MaxNameBytes = 64
	// maxFileBytes bounds the file read.
	maxFileBytes = 256 << 10
)

// ErrUnknownDevice is Revoke's error for an id no device has.
var ErrUnknownDevice = errors.New("no such device")

// Device is one paired client, as the store lists it: never its token.
type Device struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	PairedAt time.Time `json:"pairedAt"`
	// LastUsedAt is when the daemon last served the device, to the
	// minute ([Store.Touch]); zero before its first request.
	LastUsedAt time.Time `json:"lastUsedAt,omitzero"`
}

// record is a device as the file holds it.
type record struct {
	Device
	TokenSHA256 string `json:"tokenSha256"`
}

// file is the store's file.
type file struct {
	Version int      `json:"version"`
	Devices []record `json:"devices"`
}

// Store is the device store at a path. Its methods are safe for concurrent
// use, by this process and others. Make one with New.
type Store struct {
	path string
	now  func() time.Time
}

// Options tune a Store. The zero value uses the wall clock.
type Options struct {
	// Now is the clock for PairedAt. Nil means time.Now.
	Now func() time.Time
}

// New returns the store kept in the file at path (created by the first
// Pair). A nil opts is the zero Options.
func New(path string, opts *Options) *Store {
	s := &Store{path: path, now: time.Now}
	if opts != nil && opts.Now != nil {
		s.now = opts.Now
	}
	return s
}

// Pair adds a device named name and returns it with its token, which is
// shown to the user once and stored only as its hash. The name is for
// people: one to 64 bytes of printable text, unique among the devices.
func (s *Store) Pair(ctx context.Context, name string) (Device, string, error) {
	if err := checkName(name); err != nil {
		return Device{}, "", err
	}
	var secret [32]byte
	var id [6]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return Device{}, "", fmt.Errorf("devices: pair: %w", err)
	}
	if _, err := rand.Read(id[:]); err != nil {
		return Device{}, "", fmt.Errorf("devices: pair: %w", err)
	}
	token := TokenPrefix + base64.RawURLEncoding.EncodeToString(secret[:])
	d := Device{ID: hex.EncodeToString(id[:]), Name: name, PairedAt: s.now().UTC().Truncate(time.Second)}
	err := s.update(ctx, func(f *file) error {
		if len(f.Devices) >= MaxDevices {
			return fmt.Errorf("devices: pair: %d devices are paired, the most there may be; revoke one first (voltmcp daemon devices revoke ID)", MaxDevices)
		}
		if slices.ContainsFunc(f.Devices, func(r record) bool { return r.Name == name }) {
			return fmt.Errorf("devices: pair: a device named %q is paired already; revoke it or choose another name", name)
		}
		f.Devices = append(f.Devices, record{Device: d, TokenSHA256: hashToken(token)})
		return nil
	})
	if err != nil {
		return Device{}, "", err
	}
	return d, token, nil
}

// List returns the paired devices, oldest first.
func (s *Store) List() ([]Device, error) {
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	out := make([]Device, 0, len(f.Devices))
	for _, r := range f.Devices {
		out = append(out, r.Device)
	}
	return out, nil
}

// Revoke removes the device with id (or, when no id matches, the one named
// id): its token is refused from then on.
func (s *Store) Revoke(ctx context.Context, id string) (Device, error) {
	var gone Device
	err := s.update(ctx, func(f *file) error {
		i := slices.IndexFunc(f.Devices, func(r record) bool { return r.ID == id })
		if i < 0 {
			i = slices.IndexFunc(f.Devices, func(r record) bool { return r.Name == id })
		}
		if i < 0 {
			return fmt.Errorf("devices: revoke %q: %w", id, ErrUnknownDevice)
		}
		gone = f.Devices[i].Device
		f.Devices = slices.Delete(f.Devices, i, i+1)
		return nil
	})
	return gone, err
}

// Verify returns the device whose token token is, and false when none is
// (or the store cannot be read: it fails closed). The hash of token is
// compared with every device's in constant time.
func (s *Store) Verify(token string) (Device, bool) {
	if !strings.HasPrefix(token, TokenPrefix) {
		return Device{}, false
	}
	f, err := s.read()
	if err != nil {
		return Device{}, false
	}
	h := hashToken(token)
	var found Device
	ok := 0
	for _, r := range f.Devices {
		if subtle.ConstantTimeCompare([]byte(h), []byte(r.TokenSHA256)) == 1 {
			found, ok = r.Device, 1
		}
	}
	return found, ok == 1
}

// TouchEvery is how stale a device's LastUsedAt may be: [Store.Touch]
// writes the store at most this often per device.
const TouchEvery = time.Minute

// Touch records that d, as [Store.Verify] returned it, was served now.
// It writes the store only when d's LastUsedAt is [TouchEvery] old or
// more, and never brings back a device revoked meanwhile.
func (s *Store) Touch(ctx context.Context, d Device) error {
	now := s.now().UTC().Truncate(time.Second)
	if now.Sub(d.LastUsedAt) < TouchEvery {
		return nil
	}
	return s.update(ctx, func(f *file) error {
		for i := range f.Devices {
			if f.Devices[i].ID == d.ID {
				f.Devices[i].LastUsedAt = now
			}
		}
		return nil
	})
}

// hashToken is the hex SHA-256 of a token.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// checkName refuses a name that is empty, too long, not UTF-8 or holds
// control characters.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("devices: pair: the device needs a name")
	case len(name) > MaxNameBytes:
		return fmt.Errorf("devices: pair: the name is %d bytes, over the limit of %d", len(name), MaxNameBytes)
	case !utf8.ValidString(name) || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }):
		return fmt.Errorf("devices: pair: the name %q holds control characters or is not UTF-8", name)
	}
	return nil
}

// read reads the store; no file is an empty store.
func (s *Store) read() (file, error) {
	b, err := safefile.ReadFile(s.path, &safefile.ReadOptions{MaxSize: maxFileBytes, NoFollow: true, Private: true})
	if errors.Is(err, os.ErrNotExist) {
		return file{Version: 1}, nil
	}
	if err != nil {
		return file{}, fmt.Errorf("devices: %w", err)
	}
	return decode(s.path, b)
}

// decode decodes the store's bytes.
func decode(path string, b []byte) (file, error) {
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return file{}, fmt.Errorf("devices: %s: %w", path, err)
	}
	if f.Version != 1 {
		return file{}, fmt.Errorf("devices: %s: version %d, want 1", path, f.Version)
	}
	return f, nil
}

// update edits the store under its lock.
func (s *Store) update(ctx context.Context, edit func(*file) error) error {
	return safefile.Update(ctx, s.path, &safefile.WriteOptions{Read: &safefile.ReadOptions{MaxSize: maxFileBytes, NoFollow: true, Private: true}},
		func(old []byte) ([]byte, error) {
			f := file{Version: 1}
			if old != nil {
				var err error
				if f, err = decode(s.path, old); err != nil {
					return nil, err
				}
			}
			if err := edit(&f); err != nil {
				return nil, err
			}
			return json.MarshalIndent(f, "", "  ")
		})
}
