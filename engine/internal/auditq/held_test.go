package auditq

import (
	"context"
	"testing"

	"github.com/voltmcp/voltmcp/engine/audit"
)

// TestHeld checks that a context from WithHeld holds its records until
// release, which builds them in order, once; that a record after the
// release is not held; and that a plain context holds nothing.
func TestHeld(t *testing.T) {
	t.Parallel()
	if HeldIn(context.Background()) != nil {
		t.Fatal("a plain context holds records")
	}
	ctx, release := WithHeld(context.Background())
	h := HeldIn(ctx)
	if h == nil {
		t.Fatal("WithHeld's context holds nothing")
	}
	if HeldIn(context.WithValue(ctx, struct{}{}, 1)) != h {
		t.Error("a child context does not hold its parent's records")
	}
	built := 0
	for _, tool := range []string{"a", "b"} {
		if !h.Hold(func() audit.Record { built++; return audit.Record{Tool: tool} }) {
			t.Fatal("Hold before release did not hold")
		}
	}
	if built != 0 {
		t.Fatal("a held record was built before release")
	}
	recs := release()
	if len(recs) != 2 || recs[0].Tool != "a" || recs[1].Tool != "b" || built != 2 {
		t.Fatalf("release gave %+v after %d builds", recs, built)
	}
	if h.Hold(func() audit.Record { return audit.Record{} }) {
		t.Error("Hold after release held")
	}
	if recs := release(); len(recs) != 0 {
		t.Errorf("a second release gave %+v", recs)
	}
}
