// Package pablo runs LLM agent tasks under authority the host controls.
//
// A host composes a task runtime from a few typed parts: an
// authority.Authority that decides, tool catalogs that act, a model that
// proposes, and a ledger.Ledger that orders, charges and remembers. Model
// text, tool descriptions, Skill instructions, Agent Cards and child
// handoffs can request work; they never add authority, credentials or
// destinations.
//
// # The flow
//
// The usual entry point is a deployment file. A host loads it, builds its
// runtime, starts a task, reads the task's typed events and waits for the
// task object (the package Example runs this with a scripted model):
//
//	d, err := pablo.Load(pablo.LoadOptions{
//		Config:   "deployment.toml",
//		Bindings: map[string]string{"workspace": "./work"},
//	})
//	if err != nil {
//		return err // a *deployment.Error: code, JSON pointer, file and line
//	}
//	rt, err := d.NewRuntime(ctx, pablo.HostOptions{LookupEnv: os.LookupEnv})
//	if err != nil {
//		return err
//	}
//	defer rt.Close()
//	task, err := rt.Start(ctx, "When was invoice INV-1042 paid?")
//	if err != nil {
//		return err
//	}
//	for ev := range task.Events() { // model text, tool calls, outcome
//		if ev.Type == event.TextDelta {
//			fmt.Print(ev.Text)
//		}
//	}
//	obj := task.Wait() // the task object: outcome and accounting
//	fmt.Println(obj.Outcome.Status)
//
// Policy questions need no task: Deployment.Authority returns the decision
// function the runtime uses, and every Decision names its layer and rule.
// A runtime can also be assembled by hand with NewRuntime, from an
// authority.Set, the host's own ToolCatalog, any Model and an in-memory
// ledger, with no file, process or network (ExampleNewRuntime).
//
// # Deployments
//
// A deployment is TOML with schema_version = 1, loaded strictly by Load.
// Unknown keys, floats, dates, duplicate keys and inline secrets fail with a
// typed *deployment.Error naming the code, the JSON pointer of the key, the file
// and the line. Paths are typed objects resolved against named host
// bindings, and nothing escapes a binding, symlinks included. A resolved
// Deployment has a canonical JSON form and a sha256 Fingerprint that
// identifies its meaning.
//
// Pablo loads the deployment files of its original implementation, in Rust
// (https://github.com/calebjohn24/pablo; "the reference" in these docs),
// with the same meaning; docs/differences.md lists every deliberate
// difference.
package pablo
