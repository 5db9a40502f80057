//go:build unix

package ledger

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/fsx"
)

// TestBoltStoreRefusesAFIFO: a FIFO planted at the store path is refused
// at once as not a regular file (bbolt would otherwise open it read-write
// and block reading its meta page).
func TestBoltStoreRefusesAFIFO(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "store.db")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	done := make(chan error, 1)
	go func() {
		b, err := OpenBolt(p, BoltOptions{})
		if err == nil {
			b.Close()
		}
		done <- err
	}()
	guard := time.NewTimer(5 * time.Second)
	defer guard.Stop()
	select {
	case err := <-done:
		var se *StoreError
		if !errors.Is(err, fsx.ErrNotRegular) || !errors.As(err, &se) {
			t.Fatalf("want a StoreError wrapping fsx.ErrNotRegular, got %v", err)
		}
	case <-guard.C:
		t.Fatal("OpenBolt blocked on a FIFO")
	}
}
