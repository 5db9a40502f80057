// Package authority is Pablo's capability vocabulary and the decisions made
// over it.
//
// Configuration says what is possible: which native tools are enabled, which
// MCP servers the host configured, which Skills roots exist. Immutable
// authority layers ([[authority]] in a deployment, or a host's own layer) set
// ceilings over that. Ordinary policy narrows further, and a child request can
// narrow once more. Every layer must allow a capability for it to be admitted,
// and each layer is evaluated on its own: deny lists and allow lists are never
// merged into one union.
//
// Within one rule set the first matching deny rule wins; otherwise a non-empty
// allow list must match; otherwise the default decides. There are no
// wildcards: "fs.*" is a literal value that matches nothing but itself. The
// zero value of Rules denies everything, and so does the zero value of Set.
// Executables and MCP launchers match by the device and inode of the file a
// path resolves to, so a symlink or a hard link to a denied launcher is denied
// too.
//
// Every Decision names the layer and the rule that decided it, so a host can
// explain exactly why a capability is on or off. Text from models, tools,
// Skills, Agent Cards or child handoffs never reaches this package as
// authority: it can only name a capability to be decided.
package authority
