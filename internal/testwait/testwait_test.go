package testwait

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/npmpeers"
)

// TestNoShortWaits finds every bound shorter than [Patience] written as a literal
// in the module's tests: a context.WithTimeout, a time.After, a
// time.NewTimer or a time.Now().Add deadline. Each must use this
// package, or say with a "testwait:" comment why it is short.
func TestNoShortWaits(t *testing.T) {
	root, err := npmpeers.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		for _, f := range shortWaits(t, path) {
			found = append(found, rel+":"+f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: a short literal bound; wait with testwait (Patience, Context, For), or say why it is short in a \"testwait:\" comment", f)
	}
}

// shortWaits returns "line: call" for each short literal bound in a file.
func shortWaits(t *testing.T, path string) []string {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	excused := map[int]bool{}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if strings.Contains(c.Text, "testwait:") {
				line := fset.Position(c.Slash).Line
				excused[line] = true
				excused[line+1] = true
			}
		}
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		var arg ast.Expr
		switch name := callName(call.Fun); name {
		case "context.WithTimeout":
			if len(call.Args) == 2 {
				arg = call.Args[1]
			}
		case "time.After", "time.NewTimer":
			if len(call.Args) == 1 {
				arg = call.Args[0]
			}
		case "time.Now().Add":
			if len(call.Args) == 1 {
				arg = call.Args[0]
			}
		}
		if arg == nil {
			return true
		}
		d, ok := literalDuration(arg)
		line := fset.Position(call.Pos()).Line
		if ok && d < Patience && !excused[line] {
			out = append(out, strconv.Itoa(line)+": "+string(src[fset.Position(call.Pos()).Offset:fset.Position(call.End()).Offset]))
		}
		return true
	})
	return out
}

// callName names a called function as written: "pkg.Func" or
// "time.Now().Add".
func callName(fun ast.Expr) string {
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	switch x := sel.X.(type) {
	case *ast.Ident:
		return x.Name + "." + sel.Sel.Name
	case *ast.CallExpr:
		if callName(x.Fun) == "time.Now" && len(x.Args) == 0 {
			return "time.Now()." + sel.Sel.Name
		}
	}
	return ""
}

// literalDuration evaluates N, time.Unit and N * time.Unit.
func literalDuration(e ast.Expr) (time.Duration, bool) {
	switch x := e.(type) {
	case *ast.ParenExpr:
		return literalDuration(x.X)
	case *ast.BasicLit:
		if x.Kind == token.INT {
			n, err := strconv.ParseInt(x.Value, 0, 64)
			return time.Duration(n), err == nil
		}
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok && id.Name == "time" {
			switch x.Sel.Name {
			case "Nanosecond":
				return time.Nanosecond, true
			case "Microsecond":
				return time.Microsecond, true
			case "Millisecond":
				return time.Millisecond, true
			case "Second":
				return time.Second, true
			case "Minute":
				return time.Minute, true
			case "Hour":
				return time.Hour, true
			}
		}
	case *ast.BinaryExpr:
		if x.Op == token.MUL {
			a, ok1 := literalDuration(x.X)
			b, ok2 := literalDuration(x.Y)
			return a * b, ok1 && ok2
		}
	}
	return 0, false
}

func TestDeadlineIsPatienceOrBeforeTheBinarys(t *testing.T) {
	d := Deadline(t)
	if left := time.Until(d); left > Patience || left <= 0 {
		t.Errorf("deadline in %v, want (0, %v]", left, Patience)
	}
	if end, ok := t.Deadline(); ok && d.After(end) {
		t.Errorf("deadline %v after the binary's %v", d, end)
	}
	ctx := Context(t)
	if dl, ok := ctx.Deadline(); !ok || dl.After(d.Add(time.Second)) {
		t.Errorf("context deadline %v, %v", dl, ok)
	}
	n := 0
	For(t, "the third look", func() bool { n++; return n == 3 })
}
