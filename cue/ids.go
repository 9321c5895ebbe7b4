package cue

import "strings"

// maxIDLen bounds a server id, so mcp__<server>__<tool> stays within the
// 128 characters clients accept for a tool name.
const maxIDLen = 48

// NormalizeID turns a server key into voltmcp's stable id: lower case
// ASCII letters, digits, single '-' and single '_', at most 48 bytes, with
// no separator at either end. Every other character becomes '-'. It
// returns "" when nothing usable is left. The id is what tools, events,
// caches and direct tool names (mcp__<id>__<tool>) use, so "GitHub" and
// "github" are the same server.
func NormalizeID(key string) string {
	var b strings.Builder
	last := byte(0)
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			c = '-'
		}
		if (c == '-' || c == '_') && (b.Len() == 0 || last == '-' || last == '_') {
			continue
		}
		b.WriteByte(c)
		last = c
	}
	id := strings.TrimRight(b.String(), "-_")
	if len(id) > maxIDLen {
		id = strings.TrimRight(id[:maxIDLen], "-_")
	}
	return id
}
