//go:build !linux

package ledger

import bolt "go.etcd.io/bbolt"

// releaseMapped does nothing outside Linux; see bolt_release_linux.go.
func releaseMapped(*bolt.DB, int64) {}
