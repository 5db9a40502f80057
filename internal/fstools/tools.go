package fstools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pabloagent/pablo/authority"
)

// Limits are the hard work limits of one agent (limits.filesystem.* and
// max_tool_output_bytes). Zero means unlimited.
type Limits struct {
	// MaxFileBytes bounds the size of any file read, searched or written.
	MaxFileBytes int64
	// MaxEntries bounds the entries of a listed directory and the entries
	// visited by one search.
	MaxEntries int64
	// MaxDepth bounds how deep below its start directory a search goes:
	// 1 admits only the start directory's own entries.
	MaxDepth int64
	// MaxScanBytes bounds the file bytes one search reads.
	MaxScanBytes int64
	// MaxToolOutputBytes bounds a result's JSON serialization.
	MaxToolOutputBytes int64
}

// Options configure the Tools of one agent.
type Options struct {
	// Workspace is the task tree's shared workspace. Required.
	Workspace *Workspace
	// Write enables fs.write and fs.edit.
	Write bool
	// Decide authorizes a workspace-relative path ("." for the workspace)
	// for reading or writing, normally by asking the agent's
	// authority.Authority with the resource attached. Required; it must
	// not block.
	Decide func(kind authority.ResourceKind, rel string) authority.Decision
	// Limits are the agent's work limits.
	Limits Limits
	// Reserved, when set, names files the tools deny (RuleReserved) and
	// leave out of listings and searches, whatever the policy says.
	Reserved *Reserved
	// MaskPage, when set, returns whole[from:to], a page fs.read returns
	// of a file, with the secrets its edges cut masked by the text around
	// them (the caller masks the rest of the result), and their count.
	MaskPage func(whole []byte, from, to int) (string, int)
	// RepoWrite is filesystem scope repo-write: fs.write and fs.edit write
	// only in the work tree of the git repository that holds the
	// workspace, never into a .git at any depth nor into a repository
	// nested in it. New fails when no repository holds the workspace
	// (ErrNotInRepository).
	RepoWrite bool
	// KeepGitDir refuses fs.write and fs.edit into a .git at any depth
	// (authority.RuleRemotesGitDir): a deployment that uses network
	// repository-host-only sets it, since the remotes a repository's
	// config names are the next task's allowlist.
	KeepGitDir bool
}

// Tools is one agent's set of workspace tools. It is immutable and safe for
// concurrent use, although the run loop calls tools one at a time.
type Tools struct {
	ws     *Workspace
	write  bool
	decide func(authority.ResourceKind, string) authority.Decision
	limits Limits
	// reserved is Options.Reserved (nil holds nothing).
	reserved *Reserved
	maskPage func([]byte, int, int) (string, int)
	// pins are the files this agent was handed (WithPins); nil pins none.
	pins  *pins
	hooks hooks
	// repoWrite is Options.RepoWrite.
	repoWrite bool
	// keepGitDir is Options.KeepGitDir.
	keepGitDir bool
}

// hooks let tests act between steps; all nil in production.
type hooks struct {
	betweenCheckAndOpen func(rel, name string)
	beforeInstall       func(rel string)
	// afterReadChunk runs after each chunk a whole-file read took, before
	// the next: a test changes the file in the middle of the read.
	afterReadChunk func(rel string)
}

// New builds an agent's Tools.
func New(opts Options) (*Tools, error) {
	if opts.Workspace == nil {
		return nil, errors.New("fstools: Options.Workspace is required")
	}
	if opts.Decide == nil {
		return nil, errors.New("fstools: Options.Decide is required; pass a function that asks the agent's authority")
	}
	l := opts.Limits
	for name, v := range map[string]int64{
		"MaxFileBytes": l.MaxFileBytes, "MaxEntries": l.MaxEntries, "MaxDepth": l.MaxDepth,
		"MaxScanBytes": l.MaxScanBytes, "MaxToolOutputBytes": l.MaxToolOutputBytes,
	} {
		if v < 0 {
			return nil, fmt.Errorf("fstools: Limits.%s is %d; use 0 for unlimited or a positive bound", name, v)
		}
	}
	if opts.RepoWrite {
		if _, err := RepositoryOf(opts.Workspace.Dir()); err != nil {
			return nil, err
		}
	}
	return &Tools{ws: opts.Workspace, write: opts.Write, decide: opts.Decide, limits: l, reserved: opts.Reserved, maskPage: opts.MaskPage,
		repoWrite: opts.RepoWrite, keepGitDir: opts.KeepGitDir}, nil
}

// call is the state of one tool invocation.
type call struct {
	t   *Tools
	id  authority.ID
	ctx context.Context
	// writing: the call resolves the path of a write (repo-write checks
	// each directory it passes).
	writing bool
}

func (t *Tools) begin(ctx context.Context, id authority.ID) *call {
	return &call{t: t, id: id, ctx: ctx}
}

// alive reports cancellation or an expired deadline between steps.
func (c *call) alive() error {
	if err := c.ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", c.id, err)
	}
	return nil
}

func (c *call) limit(name string, max int64) error {
	return &LimitError{Tool: c.id, Kind: FilesystemWork, Limit: name, Max: max}
}

// Call runs the tool id on JSON arguments. The arguments are decoded
// strictly (unknown fields, nulls where a value is required and wrong types
// are rejected), the common fields timeout_ms and max_output_bytes are
// applied, and the payload's JSON serialization is checked against the
// output limit. The payload is a *ReadResult, *ListResult, *SearchResult or
// *WriteResult. A committed mutation whose cleanup failed returns both the
// payload and a *CleanupError.
func (t *Tools) Call(ctx context.Context, id authority.ID, args json.RawMessage) (any, error) {
	if !t.has(id) {
		return nil, &DeniedError{Tool: id, Decision: authority.Decision{
			Layer: authority.LayerConfiguration, RuleID: authority.RuleToolUnavailable,
			Reason: fmt.Sprintf("%s is not one of this agent's workspace tools", id)}}
	}
	var (
		common Common
		run    func(ctx context.Context) (any, error)
	)
	switch id {
	case authority.FSRead:
		var a ReadArgs
		if err := decodeArgs(id, args, &a); err != nil {
			return nil, err
		}
		common, run = a.Common, func(ctx context.Context) (any, error) { return payload(t.Read(ctx, a)) }
	case authority.FSList:
		var a ListArgs
		if err := decodeArgs(id, args, &a); err != nil {
			return nil, err
		}
		common, run = a.Common, func(ctx context.Context) (any, error) { return payload(t.List(ctx, a)) }
	case authority.FSSearch:
		var a SearchArgs
		if err := decodeArgs(id, args, &a); err != nil {
			return nil, err
		}
		common, run = a.Common, func(ctx context.Context) (any, error) { return payload(t.Search(ctx, a)) }
	case authority.FSWrite:
		var a WriteArgs
		if err := decodeArgs(id, args, &a); err != nil {
			return nil, err
		}
		common, run = a.Common, func(ctx context.Context) (any, error) { return payload(t.Write(ctx, a)) }
	case authority.FSEdit:
		var a EditArgs
		if err := decodeArgs(id, args, &a); err != nil {
			return nil, err
		}
		common, run = a.Common, func(ctx context.Context) (any, error) { return payload(t.Edit(ctx, a)) }
	}
	if err := common.validate(id); err != nil {
		return nil, err
	}
	maxOut := t.limits.MaxToolOutputBytes
	if common.MaxOutputBytes > 0 && (maxOut == 0 || common.MaxOutputBytes < maxOut) {
		maxOut = common.MaxOutputBytes
	}
	if common.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, durationMS(common.TimeoutMS))
		defer cancel()
	}
	result, err := run(ctx)
	if result == nil {
		return nil, err
	}
	if maxOut > 0 {
		limitName := "max_tool_output_bytes"
		if maxOut == common.MaxOutputBytes {
			limitName = "max_output_bytes"
		}
		if lerr := checkOutput(id, result, maxOut, limitName); lerr != nil {
			// A committed mutation stays committed: its result is
			// returned with the error so the caller can record
			// committed:true.
			if w, ok := result.(*WriteResult); ok && w.Committed {
				return result, lerr
			}
			return nil, lerr
		}
	}
	return result, err
}

// payload converts a typed result to an interface value that is nil when
// the result is nil, never a non-nil interface holding a nil pointer.
func payload[T any](p *T, err error) (any, error) {
	if p == nil {
		return nil, err
	}
	return p, err
}

// has reports whether id is one of this agent's tools.
// Workspace returns the workspace the tools work in.
func (t *Tools) Workspace() *Workspace { return t.ws }

func (t *Tools) has(id authority.ID) bool {
	switch id {
	case authority.FSRead, authority.FSList, authority.FSSearch:
		return true
	case authority.FSWrite, authority.FSEdit:
		return t.write
	}
	return false
}
