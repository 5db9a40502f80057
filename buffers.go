package pablo

import (
	"context"

	"github.com/pabloagent/pablo/internal/fstools"
)

// WithEditorBuffers returns ctx whose tasks' fs.read calls read a file as
// the user's editor holds it: read gets the workspace-relative path, after
// every check a disk read makes (the path inside the workspace, the read
// authority, a regular file under the size bound), and returns the text
// of the editor's buffer (unsaved changes included) or false to read the
// disk. The result's revision is the buffer's, and it says from_client.
// A task started with ctx (Runtime.StartTask, Session.Prompt) uses it;
// ACP serves it from the client's fs/read_text_file.
func WithEditorBuffers(ctx context.Context, read func(ctx context.Context, path string) (text string, ok bool)) context.Context {
	return fstools.WithBuffers(ctx, fstools.Buffers(read))
}
