package engine

import "github.com/pabloagent/pablo/ledger"

// sha256Tag is "sha256:" and the lowercase hex SHA-256 of b: the form
// the ledger uses for result references.
func sha256Tag(b []byte) string { return string(ledger.RefOf(b)) }
