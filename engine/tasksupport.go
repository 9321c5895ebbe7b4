package engine

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/voltmcp/voltmcp/engine/internal/line"
)

// taskTap reads each tool's execution.taskSupport from the raw
// tools/list responses of a stdio server's connection, which the go-sdk
// decodes into a Tool that has no such field. It is a [line.Tap] that
// consumes nothing: it notes the ids of the tools/list requests the
// go-sdk writes, and reads the responses to them before the go-sdk gets
// them, so that what a listing's page said is there when the page
// returns (take). An HTTP server's listing is the go-sdk's alone: its
// tools show no task support.
type taskTap struct {
	mu      sync.Mutex
	pending map[string]bool   // ids of tools/list requests in flight
	support map[string]string // tool name → taskSupport, of the pages read since take
}

// idKey is a request id as a map key: a number and a string that look
// alike are different ids.
func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

// Outbound notes a tools/list request.
func (t *taskTap) Outbound(msg jsonrpc.Message) {
	r, ok := msg.(*jsonrpc.Request)
	if !ok || r.Method != "tools/list" || !r.ID.IsValid() {
		return
	}
	t.mu.Lock()
	if t.pending == nil {
		t.pending = map[string]bool{}
	}
	t.pending[idKey(r.ID)] = true
	t.mu.Unlock()
}

// Inbound reads the task support of the tools a response to a tools/list
// request lists, and leaves the response to the go-sdk.
func (t *taskTap) Inbound(_ *line.Conn, msg jsonrpc.Message) (bool, func(func())) {
	r, ok := msg.(*jsonrpc.Response)
	if !ok || r.Error != nil {
		return false, nil
	}
	t.mu.Lock()
	key := idKey(r.ID)
	listing := t.pending[key]
	delete(t.pending, key)
	t.mu.Unlock()
	if !listing {
		return false, nil
	}
	var page struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if json.Unmarshal(r.Result, &page) != nil {
		return false, nil // the go-sdk reports what is wrong with it
	}
	t.mu.Lock()
	for _, tool := range page.Tools {
		if tool.Execution != nil && tool.Execution.TaskSupport != "" {
			if t.support == nil {
				t.support = map[string]string{}
			}
			t.support[tool.Name] = tool.Execution.TaskSupport
		}
	}
	t.mu.Unlock()
	return false, nil
}

// Drain has nothing to wait for: the tap writes nothing.
func (t *taskTap) Drain() {}

// take returns the task support read since the last take, and forgets
// it. A nil tap has none.
func (t *taskTap) take() map[string]string {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.support
	t.support = nil
	return s
}
