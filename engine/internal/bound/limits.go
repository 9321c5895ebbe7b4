package bound

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limits bounds what one server may send. A zero field means "the
// default": every function of this package fills zero fields from
// [DefaultLimits], so the zero Limits is the defaults. Negative values are
// treated as zero.
type Limits struct {
	// MaxTools is how many tools of one server are kept; the rest are
	// dropped with a reason (see [Tools] for which ones are kept).
	MaxTools int
	// MaxNameLen is the longest tool name kept, in bytes. Names are
	// never longer than 64 bytes whatever this says, since 64 is part of
	// the name rule itself.
	MaxNameLen int
	// MaxDescriptionChars is the length, in characters (runes), to which
	// a tool description, or a description inside a schema, is clipped.
	MaxDescriptionChars int
	// MaxTitleChars is the length, in characters, to which a title is
	// clipped.
	MaxTitleChars int
	// MaxSchemaBytes is the largest input or output schema, in bytes of
	// JSON, that is kept; a larger one drops its tool.
	MaxSchemaBytes int
	// MaxSchemaDepth is the deepest nesting of objects and arrays a schema
	// may have, the root object counting as 1; a deeper one drops its
	// tool.
	MaxSchemaDepth int
	// MaxEnumValues is how many values of one enum are kept; the rest are
	// clipped and reported.
	MaxEnumValues int
	// MaxResultBytes is the most bytes of one tool result the gateway
	// passes on.
	MaxResultBytes int64
	// MaxMessageBytes is the largest single JSON-RPC message read from a
	// server.
	MaxMessageBytes int64
	// RequestTimeout bounds one request to a server.
	RequestTimeout time.Duration
}

// The defaults, each sized to be generous to honest servers and cheap
// against hostile ones.
const (
	// defaultMaxTools: the largest honest servers (cloud provider
	// bundles) list a few hundred tools; a thousand leaves room for them
	// while keeping a search index and a pin file small.
	defaultMaxTools = 1000
	// maxNameLen is fixed by the name rule [A-Za-z0-9_-]{1,64}.
	maxNameLen = 64
	// defaultMaxDescriptionChars: a useful description is a paragraph or
	// two; 2048 characters is about 500 tokens, the most one tool should
	// cost in a model's context.
	defaultMaxDescriptionChars = 2048
	// defaultMaxTitleChars: a title is a short label.
	defaultMaxTitleChars = 128
	// defaultMaxSchemaBytes: real input schemas are a few KiB; 64 KiB
	// admits generated schemas of large APIs and rejects schema bombs.
	defaultMaxSchemaBytes = 64 << 10
	// defaultMaxSchemaDepth: honest schemas nest a handful of levels; 32
	// matches the search index's walk and is far below anything that
	// could hurt a recursive consumer further down.
	defaultMaxSchemaDepth = 32
	// defaultMaxEnumValues: an enum a model must read in full; beyond a
	// few hundred values it is a lookup table, not a choice.
	defaultMaxEnumValues = 256
	// defaultMaxResultBytes: 4 MiB holds any text a model can use and a
	// modest image; the gateway truncates or spills larger results.
	defaultMaxResultBytes = 4 << 20
	// defaultMaxMessageBytes: twice the result bound, leaving room for
	// JSON escaping and base64 (4/3) of a maximal result.
	defaultMaxMessageBytes = 8 << 20
	// defaultRequestTimeout: long enough for slow remote APIs, short
	// enough that a hung server frees its caller within a minute.
	defaultRequestTimeout = 60 * time.Second
	// maxSchemaDepthCeiling bounds MaxSchemaDepth set by environment:
	// deeper schemas would exceed what encoding/json decodes anyway.
	maxSchemaDepthCeiling = 1000
)

// DefaultLimits returns the built-in limits.
func DefaultLimits() Limits {
	return Limits{
		MaxTools:            defaultMaxTools,
		MaxNameLen:          maxNameLen,
		MaxDescriptionChars: defaultMaxDescriptionChars,
		MaxTitleChars:       defaultMaxTitleChars,
		MaxSchemaBytes:      defaultMaxSchemaBytes,
		MaxSchemaDepth:      defaultMaxSchemaDepth,
		MaxEnumValues:       defaultMaxEnumValues,
		MaxResultBytes:      defaultMaxResultBytes,
		MaxMessageBytes:     defaultMaxMessageBytes,
		RequestTimeout:      defaultRequestTimeout,
	}
}

// Merge returns l with every positive field of override in place of its
// own. Layers compose left to right:
// DefaultLimits().Merge(settings).Merge(server).Merge(env).
func (l Limits) Merge(override Limits) Limits {
	pick := func(dst *int, v int) {
		if v > 0 {
			*dst = v
		}
	}
	pick64 := func(dst *int64, v int64) {
		if v > 0 {
			*dst = v
		}
	}
	pick(&l.MaxTools, override.MaxTools)
	pick(&l.MaxNameLen, override.MaxNameLen)
	pick(&l.MaxDescriptionChars, override.MaxDescriptionChars)
	pick(&l.MaxTitleChars, override.MaxTitleChars)
	pick(&l.MaxSchemaBytes, override.MaxSchemaBytes)
	pick(&l.MaxSchemaDepth, override.MaxSchemaDepth)
	pick(&l.MaxEnumValues, override.MaxEnumValues)
	pick64(&l.MaxResultBytes, override.MaxResultBytes)
	pick64(&l.MaxMessageBytes, override.MaxMessageBytes)
	if override.RequestTimeout > 0 {
		l.RequestTimeout = override.RequestTimeout
	}
	return l
}

// Lower returns l with each field of o that is positive and lower put in
// its place: a bound another source may only tighten, never loosen.
func (l Limits) Lower(o Limits) Limits {
	lower := func(dst *int, v int) {
		if v > 0 && v < *dst {
			*dst = v
		}
	}
	lower64 := func(dst *int64, v int64) {
		if v > 0 && v < *dst {
			*dst = v
		}
	}
	lower(&l.MaxTools, o.MaxTools)
	lower(&l.MaxNameLen, o.MaxNameLen)
	lower(&l.MaxDescriptionChars, o.MaxDescriptionChars)
	lower(&l.MaxTitleChars, o.MaxTitleChars)
	lower(&l.MaxSchemaBytes, o.MaxSchemaBytes)
	lower(&l.MaxSchemaDepth, o.MaxSchemaDepth)
	lower(&l.MaxEnumValues, o.MaxEnumValues)
	lower64(&l.MaxResultBytes, o.MaxResultBytes)
	lower64(&l.MaxMessageBytes, o.MaxMessageBytes)
	if o.RequestTimeout > 0 && o.RequestTimeout < l.RequestTimeout {
		l.RequestTimeout = o.RequestTimeout
	}
	return l
}

// norm returns l with its zero fields filled from the defaults and
// MaxNameLen capped at 64.
func (l Limits) norm() Limits {
	l = DefaultLimits().Merge(l)
	l.MaxNameLen = min(l.MaxNameLen, maxNameLen)
	return l
}

// The environment variables FromEnv reads.
const (
	EnvMaxTools            = "VOLTMCP_MAX_TOOLS"
	EnvMaxDescriptionChars = "VOLTMCP_MAX_DESCRIPTION_CHARS"
	EnvMaxSchemaBytes      = "VOLTMCP_MAX_SCHEMA_BYTES"
	EnvMaxSchemaDepth      = "VOLTMCP_MAX_SCHEMA_DEPTH"
	EnvMaxResultBytes      = "VOLTMCP_MAX_RESULT_BYTES"
	EnvMaxMessageBytes     = "VOLTMCP_MAX_MESSAGE_BYTES"
	EnvRequestTimeout      = "VOLTMCP_REQUEST_TIMEOUT"
)

// maxEnvValue bounds the numbers FromEnv accepts, in whatever unit: a
// limit above 1 TiB is a typo, not a setting.
const maxEnvValue = 1 << 40

// FromEnv reads the limits set by environment variables through lookup
// (os.LookupEnv in production). Only the variables that are set and valid
// fill their fields; the others stay zero, so that the result is an
// override for [Limits.Merge]. Counts are positive integers; byte sizes
// are positive integers with an optional suffix KiB, MiB or GiB (or K, M,
// G, all powers of 1024); the timeout is a Go duration such as "30s", or
// a bare number of seconds. Each bad value is reported by an error naming
// the variable and the value, and leaves its field zero.
func FromEnv(lookup func(string) (string, bool)) (Limits, []error) {
	var l Limits
	var errs []error
	count := func(name string, dst *int, ceiling int64) {
		s, ok := lookup(name)
		if !ok || strings.TrimSpace(s) == "" {
			return
		}
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || n < 1 || n > ceiling {
			errs = append(errs, fmt.Errorf("%s=%q: want a whole number from 1 to %d", name, clipValue(s), ceiling))
			return
		}
		*dst = int(n)
	}
	size := func(name string, set func(int64)) {
		s, ok := lookup(name)
		if !ok || strings.TrimSpace(s) == "" {
			return
		}
		n, err := parseSize(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", name, clipValue(s), err))
			return
		}
		set(n)
	}
	count(EnvMaxTools, &l.MaxTools, 1_000_000)
	count(EnvMaxDescriptionChars, &l.MaxDescriptionChars, 1<<20)
	size(EnvMaxSchemaBytes, func(n int64) { l.MaxSchemaBytes = int(n) })
	count(EnvMaxSchemaDepth, &l.MaxSchemaDepth, maxSchemaDepthCeiling)
	size(EnvMaxResultBytes, func(n int64) { l.MaxResultBytes = n })
	size(EnvMaxMessageBytes, func(n int64) { l.MaxMessageBytes = n })
	if s, ok := lookup(EnvRequestTimeout); ok && strings.TrimSpace(s) != "" {
		d, err := parseTimeout(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", EnvRequestTimeout, clipValue(s), err))
		} else {
			l.RequestTimeout = d
		}
	}
	return l, errs
}

// parseSize parses a positive byte size with an optional binary suffix.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > maxEnvValue/mult {
		return 0, errors.New("want a positive number of bytes, optionally with KiB, MiB or GiB, up to 1 TiB")
	}
	return n * mult, nil
}

// parseTimeout parses a positive Go duration, or a bare number of seconds.
func parseTimeout(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 1 || n > 7*24*3600 {
			return 0, errors.New("want a positive duration such as 30s, up to a week")
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > 7*24*time.Hour {
		return 0, errors.New("want a positive duration such as 30s, up to a week")
	}
	return d, nil
}

// clipValue shortens a bad environment value for an error message.
func clipValue(s string) string {
	out, _ := SanitizeText(s, 64)
	return out
}
