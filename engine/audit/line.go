package audit

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/voltmcp/voltmcp/engine/internal/jsonwire"
)

// appendLine appends the line of r to b: byte for byte what a
// json.Encoder with SetEscapeHTML(false) writes for r (with detail, when
// not nil, as its Detail: see Log.encodeWith), newline included, sparing
// every record encoding/json's reflection. It reports false, having
// appended nothing, for a record it leaves to encoding/json: one with a
// Detail not encoded yet, or a time encoding/json refuses. The
// differential test (TestAppendLine, FuzzAppendLine) holds it to
// encoding/json.
func appendLine(b []byte, r *Record, detail []byte) ([]byte, bool) {
	if detail == nil && len(r.Detail) > 0 {
		return b, false
	}
	if y := r.Time.Year(); y < 0 || y > 9999 {
		return b, false
	}
	if _, off := r.Time.Zone(); off%60 != 0 {
		return b, false // encoding/json refuses a zone with seconds
	}
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	b = append(b, `,"prev":`...)
	b = jsonwire.AppendQuotedNoHTML(b, r.Prev)
	b = append(b, `,"time":"`...)
	b = r.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","kind":`...)
	b = jsonwire.AppendQuotedNoHTML(b, r.Kind)
	b = appendOptString(b, `,"workspace":`, r.Workspace)
	b = appendOptString(b, `,"session":`, r.Session)
	b = appendOptString(b, `,"surface":`, r.Surface)
	b = appendOptString(b, `,"server":`, r.Server)
	b = appendOptString(b, `,"tool":`, r.Tool)
	b = appendOptString(b, `,"resource":`, r.Resource)
	b = appendOptString(b, `,"prompt":`, r.Prompt)
	b = appendOptString(b, `,"risk":`, r.Risk)
	b = appendOptString(b, `,"status":`, r.Status)
	b = appendOptInt(b, `,"duration_ms":`, r.DurationMS)
	b = appendOptInt(b, `,"result_bytes":`, r.ResultBytes)
	b = appendOptString(b, `,"result_sha256":`, r.ResultSHA256)
	if r.Truncated {
		b = append(b, `,"truncated":true`...)
	}
	b = appendOptString(b, `,"cache_id":`, r.CacheID)
	if len(r.Args) > 0 {
		b = append(b, `,"args":{`...)
		for i, k := range slices.Sorted(maps.Keys(r.Args)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonwire.AppendQuotedNoHTML(b, k)
			b = append(b, ':')
			b = jsonwire.AppendQuotedNoHTML(b, r.Args[k])
		}
		b = append(b, '}')
	}
	if d := r.Decision; d != nil {
		b = append(b, `,"decision":{"allowed":`...)
		b = strconv.AppendBool(b, d.Allowed)
		if len(d.Reasons) > 0 {
			b = append(b, `,"reasons":[`...)
			for i, s := range d.Reasons {
				if i > 0 {
					b = append(b, ',')
				}
				b = jsonwire.AppendQuotedNoHTML(b, s)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = appendOptString(b, `,"reason":`, r.Reason)
	b = appendOptInt(b, `,"intent":`, r.Intent)
	b = appendOptString(b, `,"call_id":`, r.CallID)
	if detail != nil {
		b = append(b, `,"detail":`...)
		b = append(b, detail...)
	}
	return append(b, '}', '\n'), true
}

// appendOptString appends the member key (with its leading comma) with
// the value s, unless s is empty (omitempty).
func appendOptString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return jsonwire.AppendQuotedNoHTML(append(b, key...), s)
}

// appendOptInt is appendOptString for an integer: 0 is left out.
func appendOptInt(b []byte, key string, n int64) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), n, 10)
}
