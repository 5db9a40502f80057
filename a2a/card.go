package a2a

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
)

// The bounds of a card's fields (REFERENCE §5.4).
const (
	MaxCardName        = 256
	MaxCardDescription = 8192
	MaxCardVersion     = 128
	MaxCardList        = 16 // interfaces, extensions, modes, security schemes and requirements
	MaxSkills          = 64
	MaxSkillID         = 128
	MaxSkillName       = 256
	MaxSkillTags       = 32
)

// Card is an admitted Agent Card: what Pablo keeps of it. Card text grants
// nothing: the remote's endpoint, bearer and trace opt-in are the host's
// configuration, and the card can only confirm or refuse them.
type Card struct {
	// Remote is the configured remote's name.
	Remote string `json:"remote"`
	// Digest is "sha256:" and the hex SHA-256 of the bytes received.
	Digest string `json:"digest"`
	// Bytes is how many bytes the card had.
	Bytes int `json:"bytes"`
	// Name and Version are the card's, bounded (informational only).
	Name    string `json:"name"`
	Version string `json:"version"`
	// Streaming reports the card's streaming capability.
	Streaming bool `json:"streaming"`
	// TraceContext reports that the trace extension was negotiated: the
	// host opted in and the card offers it with empty params.
	TraceContext bool `json:"trace_context"`
	// Bearer reports that the configured bearer will be sent to the
	// endpoint: the card names the configured scheme as an HTTP Bearer.
	Bearer bool `json:"bearer"`
	// Skills are the card's skill IDs, in its order.
	Skills []string `json:"skills"`
}

// AdmitCard checks the bytes of remote's card against every rule of
// REFERENCE §5.4 and returns what Pablo keeps of it. A refusal is a
// *CardError naming exactly why.
func AdmitCard(remote Remote, data []byte) (*Card, error) {
	refuse := func(reason CardReason, format string, args ...any) (*Card, error) {
		return nil, &CardError{Remote: remote.Name, Reason: reason, Detail: fmt.Sprintf(format, args...)}
	}
	if len(data) > MaxCardBytes {
		return refuse(CardTooLarge, "the card has more than %d bytes", MaxCardBytes)
	}
	sum := sha256.Sum256(data)
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return refuse(CardNotJSON, "the card is not a JSON object")
	}
	var card wireCard
	if err := json.Unmarshal(trimmed, &card); err != nil {
		// The decoder's message can quote the card: it is not kept.
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return refuse(CardNotJSON, "the card is not a JSON object")
		}
		return refuse(CardNotJSON, "the card does not decode as an A2A 1.0 AgentCard")
	}
	if over := overBound(&card); over != "" {
		return refuse(CardBounds, "%s", over)
	}
	var matches []*sdk.AgentInterface
	for _, iface := range card.SupportedInterfaces {
		if iface != nil && iface.ProtocolBinding == ProtocolBinding && iface.ProtocolVersion == ProtocolVersion {
			matches = append(matches, iface)
		}
	}
	switch {
	case len(matches) == 0:
		return refuse(CardInterface, "the card lists no %s %s interface", ProtocolBinding, ProtocolVersion)
	case len(matches) > 1:
		return refuse(CardInterface, "the card lists %d %s %s interfaces, exactly one is admitted", len(matches), ProtocolBinding, ProtocolVersion)
	}
	iface := matches[0]
	if iface.Tenant != "" {
		return refuse(CardInterface, "the %s interface names a tenant; only the empty tenant is admitted", ProtocolBinding)
	}
	if iface.URL != remote.Endpoint {
		return refuse(CardEndpointMismatch, "the %s interface's url is not the configured endpoint %q", ProtocolBinding, remote.Endpoint)
	}
	if !slices.Contains(card.DefaultInputModes, "text/plain") {
		return refuse(CardInputModes, "defaultInputModes must include text/plain")
	}
	if !slices.Contains(card.DefaultOutputModes, "text/plain") && !slices.Contains(card.DefaultOutputModes, "application/json") {
		return refuse(CardOutputModes, "defaultOutputModes must include text/plain or application/json")
	}
	trace := false
	for i, ext := range card.Capabilities.Extensions {
		if ext.URI == TraceExtension {
			if !remote.TraceContext {
				if ext.Required {
					return refuse(CardTraceExtension, "the card requires the trace extension and the host did not opt in (trace_context)")
				}
				continue
			}
			if len(ext.Params) != 0 {
				return refuse(CardTraceExtension, "the trace extension must have empty params")
			}
			trace = true
			continue
		}
		if ext.Required {
			return refuse(CardRequiredExtension, "capabilities.extensions[%d] is a required extension Pablo does not know", i)
		}
	}
	bearer, err := admitSecurity(remote, &card)
	if err != "" {
		return refuse(CardSecurity, "%s", err)
	}
	out := &Card{
		Remote: remote.Name, Digest: "sha256:" + hex.EncodeToString(sum[:]), Bytes: len(data),
		Name: card.Name, Version: card.Version, Streaming: card.Capabilities.Streaming,
		TraceContext: trace, Bearer: bearer,
	}
	out.Skills = []string{}
	seen := make(map[string]bool, len(card.Skills))
	for i, s := range card.Skills {
		if seen[s.ID] {
			return refuse(CardDuplicateSkill, "skills[%d] repeats a skill id", i)
		}
		seen[s.ID] = true
		out.Skills = append(out.Skills, s.ID)
	}
	return out, nil
}

// admitSecurity checks the card's security against the configured bearer:
// the scheme named in config must be an HTTP Bearer scheme of the card, and
// the card's requirements must be satisfiable by nothing or by that scheme
// with empty scopes. It reports whether the bearer is to be sent.
func admitSecurity(remote Remote, card *wireCard) (bool, string) {
	if b := remote.Bearer; b != nil {
		scheme, ok := card.SecuritySchemes[sdk.SecuritySchemeName(b.Scheme)]
		if !ok {
			return false, fmt.Sprintf("the card has no security scheme %q (the configured bearer scheme)", b.Scheme)
		}
		http, ok := scheme.(sdk.HTTPAuthSecurityScheme)
		if !ok || !strings.EqualFold(http.Scheme, "bearer") {
			return false, fmt.Sprintf("security scheme %q is not an HTTP Bearer httpAuthSecurityScheme", b.Scheme)
		}
	}
	if len(card.SecurityRequirements) == 0 {
		return remote.Bearer != nil, ""
	}
	for _, req := range card.SecurityRequirements {
		if len(req.Schemes) == 0 {
			return remote.Bearer != nil, ""
		}
		if b := remote.Bearer; b != nil && len(req.Schemes) == 1 {
			if scopes, ok := req.Schemes[b.Scheme]; ok && len(scopes) == 0 {
				return true, ""
			}
		}
	}
	if remote.Bearer == nil {
		return false, "the card's security requirements need a credential and the remote configures no bearer"
	}
	return false, fmt.Sprintf("no security requirement of the card is satisfiable by none or by scheme %q with empty scopes", remote.Bearer.Scheme)
}

// overBound names the first field of card past its bound, or "".
func overBound(card *wireCard) string {
	for _, f := range []struct {
		name   string
		n, max int
	}{
		{"name", len(card.Name), MaxCardName},
		{"description", len(card.Description), MaxCardDescription},
		{"version", len(card.Version), MaxCardVersion},
		{"supportedInterfaces", len(card.SupportedInterfaces), MaxCardList},
		{"capabilities.extensions", len(card.Capabilities.Extensions), MaxCardList},
		{"defaultInputModes", len(card.DefaultInputModes), MaxCardList},
		{"defaultOutputModes", len(card.DefaultOutputModes), MaxCardList},
		{"securitySchemes", len(card.SecuritySchemes), MaxCardList},
		{"securityRequirements", len(card.SecurityRequirements), MaxCardList},
		{"skills", len(card.Skills), MaxSkills},
	} {
		if f.n > f.max {
			return fmt.Sprintf("%s has %d, at most %d", f.name, f.n, f.max)
		}
	}
	for i, s := range card.Skills {
		for _, f := range []struct {
			name   string
			n, max int
		}{
			{"id", len(s.ID), MaxSkillID},
			{"name", len(s.Name), MaxSkillName},
			{"description", len(s.Description), MaxCardDescription},
			{"tags", len(s.Tags), MaxSkillTags},
		} {
			if f.n > f.max {
				return fmt.Sprintf("skills[%d].%s has %d, at most %d", i, f.name, f.n, f.max)
			}
		}
		if s.ID == "" {
			return fmt.Sprintf("skills[%d].id is empty", i)
		}
	}
	return ""
}

// wireCard is the part of an A2A 1.0 AgentCard Pablo reads. Interfaces,
// capabilities and security schemes decode through a2a-go's types; the
// security requirements and skills decode here, because a2a-go v2.4.0
// reads a requirement's scopes as a bare array where the 1.0 protobuf JSON
// (and the TypeScript SDK) writes a StringList object {"list": [...]}: a
// real card with a requirement would not decode through it.
type wireCard struct {
	Name                 string                   `json:"name"`
	Description          string                   `json:"description"`
	Version              string                   `json:"version"`
	SupportedInterfaces  []*sdk.AgentInterface    `json:"supportedInterfaces"`
	Capabilities         sdk.AgentCapabilities    `json:"capabilities"`
	DefaultInputModes    []string                 `json:"defaultInputModes"`
	DefaultOutputModes   []string                 `json:"defaultOutputModes"`
	SecuritySchemes      sdk.NamedSecuritySchemes `json:"securitySchemes"`
	SecurityRequirements []wireRequirement        `json:"securityRequirements"`
	Skills               []wireSkill              `json:"skills"`
}

type wireRequirement struct {
	Schemes map[string]scopeList `json:"schemes"`
}

type wireSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
}

// scopeList is a requirement's scopes: the 1.0 StringList {"list": [...]},
// or a bare array as a2a-go writes it.
type scopeList []string

func (s *scopeList) UnmarshalJSON(b []byte) error {
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		*s = list
		return nil
	}
	var obj struct {
		List []string `json:"list"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	*s = obj.List
	return nil
}
