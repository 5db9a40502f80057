package children

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/pabloagent/pablo/internal/textx"
)

// The bounds of a remote request (REFERENCE §4.5).
const (
	MaxRemoteParts    = 32
	MaxOutputModes    = 16
	maxModeBytes      = 128
	maxURLBytes       = 4096
	maxMediaTypeBytes = 128
	maxFilenameBytes  = 256
)

// SpawnRemote admits a remote child through the remote runner: the remote
// must be configured, the parts 1..32 (each exactly one of text, data, raw
// and url), the accepted output modes 1..16. Its duration is narrowed
// like a local child's. The same capacity applies as to local children.
func (t *Tree) SpawnRemote(ctx context.Context, req RemoteRequest) (Snapshot, error) {
	if t.opts.Remote == nil {
		return Snapshot{}, errorf(CodeRemoteUnavailable, "action", "no remote runner is configured: spawn_remote is not offered")
	}
	if err := checkRemote(req, t.opts.Remote.Remotes()); err != nil {
		return Snapshot{}, err
	}
	c := &child{id: t.ids.NewID(), kind: KindRemote}
	spec := RemoteSpec{AgentID: c.id, ParentID: t.opts.ParentID, RemoteRequest: req}
	spec.Parts = slices.Clone(req.Parts)
	spec.AcceptedOutputModes = slices.Clone(req.AcceptedOutputModes)
	spec.MaxDurationMillis = t.withinDeadline(t.opts.Parent.Ceilings.MaxDurationMillis.Min(req.MaxDurationMillis.Or(t.opts.Parent.Ceilings.MaxDurationMillis)))
	var n int64
	for _, p := range spec.Parts {
		n += int64(len(p.Data) + len(p.Raw) + len(p.URL))
		if p.Text != nil {
			n += int64(len(*p.Text))
		}
	}
	if n > t.capacity.InputBytes {
		return Snapshot{}, errorf(CodeAdmission, "remote_request.parts", "the parts hold %d bytes, over the child's %d", n, t.capacity.InputBytes)
	}
	c.remote, c.bytes = spec, n
	t.lock()
	defer t.unlock()
	return t.enterLocked(c)
}

// checkRemote checks a remote request's bounds.
func checkRemote(req RemoteRequest, remotes []string) error {
	if !slices.Contains(remotes, req.Remote) {
		return errorf(CodeOutOfRange, "remote_request.remote", "remote %q is not configured (configured: %v)", textx.Shorten(req.Remote, 64), remotes)
	}
	if n := len(req.Parts); n < 1 || n > MaxRemoteParts {
		return errorf(CodeOutOfRange, "remote_request.parts", "1..%d parts, got %d", MaxRemoteParts, n)
	}
	for i, p := range req.Parts {
		// The field is named only when a refusal needs it.
		field := func() string { return "remote_request.parts/" + strconv.Itoa(i) }
		set := 0
		if p.Text != nil {
			set++
		}
		if p.Data != nil {
			set++
			if !json.Valid(p.Data) {
				return errorf(CodeWrongType, field()+"/data", "data is not JSON")
			}
		}
		if p.Raw != nil {
			set++
		}
		if p.URL != "" {
			set++
			if len(p.URL) > maxURLBytes {
				return errorf(CodeOutOfRange, field()+"/url", "a url holds at most %d bytes, got %d", maxURLBytes, len(p.URL))
			}
		}
		if set != 1 {
			return errorf(CodeOutOfRange, field(), "a part holds exactly one of text, data, raw and url, got %d", set)
		}
		if len(p.MediaType) > maxMediaTypeBytes {
			return errorf(CodeOutOfRange, field()+"/mediaType", "mediaType holds at most %d bytes, got %d", maxMediaTypeBytes, len(p.MediaType))
		}
		if len(p.Filename) > maxFilenameBytes {
			return errorf(CodeOutOfRange, field()+"/filename", "filename holds at most %d bytes, got %d", maxFilenameBytes, len(p.Filename))
		}
	}
	if n := len(req.AcceptedOutputModes); n < 1 || n > MaxOutputModes {
		return errorf(CodeOutOfRange, "remote_request.accepted_output_modes", "1..%d modes, got %d", MaxOutputModes, n)
	}
	for i, m := range req.AcceptedOutputModes {
		if len(m) > maxModeBytes || !utf8.ValidString(m) {
			return errorf(CodeOutOfRange, "remote_request.accepted_output_modes/"+strconv.Itoa(i), "a mode holds at most %d bytes of UTF-8", maxModeBytes)
		}
	}
	return nil
}
