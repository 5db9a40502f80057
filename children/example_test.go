package children_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// echoRunner runs every child at once: its answer is its input upper-cased.
// A real Runner is the root's session handler.
type echoRunner struct{}

func (echoRunner) Start(ctx context.Context, spec children.Spec) (children.Handle, error) {
	done := make(chan struct{})
	close(done)
	return doneHandle{done: done, res: children.Result{
		Outcome: event.Outcome{Status: outcome.Completed},
		Output:  strings.ToUpper(spec.Input),
	}}, nil
}

type doneHandle struct {
	done chan struct{}
	res  children.Result
}

func (h doneHandle) Done() <-chan struct{}   { return h.done }
func (h doneHandle) Result() children.Result { return h.res }
func (h doneHandle) Cancel()                 {}

// counter gives predictable UUIDs.
type counter struct{ n atomic.Uint64 }

func (c *counter) NewID() string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", c.n.Add(1)) }

func ExampleNew() {
	tree, err := children.New(children.Options{
		ParentID: "root",
		Parent:   children.Scope{Capabilities: children.Capabilities{Tools: []string{"fs.read"}, ModelRoute: []string{"primary"}}},
		Runner:   echoRunner{},
		IDs:      &counter{},
	})
	if err != nil {
		panic(err)
	}
	defer tree.Close(context.Background())

	ctx := context.Background()
	a, _ := tree.Spawn(ctx, children.Request{Input: "read notes.md"})
	b, _ := tree.Spawn(ctx, children.Request{Input: "read todo.md"})
	res, _ := tree.Wait(ctx, children.WaitRequest{AgentIDs: []string{a.AgentID, b.AgentID}, Mode: children.WaitAll, Timeout: children.MaxWaitTimeout})
	// A settled child draws its result's ID from the same source as the
	// next spawn, so which number the second child gets depends on whether
	// the first finished before it was spawned: name them by handle.
	names := map[string]string{a.AgentID: "a", b.AgentID: "b"}
	for _, s := range res.Settled {
		fmt.Println(names[s.AgentID], s.Outcome.Status, *s.Output)
	}
	// Output:
	// a completed READ NOTES.MD
	// b completed READ TODO.MD
}

func ExampleNarrow() {
	parent := children.Scope{
		Capabilities: children.Capabilities{Tools: []string{"fs.read", "fs.write", "subagent"}, ModelRoute: []string{"primary", "fallback", "cheap"}},
		Ceilings:     children.Ceilings{MaxModelCalls: ledger.Max(20)},
	}
	child, err := children.Narrow(parent, children.Scope{
		Capabilities: children.Capabilities{ModelRoute: []string{"primary", "cheap"}},
		Ceilings:     children.Ceilings{MaxModelCalls: ledger.Max(100)},
	})
	fmt.Println(child.Capabilities.Tools, child.Capabilities.ModelRoute, child.Ceilings.MaxModelCalls, err)

	_, err = children.Narrow(parent, children.Scope{Capabilities: children.Capabilities{ModelRoute: []string{"cheap", "primary"}}})
	fmt.Println(err)
	// Output:
	// [fs.read fs.write] [primary cheap] 20 <nil>
	// subagent: model_route_order at "capabilities.model_route": route entry "primary" is out of the parent's order (or repeated): keep the parent's entries in their order
}

func ExampleNewTool() {
	tree, _ := children.New(children.Options{ParentID: "root", Runner: echoRunner{}, IDs: &counter{}})
	defer tree.Close(context.Background())
	tool := children.NewTool(tree, tree.Remotes())

	res := tool.Call(context.Background(), authority.Call{Tool: children.ToolID,
		Arguments: json.RawMessage(`{"action":"wait","agent_ids":["00000000-0000-4000-8000-000000000009"],"mode":"any","timeout_ms":0}`)})
	out, _ := json.Marshal(res.Output)
	fmt.Println(res.Status, string(out))
	// Output:
	// recoverable_error {"action":"error","code":"unknown_agent","field":"agent_ids","message":"subagent: unknown_agent at \"agent_ids\": no child of this root has agent ID \"00000000-0000-4000-8000-000000000009\""}
}

func ExampleParseArguments() {
	a, err := children.ParseArguments([]byte(`{"action":"wait","agent_ids":["00000000-0000-4000-8000-000000000001"],"mode":"all","timeout_ms":1500}`), nil)
	fmt.Println(a.Action, a.Wait.Mode, a.Wait.Timeout, err)
	_, err = children.ParseArguments([]byte(`{"action":"spawn_remote","remote_request":{}}`), nil)
	fmt.Println(err)
	// Output:
	// wait all 1.5s <nil>
	// subagent: unknown_action at "action": action "spawn_remote" is not offered: use one of ["inspect","spawn","stop","wait"]
}

func ExampleRootVerifier() {
	dir, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "notes.md"), []byte("v1"), 0o644)
	root, _ := os.OpenRoot(dir)
	defer root.Close()
	sum := sha256.Sum256([]byte("v1"))
	artifact := children.Artifact{Path: "notes.md", Revision: hex.EncodeToString(sum[:])}

	v := &children.RootVerifier{Root: root}
	reader := children.Spec{Capabilities: children.Capabilities{Tools: []string{"fs.read"}}}
	fmt.Println(v.VerifyArtifact(context.Background(), reader, artifact))
	os.WriteFile(filepath.Join(dir, "notes.md"), []byte("v2"), 0o644)
	fmt.Println(v.VerifyArtifact(context.Background(), reader, artifact))
	// Output:
	// <nil>
	// subagent: stale_artifact at "request.handoffs": "notes.md" changed: its revision is no longer the one handed off
}
