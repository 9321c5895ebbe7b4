package engine

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/voltmcp/voltmcp/engine/internal/output"
)

// The answers of search, list_resources and list_prompts come a page at
// a time. A page that is not the last gives nextCursor; the same input
// with cursor set to it gives the next page. A cursor is opaque to the
// agent: it holds the action it pages, where the next page begins, and a
// fingerprint of what was paged (the query and server, and the state of
// the index or of the server's listing), so that a cursor of another
// query, or one given before the results changed, is refused with a
// clear error rather than skipping or repeating results.

// The bounds of a list page: at most maxListPage items, and at most
// maxListPageBytes of their JSON, but always at least one item.
const (
	maxListPage      = 50
	maxListPageBytes = 32 << 10
)

// cursorVersion starts every cursor; a cursor of another version is
// invalid.
const cursorVersion = "c1"

// pageKind names what a cursor pages.
type pageKind string

const (
	pageSearch    pageKind = "search"
	pageResources pageKind = "list_resources"
	pagePrompts   pageKind = "list_prompts"
)

// pageFingerprint identifies what is paged: the parts, in order.
func pageFingerprint(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// encodeCursor is the cursor of the page of kind that begins at at.
func encodeCursor(kind pageKind, at int, fingerprint string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorVersion + ":" + string(kind) + ":" + strconv.Itoa(at) + ":" + fingerprint))
}

// decodeCursor returns where the page cursor points at begins, checking
// that it pages kind and what fingerprint identifies. An empty cursor is
// the first page.
func decodeCursor(cursor string, kind pageKind, fingerprint string) (int, error) {
	if cursor == "" {
		return 0, nil
	}
	shown := output.CleanText(output.ClipUTF8(cursor, 48), 48)
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	parts := strings.Split(string(raw), ":")
	at := -1
	if err == nil && len(parts) == 4 && parts[0] == cursorVersion {
		if n, err := strconv.Atoi(parts[2]); err == nil && n >= 0 {
			at = n
		}
	}
	if at < 0 {
		return 0, fmt.Errorf("invalid cursor %q: pass the nextCursor of the previous page as it came, or leave cursor out for the first page", shown)
	}
	if parts[1] != string(kind) {
		return 0, fmt.Errorf("the cursor %q pages %s, not %s: pass it to the action that gave it", shown, parts[1], kind)
	}
	if parts[3] != fingerprint {
		return 0, fmt.Errorf("stale cursor %q: it is of another query or server, or the results changed since it was given; run %s again without cursor", shown, kind)
	}
	return at, nil
}

// listPage returns the page of items (each already as a model sees it)
// that begins at at: as many as maxListPage and maxListPageBytes allow,
// at least one, and where the next page begins, or 0 when it is the
// last.
func listPage[T any](items []T, at int) ([]T, int) {
	if at >= len(items) {
		return nil, 0
	}
	size := 0
	end := at
	for end < len(items) && end-at < maxListPage {
		b, _ := json.Marshal(items[end]) // plain data
		if end > at && size+len(b)+1 > maxListPageBytes {
			break
		}
		size += len(b) + 1
		end++
	}
	if end == len(items) {
		return items[at:end], 0
	}
	return items[at:end], end
}

// metadataState identifies a listing of a server for a cursor: another
// listing may list other items.
func metadataState(m *Metadata) string {
	return m.Hash + ":" + strconv.FormatInt(m.FetchedAt.UnixNano(), 10)
}
