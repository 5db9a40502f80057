package a2a

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	a2alegacy "github.com/a2aproject/a2a-go/a2a"
	sdk "github.com/a2aproject/a2a-go/v2/a2a"
)

// methods are the JSON-RPC method names of one A2A version.
type methods struct {
	send, stream, get, cancel string
}

// methodsOf returns the methods the admitted card's version names: 1.0's
// (SendMessage, SendStreamingMessage, GetTask, CancelTask) or 0.3's
// (message/send, message/stream, tasks/get, tasks/cancel).
func methodsOf(card *Card) methods {
	if card != nil && card.ProtocolVersion == LegacyProtocolVersion {
		return methods{send: "message/send", stream: "message/stream", get: "tasks/get", cancel: "tasks/cancel"}
	}
	return methods{send: "SendMessage", stream: "SendStreamingMessage", get: "GetTask", cancel: "CancelTask"}
}

// legacy reports whether call speaks A2A 0.3.
func (call rpcCall) legacy() bool {
	return call.card != nil && call.card.ProtocolVersion == LegacyProtocolVersion
}

// legacySendParams are message/send's and message/stream's params: the
// message in 0.3's form (kind-discriminated parts, a lower-case role) and
// the accepted output modes; a blocking send asks not to block
// (blocking: false), 0.3's spelling of returnImmediately.
type legacySendParams struct {
	Configuration struct {
		AcceptedOutputModes []string `json:"acceptedOutputModes"`
		Blocking            *bool    `json:"blocking,omitempty"`
	} `json:"configuration"`
	Message *a2alegacy.Message `json:"message"`
}

// legacyParams converts the one message sent to 0.3's params. A data part
// must be a JSON object in 0.3: any other value is refused, not wrapped.
func legacyParams(p sendParams, stream bool) (legacySendParams, error) {
	var out legacySendParams
	out.Configuration.AcceptedOutputModes = p.Configuration.AcceptedOutputModes
	if !stream {
		blocking := !p.Configuration.ReturnImmediately
		out.Configuration.Blocking = &blocking
	}
	m := p.Message
	parts := make(a2alegacy.ContentParts, 0, len(m.Parts))
	for i, part := range m.Parts {
		meta := a2alegacy.FileMeta{MimeType: part.MediaType, Name: part.Filename}
		switch c := part.Content.(type) {
		case sdk.Text:
			parts = append(parts, a2alegacy.TextPart{Text: string(c)})
		case sdk.Data:
			obj, ok := c.Value.(map[string]any)
			if !ok {
				return out, fmt.Errorf("%w: parts[%d].data must be a JSON object for an A2A %s remote", ErrRequest, i, LegacyProtocolVersion)
			}
			parts = append(parts, a2alegacy.DataPart{Data: obj})
		case sdk.Raw:
			parts = append(parts, a2alegacy.FilePart{File: a2alegacy.FileBytes{FileMeta: meta, Bytes: base64.StdEncoding.EncodeToString(c)}})
		case sdk.URL:
			parts = append(parts, a2alegacy.FilePart{File: a2alegacy.FileURI{FileMeta: meta, URI: string(c)}})
		default:
			return out, fmt.Errorf("%w: parts[%d] has no A2A %s form", ErrRequest, i, LegacyProtocolVersion)
		}
	}
	out.Message = &a2alegacy.Message{ID: m.ID, Role: a2alegacy.MessageRoleUser, Parts: parts}
	return out, nil
}

// errLegacy is a 0.3 object that has no 1.0 equivalent Pablo admits.
var errLegacy = errors.New("the A2A 0.3 result does not convert")

// decodeLegacyEvent decodes one 0.3 object by its kind and converts it to
// 1.0's, so every rule of the tracker holds for both versions alike. The
// decoder's message is not kept: it can quote the peer.
func decodeLegacyEvent(raw json.RawMessage) (sdk.Event, error) {
	ev, err := a2alegacy.UnmarshalEventJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("the result does not decode as an A2A 0.3 task, message or update (by its kind)")
	}
	switch e := ev.(type) {
	case *a2alegacy.Task:
		out := &sdk.Task{ID: sdk.TaskID(e.ID), ContextID: e.ContextID, Status: sdk.TaskStatus{State: legacyState(e.Status.State)}, Metadata: e.Metadata}
		for _, a := range e.Artifacts {
			art, err := legacyArtifact(a)
			if err != nil {
				return nil, err
			}
			out.Artifacts = append(out.Artifacts, art)
		}
		return out, nil
	case *a2alegacy.Message:
		parts, err := legacyParts(e.Parts)
		if err != nil {
			return nil, err
		}
		return &sdk.Message{ID: e.ID, ContextID: e.ContextID, TaskID: sdk.TaskID(e.TaskID), Role: sdk.MessageRoleAgent, Parts: parts}, nil
	case *a2alegacy.TaskStatusUpdateEvent:
		return &sdk.TaskStatusUpdateEvent{TaskID: sdk.TaskID(e.TaskID), ContextID: e.ContextID,
			Status: sdk.TaskStatus{State: legacyState(e.Status.State)}, Metadata: e.Metadata}, nil
	case *a2alegacy.TaskArtifactUpdateEvent:
		art, err := legacyArtifact(e.Artifact)
		if err != nil {
			return nil, err
		}
		return &sdk.TaskArtifactUpdateEvent{TaskID: sdk.TaskID(e.TaskID), ContextID: e.ContextID, Artifact: art, Append: e.Append, LastChunk: e.LastChunk}, nil
	}
	return nil, errLegacy
}

// legacyState maps a 0.3 task state to 1.0's; "unknown" and anything
// else map to the unspecified state, which the tracker refuses.
func legacyState(s a2alegacy.TaskState) sdk.TaskState {
	switch s {
	case a2alegacy.TaskStateSubmitted:
		return sdk.TaskStateSubmitted
	case a2alegacy.TaskStateWorking:
		return sdk.TaskStateWorking
	case a2alegacy.TaskStateCompleted:
		return sdk.TaskStateCompleted
	case a2alegacy.TaskStateFailed:
		return sdk.TaskStateFailed
	case a2alegacy.TaskStateRejected:
		return sdk.TaskStateRejected
	case a2alegacy.TaskStateCanceled:
		return sdk.TaskStateCanceled
	case a2alegacy.TaskStateInputRequired:
		return sdk.TaskStateInputRequired
	case a2alegacy.TaskStateAuthRequired:
		return sdk.TaskStateAuthRequired
	}
	return sdk.TaskStateUnspecified
}

func legacyArtifact(a *a2alegacy.Artifact) (*sdk.Artifact, error) {
	if a == nil {
		return nil, nil
	}
	parts, err := legacyParts(a.Parts)
	if err != nil {
		return nil, err
	}
	return &sdk.Artifact{ID: sdk.ArtifactID(a.ID), Parts: parts}, nil
}

// legacyParts converts 0.3 parts: text, a data object, a file's inline
// bytes (base64, which must decode) or its URI (inert).
func legacyParts(in a2alegacy.ContentParts) ([]*sdk.Part, error) {
	out := make([]*sdk.Part, 0, len(in))
	for _, p := range in {
		switch c := p.(type) {
		case a2alegacy.TextPart:
			out = append(out, &sdk.Part{Content: sdk.Text(c.Text)})
		case a2alegacy.DataPart:
			out = append(out, &sdk.Part{Content: sdk.Data{Value: c.Data}})
		case a2alegacy.FilePart:
			switch f := c.File.(type) {
			case a2alegacy.FileBytes:
				b, err := base64.StdEncoding.DecodeString(f.Bytes)
				if err != nil {
					return nil, fmt.Errorf("a file part's bytes are not base64")
				}
				out = append(out, &sdk.Part{Content: sdk.Raw(b), MediaType: f.MimeType, Filename: f.Name})
			case a2alegacy.FileURI:
				out = append(out, &sdk.Part{Content: sdk.URL(f.URI), MediaType: f.MimeType, Filename: f.Name})
			default:
				return nil, fmt.Errorf("a file part with neither bytes nor uri")
			}
		default:
			return nil, fmt.Errorf("a part of no admitted kind")
		}
	}
	return out, nil
}

// decodeLegacyResult is decodeResult for 0.3: a send result is a task or
// a message, a stream frame also a status or artifact update.
func decodeLegacyResult(raw json.RawMessage, stream bool) (sdk.Event, error) {
	ev, err := decodeLegacyEvent(raw)
	if err != nil {
		return nil, err
	}
	switch ev.(type) {
	case *sdk.Task, *sdk.Message:
	default:
		if !stream {
			return nil, fmt.Errorf("a send result must be a task or a message")
		}
	}
	return ev, nil
}

// decodeTask decodes a GetTask or CancelTask result: the task, in the
// call's version.
func decodeTask(call rpcCall, raw json.RawMessage) (*sdk.Task, bool) {
	if call.legacy() {
		ev, err := decodeLegacyEvent(raw)
		if err != nil {
			return nil, false
		}
		task, ok := ev.(*sdk.Task)
		return task, ok
	}
	var task sdk.Task
	if json.Unmarshal(raw, &task) != nil {
		return nil, false
	}
	return &task, true
}
