package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/textx"
)

// Elicitation bounds.
const (
	MaxElicitationFields       = 32
	MaxElicitationMessageBytes = 4096
	MaxElicitationTextBytes    = 1024 // a title, description or enum label
	MaxElicitationValueBytes   = 4096 // one answered string
	MaxElicitationEnum         = 64
)

// ElicitAction is how a person answered an elicitation.
type ElicitAction string

// The elicitation actions of the protocol.
const (
	ElicitAccept  ElicitAction = "accept"
	ElicitDecline ElicitAction = "decline"
	ElicitCancel  ElicitAction = "cancel"
)

// Elicitation is a server's request for information from the user
// (elicitation/create in form mode), validated and bounded, its text
// masked of known secrets. It is untrusted: the server wrote it.
type Elicitation struct {
	// Server is the configured server asking; Tool the call in flight on
	// that server when the request came, "" when none was.
	Server string
	Tool   authority.ID
	// Message is what the server says it needs.
	Message string
	// Fields are the form's fields, in name order.
	Fields []ElicitationField
}

// ElicitationField is one field of a form: a string, number, integer or
// boolean, with its constraints.
type ElicitationField struct {
	Name        string
	Title       string
	Description string
	// Type is "string", "number", "integer" or "boolean".
	Type     string
	Required bool
	// Format is a string's format ("email", "uri", "date", "date-time").
	Format string
	// Enum lists a string's allowed values; EnumTitles their labels, when
	// the server gave them.
	Enum       []string
	EnumTitles []string
	// Default is the server's default value, nil when none.
	Default any
	// Bounds: a string's length and a number's range, when set.
	MinLength, MaxLength *int
	Minimum, Maximum     *float64
}

// ElicitationResult is the user's answer. Content is read only for
// ElicitAccept: one value per field, omitted fields taking their defaults.
type ElicitationResult struct {
	Action  ElicitAction
	Content map[string]any
}

// ElicitFunc answers an elicitation through the task's approval channels.
// An error declines it.
type ElicitFunc func(ctx context.Context, req Elicitation) (ElicitationResult, error)

// errInvalidElicitation is the kind of a malformed elicitation request.
var errInvalidElicitation = errors.New("the elicitation request is not one this client accepts")

// parseElicitation validates an elicitation/create request's params.
func parseElicitation(params json.RawMessage, mask func(string) string) (Elicitation, error) {
	bad := func(format string, args ...any) (Elicitation, error) {
		return Elicitation{}, fmt.Errorf("%w: %s", errInvalidElicitation, fmt.Sprintf(format, args...))
	}
	var p struct {
		Mode            string          `json:"mode"`
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return bad("params do not decode: %v", err)
	}
	if p.Mode != "" && p.Mode != "form" {
		return bad("mode %q is not supported; this client answers form mode only", textx.Shorten(p.Mode, 20))
	}
	if len(p.Message) > MaxElicitationMessageBytes || !utf8.ValidString(p.Message) {
		return bad("the message must be valid UTF-8 of at most %d bytes", MaxElicitationMessageBytes)
	}
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	dec := json.NewDecoder(bytes.NewReader(p.RequestedSchema))
	if err := dec.Decode(&schema); err != nil {
		return bad("requestedSchema does not decode: %v", err)
	}
	if schema.Type != "object" {
		return bad("requestedSchema must be of type object")
	}
	if len(schema.Properties) > MaxElicitationFields {
		return bad("the form has %d fields; at most %d are allowed", len(schema.Properties), MaxElicitationFields)
	}
	for _, r := range schema.Required {
		if _, ok := schema.Properties[r]; !ok {
			return bad("required field %q is not a property", textx.Shorten(r, 64))
		}
	}
	e := Elicitation{Message: mask(p.Message)}
	for _, name := range sortedRawKeys(schema.Properties) {
		if !authority.ValidMCPToolName(name) || len(name) > 64 {
			return bad("field name %q must be 1..64 bytes of [A-Za-z0-9_.-]", textx.Shorten(name, 64))
		}
		f, err := parseField(name, schema.Properties[name], mask)
		if err != nil {
			return bad("field %s: %v", name, err)
		}
		f.Required = slices.Contains(schema.Required, name)
		e.Fields = append(e.Fields, f)
	}
	return e, nil
}

// parseField validates one primitive property of a form.
func parseField(name string, raw json.RawMessage, mask func(string) string) (ElicitationField, error) {
	var p struct {
		Type        string          `json:"type"`
		Title       string          `json:"title"`
		Description string          `json:"description"`
		Format      string          `json:"format"`
		Enum        []string        `json:"enum"`
		EnumNames   []string        `json:"enumNames"`
		OneOf       []enumOption    `json:"oneOf"`
		Default     json.RawMessage `json:"default"`
		MinLength   *int            `json:"minLength"`
		MaxLength   *int            `json:"maxLength"`
		Minimum     *float64        `json:"minimum"`
		Maximum     *float64        `json:"maximum"`
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return ElicitationField{}, errors.New("not an object")
	}
	for k := range keys {
		switch k {
		case "type", "title", "description", "format", "enum", "enumNames", "oneOf", "default", "minLength", "maxLength", "minimum", "maximum":
		default:
			return ElicitationField{}, fmt.Errorf("keyword %q is outside the form subset (primitive fields only)", textx.Shorten(k, 40))
		}
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return ElicitationField{}, err
	}
	for _, s := range append([]string{p.Title, p.Description}, p.EnumNames...) {
		if len(s) > MaxElicitationTextBytes {
			return ElicitationField{}, fmt.Errorf("a title or description is longer than %d bytes", MaxElicitationTextBytes)
		}
	}
	f := ElicitationField{Name: name, Type: p.Type, Title: mask(p.Title), Description: mask(p.Description), Format: p.Format,
		MinLength: p.MinLength, MaxLength: p.MaxLength, Minimum: p.Minimum, Maximum: p.Maximum}
	switch p.Type {
	case "string":
		switch p.Format {
		case "", "email", "uri", "date", "date-time":
		default:
			return f, fmt.Errorf("format %q is not one of email, uri, date, date-time", textx.Shorten(p.Format, 40))
		}
		f.Enum = p.Enum
		for _, n := range p.EnumNames {
			f.EnumTitles = append(f.EnumTitles, mask(n))
		}
		for _, o := range p.OneOf {
			f.Enum = append(f.Enum, o.Const)
			f.EnumTitles = append(f.EnumTitles, mask(o.Title))
		}
		if len(f.Enum) > MaxElicitationEnum {
			return f, fmt.Errorf("more than %d choices", MaxElicitationEnum)
		}
		if len(f.EnumTitles) > 0 && len(f.EnumTitles) != len(f.Enum) {
			return f, errors.New("enumNames must label every enum value")
		}
	case "number", "integer", "boolean":
		if p.Format != "" || len(p.Enum) > 0 || len(p.OneOf) > 0 || p.MinLength != nil || p.MaxLength != nil {
			return f, fmt.Errorf("a %s field takes no format, enum or length", p.Type)
		}
	default:
		return f, fmt.Errorf("type must be string, number, integer or boolean, got %q", textx.Shorten(p.Type, 20))
	}
	if len(p.Default) > 0 && string(p.Default) != "null" {
		var v any
		if err := json.Unmarshal(p.Default, &v); err != nil {
			return f, err
		}
		if err := f.check(v); err != nil {
			return f, fmt.Errorf("the default: %v", err)
		}
		f.Default = v
	}
	return f, nil
}

type enumOption struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

// check validates one answered value against the field.
func (f *ElicitationField) check(v any) error {
	switch f.Type {
	case "string":
		s, ok := v.(string)
		if !ok {
			return errors.New("want a string")
		}
		n := utf8.RuneCountInString(s)
		if len(s) > MaxElicitationValueBytes || (f.MaxLength != nil && n > *f.MaxLength) || (f.MinLength != nil && n < *f.MinLength) {
			return errors.New("the string's length is out of bounds")
		}
		if len(f.Enum) > 0 && !slices.Contains(f.Enum, s) {
			return errors.New("the value is not one of the choices")
		}
		if f.Format == "uri" {
			if u, err := url.Parse(s); err != nil || !u.IsAbs() {
				return errors.New("want an absolute URI")
			}
		}
		if f.Format == "email" && !strings.Contains(s, "@") {
			return errors.New("want an email address")
		}
	case "number", "integer":
		x, ok := v.(float64)
		if !ok {
			return errors.New("want a number")
		}
		if f.Type == "integer" && x != math.Trunc(x) {
			return errors.New("want an integer")
		}
		if (f.Minimum != nil && x < *f.Minimum) || (f.Maximum != nil && x > *f.Maximum) {
			return errors.New("the number is out of range")
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return errors.New("want a boolean")
		}
	}
	return nil
}

// complete applies the defaults to an accepted answer's omitted fields and
// validates it: every key a field, every value of its field's type and
// bounds, every required field present.
func (e *Elicitation) complete(content map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range content {
		i := slices.IndexFunc(e.Fields, func(f ElicitationField) bool { return f.Name == k })
		if i < 0 {
			return nil, fmt.Errorf("the answer holds %q, which is not a field", textx.Shorten(k, 64))
		}
		if n, ok := v.(int); ok {
			v = float64(n)
		}
		if err := e.Fields[i].check(v); err != nil {
			return nil, fmt.Errorf("field %s: %v", k, err)
		}
		out[k] = v
	}
	for _, f := range e.Fields {
		if _, ok := out[f.Name]; !ok && f.Default != nil {
			out[f.Name] = f.Default
		}
		if _, ok := out[f.Name]; !ok && f.Required {
			return nil, fmt.Errorf("required field %s is missing", f.Name)
		}
	}
	return out, nil
}

func sortedRawKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// serve answers a server's request: roots/list with the configured roots,
// elicitation/create through the elicitation channel (declined when there
// is none), anything else "method not found".
func (s *session) serve(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wireError) {
	switch method {
	case "ping":
		return json.RawMessage(`{}`), nil
	case "roots/list":
		if s.roots == nil {
			break
		}
		type root struct {
			URI  string `json:"uri"`
			Name string `json:"name"`
		}
		roots := []root{}
		for _, r := range s.roots {
			roots = append(roots, root{URI: (&url.URL{Scheme: "file", Path: r}).String(), Name: filepath.Base(r)})
		}
		b, _ := json.Marshal(map[string]any{"roots": roots})
		return b, nil
	case "elicitation/create":
		return s.elicitation(ctx, params)
	}
	return nil, &wireError{Code: codeMethodNotFound, Message: "method not found: " + textx.Shorten(method, 64)}
}

// elicitation validates a form request, hands it to the channel and
// validates the answer. No channel, a failing one or an answer that does
// not fit the form declines.
func (s *session) elicitation(ctx context.Context, params json.RawMessage) (json.RawMessage, *wireError) {
	mask := s.mask
	if mask == nil {
		mask = func(v string) string { return v }
	}
	e, err := parseElicitation(params, mask)
	if err != nil {
		return nil, &wireError{Code: codeInvalidParams, Message: err.Error()}
	}
	e.Server = s.server
	s.progressMu.Lock()
	if s.inflight != "" {
		e.Tool = authority.MCPTool(s.server, s.inflight)
	}
	s.progressMu.Unlock()
	decline := json.RawMessage(`{"action":"decline"}`)
	if s.elicit == nil {
		return decline, nil
	}
	if s.elicitTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.elicitTimeout)
		defer cancel()
	}
	res, err := s.elicit(ctx, e)
	if err != nil {
		return decline, nil
	}
	switch res.Action {
	case ElicitAccept:
		content, err := e.complete(res.Content)
		if err != nil {
			return decline, nil
		}
		b, err := json.Marshal(map[string]any{"action": ElicitAccept, "content": content})
		if err != nil {
			return decline, nil
		}
		return b, nil
	case ElicitCancel:
		return json.RawMessage(`{"action":"cancel"}`), nil
	}
	return decline, nil
}
