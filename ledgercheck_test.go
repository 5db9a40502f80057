package pablo

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoopDropsNoLedgerError: in the engine's source, the error of every
// ledger call that records work (admit, dispatch, settle, finish, results,
// decisions, events) is used, never discarded: a refused record is a task
// failure with a code, not silence.
func TestLoopDropsNoLedgerError(t *testing.T) {
	recording := map[string]bool{"ReserveModelCall": true, "AdmitToolCall": true, "Dispatch": true, "SettleModelCall": true,
		"SettleToolCall": true, "Finish": true, "PutResult": true, "RecordDecision": true, "Append": true, "RecordProcessGroup": true,
		"Flush": true, "StartAgent": true}
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		isLedgerCall := func(e ast.Expr) (string, bool) {
			call, ok := e.(*ast.CallExpr)
			if !ok {
				return "", false
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !recording[sel.Sel.Name] {
				return "", false
			}
			// t.root.X, s.t.root.X, root.X: the task's ledger.
			switch x := sel.X.(type) {
			case *ast.SelectorExpr:
				return sel.Sel.Name, x.Sel.Name == "root"
			case *ast.Ident:
				return sel.Sel.Name, x.Name == "root"
			}
			return "", false
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch st := n.(type) {
			case *ast.ExprStmt:
				if m, ok := isLedgerCall(st.X); ok {
					t.Errorf("%s: the error of %s is dropped", fset.Position(st.Pos()), m)
				}
			case *ast.AssignStmt:
				if len(st.Rhs) == 1 {
					if m, ok := isLedgerCall(st.Rhs[0]); ok {
						if id, blank := st.Lhs[len(st.Lhs)-1].(*ast.Ident); blank && id.Name == "_" {
							t.Errorf("%s: the error of %s is discarded", fset.Position(st.Pos()), m)
						}
					}
				}
			case *ast.GoStmt, *ast.DeferStmt:
				var call *ast.CallExpr
				if g, ok := st.(*ast.GoStmt); ok {
					call = g.Call
				} else {
					call = st.(*ast.DeferStmt).Call
				}
				if m, ok := isLedgerCall(call); ok {
					t.Errorf("%s: the error of %s is dropped", fset.Position(call.Pos()), m)
				}
			}
			return true
		})
	}
}
