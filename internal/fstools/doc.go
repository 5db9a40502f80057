// Package fstools implements Pablo's native workspace tools: fs.read, fs.list,
// fs.search, fs.write and fs.edit.
//
// A Workspace is opened once per root task on the resolved workspace
// directory and shared by the root and its children. Every access goes
// through an *os.Root, so nothing can name a file outside the workspace, and
// on top of that every path is walked component by component without
// following symbolic links: a symlink anywhere in a path, internal or final,
// is a policy denial (rule builtin.symlink), even when it points back inside
// the workspace. Each directory handle taken during a walk is checked to be
// the very directory that was inspected, so a directory swapped for a symlink
// between the check and the use is detected rather than followed.
//
// Tools is one agent's view of the workspace: its Decide callback (the
// agent's read and write roots), whether it may write, and its work limits.
// Tools.Call decodes a tool call's JSON arguments strictly and returns a
// typed payload (*ReadResult, *ListResult, *SearchResult or *WriteResult);
// the typed methods Read, List, Search, Write and Edit do the same work for
// callers that already hold typed arguments.
//
// Failures come in four kinds that never mix:
//   - *Error with a Code (not_found, not_file, ..., io_error, and Pablo's
//     own artifact_changed): recoverable, returned to the model. Messages
//     never carry raw operating-system text or file bytes.
//   - *DeniedError: a policy denial carrying the authority.Decision;
//     errors.Is(err, authority.ErrDenied) holds.
//   - *LimitError with a LimitKind (filesystem_work, tool_output_bytes).
//   - *ArgumentError: the arguments were malformed (ErrInvalidArguments).
//
// Cancellation and deadlines are checked between bounded steps and surface as
// errors wrapping context.Canceled or context.DeadlineExceeded.
//
// Mutations (fs.write, fs.edit) are serialized across the whole task tree by
// the Workspace's gate. They write a private temporary file in the target's
// directory, re-check the revision, the policy and cancellation, and then
// install atomically: a no-replace hard link for a create, a rename for a
// replace. Revision checks are optimistic: they detect a file that changed
// after it was checked by anything that respects the gate, and most external
// writers, but the workspace is not a transaction.
//
// An agent handed files (artifact handoffs) gets its own copy of the Tools
// with those files pinned ([Tools.WithPins]): its fs.read and fs.search of a
// pinned path hash the bytes they read and return them only when they are
// the handed revision, else artifact_changed naming both revisions.
//
// fs.search streams each file through a fixed-size buffer instead of reading
// it whole, so memory stays bounded whatever the file size. Because binary
// detection happens while streaming, a NUL byte or invalid UTF-8 found late
// in a file causes the whole file to be skipped and the matches already found
// in it to be dropped, exactly as if the file had been classified up front.
package fstools
