package fsx

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// within runs f and fails the test if it has not returned when ctx's
// deadline has long passed: a blocked open never returns at all.
func within(t *testing.T, ctx context.Context, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	dl, _ := ctx.Deadline()
	guard := time.NewTimer(time.Until(dl) + 5*time.Second)
	defer guard.Stop()
	select {
	case <-done:
	case <-guard.C:
		t.Fatal("the read blocked past its context deadline")
	}
}

func TestFIFOIsRefusedWithoutBlocking(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	within(t, ctx, func() {
		_, err := ReadFile(ctx, p, 1<<20)
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadFile(FIFO) = %v, want ErrNotRegular", err)
		}
		_, _, err = OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("OpenFile(FIFO, O_RDWR) = %v, want ErrNotRegular", err)
		}
	})
}

func TestDeviceAndDirectoryAreNotRead(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/dev/zero", t.TempDir()} {
		if _, err := ReadFile(context.Background(), p, 1<<20); !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadFile(%s) = %v, want ErrNotRegular", p, err)
		}
	}
}

func TestReadFileHonoursBoundAndCancellation(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, make([]byte, 3*chunk+7), 0o600)
	if b, err := ReadFile(context.Background(), p, 3*chunk+7); err != nil || len(b) != 3*chunk+7 {
		t.Fatalf("ReadFile = %d bytes, %v", len(b), err)
	}
	if _, err := ReadFile(context.Background(), p, 3*chunk+6); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("one byte past the bound: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadFile(ctx, p, 1<<20); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if _, err := ReadFile(context.Background(), filepath.Join(t.TempDir(), "missing"), 1); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}
