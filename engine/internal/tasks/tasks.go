package tasks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Read returns the task support of each tool the result of a tools/list
// request lists: tool name → execution.taskSupport, for the tools whose
// taskSupport is a non-empty string. Keys match exactly, as the go-sdk's
// decoder matches them (not in any case, as encoding/json's structs do).
// A result that is not a JSON object with a "tools" array gives nil; so
// does one that lists no task support. A tool that is not an object, or
// whose name or taskSupport is not a string, is skipped.
func Read(result []byte) map[string]string {
	var top map[string]json.RawMessage
	var tools []json.RawMessage
	if json.Unmarshal(result, &top) != nil || json.Unmarshal(top["tools"], &tools) != nil {
		return nil
	}
	var support map[string]string
	for _, raw := range tools {
		var tool map[string]json.RawMessage
		if json.Unmarshal(raw, &tool) != nil {
			continue
		}
		var exec map[string]json.RawMessage
		var name, ts string
		if json.Unmarshal(tool["name"], &name) != nil || json.Unmarshal(tool["execution"], &exec) != nil ||
			json.Unmarshal(exec["taskSupport"], &ts) != nil || ts == "" {
			continue
		}
		if support == nil {
			support = map[string]string{}
		}
		support[name] = ts
	}
	return support
}

// Listings follows the tools/list requests of one session: it notes the
// id of each request sent ([Listings.Request]), reads the task support
// of the tools the answer to one lists ([Listings.Response]), and keeps
// it until [Listings.Take]. Its methods are safe for concurrent use, and
// hold its lock only to note or take, never while reading.
type Listings struct {
	mu      sync.Mutex
	pending map[string]bool   // ids of tools/list requests in flight
	support map[string]string // tool name → taskSupport, of the pages read since Take
	n       atomic.Int32      // len(pending), read without the lock
}

// idKey is a request id as a map key: a number and a string that look
// alike are different ids.
func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

// Request notes msg if it is a tools/list request, and reports whether
// it is.
func (l *Listings) Request(msg jsonrpc.Message) bool {
	r, ok := msg.(*jsonrpc.Request)
	if !ok || r.Method != "tools/list" || !r.ID.IsValid() {
		return false
	}
	l.mu.Lock()
	if l.pending == nil {
		l.pending = map[string]bool{}
	}
	if !l.pending[idKey(r.ID)] {
		l.pending[idKey(r.ID)] = true
		l.n.Add(1)
	}
	l.mu.Unlock()
	return true
}

// Pending reports whether a tools/list request noted is still
// unanswered: when none is, no message needs to be read.
func (l *Listings) Pending() bool { return l.n.Load() > 0 }

// Response reads the task support of the tools listed, if msg answers a
// tools/list request noted, and forgets that request.
func (l *Listings) Response(msg jsonrpc.Message) {
	r, ok := msg.(*jsonrpc.Response)
	if !ok || !l.Pending() {
		return
	}
	key := idKey(r.ID)
	l.mu.Lock()
	listing := l.pending[key]
	if listing {
		delete(l.pending, key)
		l.n.Add(-1)
	}
	l.mu.Unlock()
	if !listing || r.Error != nil {
		return
	}
	support := Read(r.Result)
	if len(support) == 0 {
		return
	}
	l.mu.Lock()
	if l.support == nil {
		l.support = map[string]string{}
	}
	for name, ts := range support {
		l.support[name] = ts
	}
	l.mu.Unlock()
}

// Sent notes the raw message data, as [Listings.Request] does, and
// returns its id if it is a tools/list request. Bytes that do not name
// the method are not decoded.
func (l *Listings) Sent(data []byte) (jsonrpc.ID, bool) {
	if !bytes.Contains(data, []byte(`"tools/list"`)) {
		return jsonrpc.ID{}, false
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil || !l.Request(msg) {
		return jsonrpc.ID{}, false
	}
	return msg.(*jsonrpc.Request).ID, true
}

// Forget forgets the tools/list request id, which will not be answered:
// sending it failed.
func (l *Listings) Forget(id jsonrpc.ID) {
	key := idKey(id)
	l.mu.Lock()
	if l.pending[key] {
		delete(l.pending, key)
		l.n.Add(-1)
	}
	l.mu.Unlock()
}

// Received reads the raw message data, as [Listings.Response] does; it
// decodes nothing while no listing is pending.
func (l *Listings) Received(data []byte) {
	if !l.Pending() {
		return
	}
	if msg, err := jsonrpc.DecodeMessage(data); err == nil {
		l.Response(msg)
	}
}

// Take returns the task support read since the last Take, and forgets
// it. A nil Listings has none.
func (l *Listings) Take() map[string]string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.support
	l.support = nil
	return s
}
