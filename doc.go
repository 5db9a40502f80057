// Package pablo runs LLM agent tasks under authority the host controls.
//
// A host composes a task runtime from a few typed parts: an
// authority.Authority that decides, tool catalogs that act, a model that
// proposes, and a ledger.Ledger that orders, charges and remembers. Model
// text, tool descriptions, Skill instructions, Agent Cards and child
// handoffs can request work; they never add authority, credentials or
// destinations.
//
// The usual entry point is a deployment file: TOML with schema_version = 1,
// loaded strictly by Load. Unknown keys, floats, dates, duplicate keys and
// inline secrets fail with a typed *ConfigError naming the code, the JSON
// pointer of the key, the file and the line. Paths are typed objects resolved
// against named host bindings, and nothing escapes a binding, symlinks
// included. A resolved Deployment has a canonical JSON form and a sha256
// Fingerprint that identifies its meaning.
//
//	d, err := pablo.Load(pablo.LoadOptions{
//		Config:   "deployment.toml",
//		Bindings: map[string]string{"workspace": "./work"},
//	})
//	if err != nil { ... }
//	set, _ := d.Authority()
//	dec := set.Decide(authority.Request{Capability: "mcp/evidence/read_evidence"})
package pablo
