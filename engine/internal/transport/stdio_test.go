package transport

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestStdioConnects starts a child that echoes what it reads: a message
// written on the connection comes back, and the process and connection
// are those Connect made.
func TestStdioConnects(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	st := &Stdio{Command: Command{Path: exe, Env: withMode(nil, "cat"), Grace: time.Second}}
	if st.Process() != nil || st.Conn() != nil {
		t.Fatal("a process or connection before Connect")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Patience)
	defer cancel()
	conn, err := st.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if st.Process() == nil || st.Conn() == nil || conn != st.Conn() {
		t.Fatalf("process %v, connection %v", st.Process(), st.Conn())
	}
	id, _ := jsonrpc.MakeID(float64(7))
	if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: "ping"}); err != nil {
		t.Fatal(err)
	}
	msg, err := conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if req, ok := msg.(*jsonrpc.Request); !ok || req.Method != "ping" || req.ID != id {
		t.Errorf("read back %#v", msg)
	}
}

func TestStdioStartFails(t *testing.T) {
	st := &Stdio{Command: Command{Path: filepath.Join(t.TempDir(), "missing-server")}}
	if _, err := st.Connect(context.Background()); err == nil || st.Process() != nil {
		t.Errorf("Connect = %v, process %v", err, st.Process())
	}
}
