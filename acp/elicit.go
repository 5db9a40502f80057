package acp

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/pabloagent/pablo/mcp"
)

// elicitationRequest is the params of _pablo/v1/elicitation: the form as
// the MCP library validated, bounded and masked it, rebuilt as the
// restricted JSON Schema of MCP's elicitation/create, never the server's
// own bytes.
type elicitationRequest struct {
	SessionID       string         `json:"sessionId"`
	Server          string         `json:"server"`
	Tool            string         `json:"tool,omitempty"`
	Message         string         `json:"message"`
	RequestedSchema map[string]any `json:"requestedSchema"`
}

// elicitationAnswer is the client's answer.
type elicitationAnswer struct {
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content"`
}

// Elicit implements approval.Elicitor: an MCP server's form, during one of
// the prompt's calls, goes to the client as _pablo/v1/elicitation when it
// negotiated pablo/elicitation-v1, and is declined otherwise. The client's
// accept must carry an object; an unknown action, a malformed answer or
// an error answer declines; the library then checks the content against
// the form before anything reaches the server.
func (r *promptRun) Elicit(ctx context.Context, req mcp.Elicitation) (mcp.ElicitationResult, error) {
	decline := mcp.ElicitationResult{Action: mcp.ElicitDecline}
	if !r.ext.elicit {
		return decline, nil
	}
	select {
	case <-r.forwarded:
		return decline, nil
	default:
	}
	params := elicitationRequest{SessionID: r.st.id, Server: req.Server, Tool: string(req.Tool),
		Message: req.Message, RequestedSchema: formSchema(req.Fields)}
	m, err := r.c.call(ctx, r.st.id, MethodElicitation, params)
	if err != nil {
		return decline, err
	}
	if m.Error != nil {
		return decline, errors.New("acp: the client answered " + MethodElicitation + " with an error")
	}
	var a elicitationAnswer
	if json.Unmarshal(m.Result, &a) != nil {
		return decline, nil
	}
	switch mcp.ElicitAction(a.Action) {
	case mcp.ElicitCancel:
		return mcp.ElicitationResult{Action: mcp.ElicitCancel}, nil
	case mcp.ElicitAccept:
		var content map[string]any
		if json.Unmarshal(a.Content, &content) != nil || content == nil {
			return decline, nil
		}
		return mcp.ElicitationResult{Action: mcp.ElicitAccept, Content: content}, nil
	}
	return decline, nil
}

// formSchema renders validated fields as MCP's form schema: an object of
// primitive properties, with the required ones listed.
func formSchema(fields []mcp.ElicitationField) map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, f := range fields {
		p := map[string]any{"type": f.Type}
		set := func(k string, v any, ok bool) {
			if ok {
				p[k] = v
			}
		}
		set("title", f.Title, f.Title != "")
		set("description", f.Description, f.Description != "")
		set("format", f.Format, f.Format != "")
		set("enum", f.Enum, len(f.Enum) > 0)
		set("enumNames", f.EnumTitles, len(f.EnumTitles) > 0)
		set("default", f.Default, f.Default != nil)
		if f.MinLength != nil {
			p["minLength"] = *f.MinLength
		}
		if f.MaxLength != nil {
			p["maxLength"] = *f.MaxLength
		}
		if f.Minimum != nil {
			p["minimum"] = *f.Minimum
		}
		if f.Maximum != nil {
			p["maximum"] = *f.Maximum
		}
		props[f.Name] = p
		if f.Required {
			required = append(required, f.Name)
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": required}
}

// authorizeRequest is the params of _pablo/v1/authorize.
type authorizeRequest struct {
	SessionID string   `json:"sessionId"`
	Server    string   `json:"server"`
	Issuer    string   `json:"issuer"`
	URL       string   `json:"url"`
	Scopes    []string `json:"scopes"`
}

// openAuthorization sends an OAuth MCP server's authorization URL to the
// client (_pablo/v1/authorize) for the user to open; the client answers
// {"outcome":"opened"} once it did, anything else refuses the step. The
// redirect comes back to the host's listener, not through ACP, so the
// URL carries no credential: only the PKCE challenge, state and the
// resource.
func (r *promptRun) openAuthorization(ctx context.Context, req mcp.AuthorizationRequest) error {
	scopes := req.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	m, err := r.c.call(ctx, r.st.id, MethodAuthorize, authorizeRequest{SessionID: r.st.id, Server: req.Server,
		Issuer: req.Issuer, URL: req.URL, Scopes: scopes})
	if err != nil {
		return err
	}
	if m.Error != nil {
		return errors.New("the ACP client answered " + MethodAuthorize + " with an error")
	}
	var a struct {
		Outcome string `json:"outcome"`
	}
	if json.Unmarshal(m.Result, &a) != nil || a.Outcome != "opened" {
		return errors.New("the ACP client did not open the authorization URL (its answer's outcome is not \"opened\")")
	}
	return nil
}
