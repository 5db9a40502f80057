package proc

import "context"

// Group identifies a process group across a crash of its owner. A pgid is
// reused once its group is gone, so a group is the recorded one only on the
// same boot, with the same pgid, and with members no older than the leader
// as it was recorded (see [Survivors]).
type Group struct {
	// BootID is /proc/sys/kernel/random/boot_id when the group started.
	BootID string
	// Pgid is the group ID, the leader's PID.
	Pgid int
	// LeaderStart is the leader's start time in clock ticks after boot
	// (field 22 of /proc/PID/stat).
	LeaderStart uint64
	// Program is the leader's program path.
	Program string
}

// Recorder is told of every group [Start] starts under a context that
// carries it, right after the start and before the process runs its
// command (it waits on a start gate meanwhile), so nothing the command does
// can precede the record. An error from it fails the start: the group is
// killed and joined without its gate ever opening, and Start returns a
// *StartError wrapping it.
type Recorder func(ctx context.Context, g Group) error

type recorderKey struct{}

// WithRecorder returns a context whose processes started by [Start] are
// reported to rec.
func WithRecorder(ctx context.Context, rec Recorder) context.Context {
	return context.WithValue(ctx, recorderKey{}, rec)
}

func recorderOf(ctx context.Context) Recorder {
	rec, _ := ctx.Value(recorderKey{}).(Recorder)
	return rec
}
