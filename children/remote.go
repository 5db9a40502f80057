package children

import (
	"context"
	"encoding/json"

	"github.com/pabloagent/pablo/ledger"
)

// RemoteRunner starts remote children (A2A): the root implements it over
// the a2a client. Remotes lists the configured remote names, the enum of
// the tool's remote_request.remote. A nil RemoteRunner means spawn_remote
// is not offered.
type RemoteRunner interface {
	Remotes() []string
	StartRemote(ctx context.Context, spec RemoteSpec) (Handle, error)
}

// RemoteRequest is a spawn_remote request: the remote, the explicit parts
// sent to it and what the caller accepts back.
type RemoteRequest struct {
	Remote              string   `json:"remote"`
	Parts               []Part   `json:"parts"`
	AcceptedOutputModes []string `json:"accepted_output_modes"`
	// Stream asks for a streaming send; nil lets the runner choose.
	Stream *bool `json:"stream,omitempty"`
	// MaxDurationMillis bounds the remote task; not set inherits the
	// parent's duration.
	MaxDurationMillis ledger.Limit `json:"max_duration_ms"`
}

// Part is one part of a remote child's exchange, the one type a request
// and a result share (package a2a keeps a result's parts as Parts):
// exactly one of Text, Data, Raw (an inline file, base64 in JSON) and URL
// is set. A result's URL is inert (never fetched) and its Filename is the
// peer's label, never a local path.
type Part struct {
	Text      *string         `json:"text,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Raw       []byte          `json:"raw,omitempty"`
	URL       string          `json:"url,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
	Filename  string          `json:"filename,omitempty"`
}

// RemoteSpec is a spawn_remote request as the supervisor admitted it.
type RemoteSpec struct {
	AgentID  string
	ParentID string
	RemoteRequest
	// TaskID and ContextID, set when a resume continues a remote child
	// whose task the remote bound before the host running it stopped,
	// are that task's IDs: the runner follows the task (GetTask) and
	// sends nothing.
	TaskID, ContextID string
}
