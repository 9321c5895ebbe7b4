package pin

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
)

// pinChildEnv makes the test binary approve one tool and exit (see
// approveChild), so that a test can run approvals in separate processes.
const pinChildEnv = "VOLTMCP_PIN_TEST_APPROVE"

// approveChild approves one tool, the last argument, of server "srv" in
// the store dir, for TestApproveAcrossProcesses; TestMain runs it.
func approveChild(dir string) int {
	s, err := OpenStore(dir)
	if err == nil {
		err = s.Approve("srv", os.Args[len(os.Args)-1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestApproveAcrossProcesses approves each of a server's pending changes
// from its own process, all at once, and checks that every approval
// landed: the store's read-modify-write holds the file's lock.
func TestApproveAcrossProcesses(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var v1, v2 []Meta
	for i := range n {
		name := "tool" + strconv.Itoa(i)
		v1 = append(v1, Meta{Name: name, Description: "one"})
		v2 = append(v2, Meta{Name: name, Description: "two"})
	}
	if _, err := s.Observe("srv", v1, nil); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Observe("srv", v2, nil); err != nil || len(res.Changed) != n {
		t.Fatalf("second observation: %+v, %v", res, err)
	}
	var cmds []*exec.Cmd
	for i := range n {
		cmd := exec.Command(os.Args[0], "-test.run=^$", "tool"+strconv.Itoa(i))
		cmd.Env = append(os.Environ(), pinChildEnv+"="+dir)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	p, err := s.Get("srv")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Pending) != 0 {
		t.Errorf("%d approvals lost: still pending %v", len(p.Pending), p.Pending)
	}
	for name, pin := range p.Tools {
		if pin.Meta.Description != "two" {
			t.Errorf("%s: pinned %q, want the approved version", name, pin.Meta.Description)
		}
	}
}
