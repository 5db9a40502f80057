// Package skills discovers portable Agent Skills under configured roots and
// activates explicitly selected ones into bounded task context.
//
// A Skill is a directory holding SKILL.md: YAML frontmatter between `---`
// lines (LF or CRLF), then Markdown instructions. Pablo's lifecycle of a
// Skill has three steps, each narrower than the last:
//
//   - Discover scans only the roots the host configured (root ID → resolved
//     absolute directory; never a home directory or another implicit place),
//     one level of package directories deep, without following symlinks. It
//     reads only each SKILL.md's frontmatter — never the body — and checks it
//     against the portable format and a strict reading of YAML. Each broken
//     package becomes its own Finding; the rest still load. The result is an
//     immutable Catalog of Skills named ROOT/NAME, each with a SHA-256 of its
//     frontmatter as metadata identity.
//   - Catalog.Activate reads the instructions of an explicit list of Skills
//     (at most MaxActivations), after checking that each frontmatter digest
//     still matches. The instructions come back as user-role task data
//     stating that they grant no authority, plus an Activation record for the
//     `skill.activated` event. They are never a system prefix.
//   - Active.Read implements the `skill.read` tool: one whole UTF-8 file
//     inside an activated package, opened component by component without
//     following symlinks. Scripts are never executed by this package.
//
// No text grants authority. Instructions and `allowed-tools` are exposed as
// the Skill's Requirements; Validate compares them with what a task admits
// and reports the gaps as findings, and nothing here adds a capability.
//
// The frontmatter is read in three steps. A bounded incremental reader finds
// the closing `---` line without reading past MaxFrontmatterBytes (the bytes
// it returns are the metadata identity); github.com/adrg/frontmatter splits
// off the delimiters; go.yaml.in/yaml/v3 parses the YAML into a Node tree,
// which yaml.go walks strictly: anchors, aliases, tags, merge keys, explicit
// keys, duplicate keys, document markers and multiple documents are errors,
// at most 256 parser events are allowed, and every scalar stays the string it
// is written as. The field rules (fields.go) then apply the portable
// format: which keys exist, the shape and limits of each value.
//
// Skills written for other agents carry keys the specification does not
// define. The documented list of ExtensionKeys (Claude Code's
// argument-hint, user-invocable, model, hooks, ..., OpenHands' triggers,
// OpenClaw's version and homepage) is accepted as inert metadata, kept in
// Frontmatter.Extensions and granting nothing, and so are OpenClaw's runtime
// requirements under metadata.openclaw (metadata may be OpenClaw's one-line
// JSON); `allowed-tools` may also be a YAML list, as Claude Code writes it.
// Every other unknown key is still refused with CodeUnknownKey.
//
// Where this package departs from the reference, on purpose:
//
//   - Names must be ASCII. The reference NFKC-normalizes names; ASCII names
//     are already NFKC-normal, and any other name is rejected with a reason
//     instead of being folded (no look-alike names, no golang.org/x/text).
//   - The extension keys of other agents' dialects are accepted as inert
//     metadata, and allowed-tools may be a list; the reference refuses both.
//     A line of only `---` and spaces inside the frontmatter is refused,
//     since other readers of SKILL.md end the frontmatter there.
//   - Entries whose names start with '.' and plain files beside packages are
//     not packages and produce no finding.
//   - Crossing a global discovery limit (directory entries, admitted Skills,
//     aggregate metadata) fails discovery with ErrLimitExceeded rather than
//     returning a silently partial catalog; findings past MaxFindings are
//     counted, not kept.
//
// All limits are the reference's fixed safety limits (the Max* constants).
// Errors are *Error values wrapping one of the Err* sentinel kinds, with a
// stable Code.
//
// "The reference" here is Pablo's original implementation, in Rust:
// https://github.com/calebjohn24/pablo. Where this package differs from it
// on purpose, docs/differences.md says so.
package skills
