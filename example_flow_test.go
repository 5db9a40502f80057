package pablo_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/event"
)

// The whole flow of a host: Load a deployment, build its Runtime, Start a
// task, read its typed Events, Wait for the task object. The deployment
// replays a script of two model turns, so the example needs no network and
// no credential; a real deployment names a provider instead.
func Example() {
	dir := writeInvoiceDeployment() // deployment.toml, turns.json, work/evidence.md
	defer os.RemoveAll(dir)
	ctx := context.Background()

	d, err := pablo.Load(pablo.LoadOptions{
		Config:   filepath.Join(dir, "deployment.toml"),
		Bindings: map[string]string{"workspace": filepath.Join(dir, "work")},
	})
	if err != nil {
		log.Fatal(err) // a *deployment.Error: code, JSON pointer, file and line
	}
	rt, err := d.NewRuntime(ctx, pablo.HostOptions{LookupEnv: os.LookupEnv})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	task, err := rt.Start(ctx, "When was invoice INV-1042 paid?")
	if err != nil {
		log.Fatal(err)
	}
	for ev := range task.Events() { // typed events: model text, tool calls, outcome
		switch ev.Type {
		case event.TextDelta:
			fmt.Print(ev.Text)
		case event.ToolFinished:
			fmt.Println("\n[" + ev.Name + "]")
		}
	}
	obj := task.Wait() // the task object: outcome and accounting
	fmt.Println("\n" + obj.Outcome.Status)
	// Output:
	// I will read the evidence.
	// [fs.read]
	// INV-1042 was paid on 2026-10-02.
	// completed
}

// writeInvoiceDeployment writes a scripted deployment with the workspace
// tools on into a new temporary directory.
func writeInvoiceDeployment() string {
	dir, err := os.MkdirTemp("", "pablo-example")
	if err != nil {
		log.Fatal(err)
	}
	files := map[string]string{
		"deployment.toml": `schema_version = 1

[options.model]
provider = "script"
script = { base = "source", path = "turns.json" }

[options.run]
workspace = { base = "binding", name = "workspace", path = "." }

[options.filesystem]
enabled = true
write = false
`,
		"turns.json": `{"turns": [
  {"text": ["I will read ", "the evidence."],
   "tool_calls": [{"name": "fs.read", "arguments": {"path": "evidence.md"}}]},
  {"text": ["INV-1042 was paid on 2026-10-02."]}
]}`,
		"work/evidence.md": "INV-1042: paid 2026-10-02\n",
	}
	for name, body := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			log.Fatal(err)
		}
	}
	return dir
}
