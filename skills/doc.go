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
//     against the portable format and a strict YAML subset. Each broken
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
// Where this package departs from the reference, on purpose:
//
//   - Names must be ASCII. The reference NFKC-normalizes names; ASCII names
//     are already NFKC-normal, and any other name is rejected with a reason
//     instead of being folded (no look-alike names, no golang.org/x/text).
//   - Frontmatter is split by a bounded incremental reader and decoded by a
//     small strict parser of the reference's YAML subset (see yaml.go), not
//     by github.com/adrg/frontmatter, which reads the whole file and decodes
//     with a general YAML library that accepts what the subset rejects.
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
