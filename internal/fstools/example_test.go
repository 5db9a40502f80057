package fstools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/fstools"
)

// An agent may read the whole workspace but write only under notes/. It
// reads a file, then edits it under the revision it read.
func Example() {
	dir, _ := os.MkdirTemp("", "pablo-ws-")
	defer os.RemoveAll(dir)
	os.Mkdir(filepath.Join(dir, "notes"), 0o755)
	os.WriteFile(filepath.Join(dir, "notes", "todo.md"), []byte("- ship fs tools\n"), 0o644)

	ws, err := fstools.Open(dir) // once per root task
	if err != nil {
		panic(err)
	}
	defer ws.Close()
	tools, err := fstools.New(fstools.Options{
		Workspace: ws,
		Write:     true,
		Decide: func(kind authority.ResourceKind, rel string) authority.Decision {
			ok := kind == authority.ResourceRead || authority.WithinRoot("notes", rel)
			return authority.Decision{Allowed: ok, Layer: "policy", RuleID: "notes-only"}
		},
		Limits: fstools.Limits{MaxToolOutputBytes: 8 << 20},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	p, err := tools.Call(ctx, authority.FSRead, json.RawMessage(`{"path":"notes/todo.md"}`))
	if err != nil {
		panic(err)
	}
	read := p.(*fstools.ReadResult)
	fmt.Printf("%s %q\n", read.Path, read.Text)

	edit, _ := json.Marshal(map[string]any{"path": "notes/todo.md", "expected_revision": read.Revision,
		"old_text": "- ship", "new_text": "- [x] ship"})
	p, err = tools.Call(ctx, authority.FSEdit, edit)
	if err != nil {
		panic(err)
	}
	fmt.Println("committed:", p.(*fstools.WriteResult).Committed)

	_, err = tools.Call(ctx, authority.FSWrite, json.RawMessage(`{"path":"README.md","text":"hi","expected_revision":null}`))
	var denied *fstools.DeniedError
	fmt.Println("denied:", errors.Is(err, authority.ErrDenied), errors.As(err, &denied) && denied.Decision.RuleID == "notes-only")

	_, err = tools.Call(ctx, authority.FSRead, json.RawMessage(`{"path":"../etc/passwd"}`))
	fmt.Println(err)
	// Output:
	// notes/todo.md "- ship fs tools\n"
	// committed: true
	// denied: true true
	// fs.read "../etc/passwd": denied by layer "workspace" rule "builtin.workspace": ".." is not allowed in workspace paths; name the path from the workspace root
}
