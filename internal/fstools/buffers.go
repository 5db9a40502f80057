package fstools

import "context"

// Buffers reads a workspace file as the user's editor holds it (its
// unsaved buffer, or the file itself when it has none open): rel is the
// workspace-relative path, already checked and resolved by fs.read. It
// reports false when it has no text to give (the editor refused, or went
// away); fs.read then reads the file on disk.
type Buffers func(ctx context.Context, rel string) (text string, ok bool)

type buffersKey struct{}

// WithBuffers returns ctx whose fs.read calls read through b, after every
// check a disk read makes (the path, the read authority, the file being a
// regular file under MaxFileBytes) and before the handed-file pin check.
func WithBuffers(ctx context.Context, b Buffers) context.Context {
	return context.WithValue(ctx, buffersKey{}, b)
}

func buffersOf(ctx context.Context) Buffers {
	b, _ := ctx.Value(buffersKey{}).(Buffers)
	return b
}
