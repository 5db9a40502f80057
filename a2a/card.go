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
	// ProtocolVersion is the A2A version Pablo speaks to the remote:
	// [ProtocolVersion] ("1.0") when the card lists a JSONRPC 1.0
	// interface, else [LegacyProtocolVersion] ("0.3") for a card that
	// declares 0.3 and a JSONRPC 0.3 endpoint.
	ProtocolVersion string `json:"protocol_version,omitempty"`
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
		return refuse(CardNotJSON, "the card does not decode as an A2A 1.0 or 0.3 AgentCard")
	}
	if over := overBound(&card); over != "" {
		return refuse(CardBounds, "%s", over)
	}
	protocol, reason, detail := admitInterface(remote, &card)
	if reason != "" {
		return refuse(reason, "%s", detail)
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
	schemes, requirements, ok := card.security(protocol)
	if !ok {
		return refuse(CardNotJSON, "the card's security schemes do not decode as A2A %s's", protocol)
	}
	if len(schemes) > MaxCardList {
		return refuse(CardBounds, "securitySchemes has %d, at most %d", len(schemes), MaxCardList)
	}
	bearer, err := admitSecurity(remote, schemes, requirements)
	if err != "" {
		return refuse(CardSecurity, "%s", err)
	}
	out := &Card{
		Remote: remote.Name, Digest: "sha256:" + hex.EncodeToString(sum[:]), Bytes: len(data),
		Name: card.Name, Version: card.Version, Streaming: card.Capabilities.Streaming,
		TraceContext: trace, Bearer: bearer, ProtocolVersion: protocol,
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

// admitInterface finds the one JSONRPC endpoint Pablo will speak to and
// its version: exactly one supportedInterfaces entry of JSONRPC 1.0, or,
// when there is none, a card declaring A2A 0.3 (a top-level
// protocolVersion 0.3.x, or a JSONRPC 0.3 supportedInterfaces entry)
// whose JSONRPC 0.3 endpoints (the 0.3 url with the JSONRPC preferred
// transport, its additionalInterfaces, the 0.3 supportedInterfaces
// entries) are exactly one URL. Either way the url must be the configured endpoint and the
// tenant empty.
func admitInterface(remote Remote, card *wireCard) (protocol string, reason CardReason, detail string) {
	var matches []*sdk.AgentInterface
	for _, iface := range card.SupportedInterfaces {
		if iface != nil && iface.ProtocolBinding == ProtocolBinding && iface.ProtocolVersion == ProtocolVersion {
			matches = append(matches, iface)
		}
	}
	switch {
	case len(matches) > 1:
		return "", CardInterface, fmt.Sprintf("the card lists %d %s %s interfaces, exactly one is admitted", len(matches), ProtocolBinding, ProtocolVersion)
	case len(matches) == 1:
		iface := matches[0]
		if iface.Tenant != "" {
			return "", CardInterface, fmt.Sprintf("the %s interface names a tenant; only the empty tenant is admitted", ProtocolBinding)
		}
		if iface.URL != remote.Endpoint {
			return "", CardEndpointMismatch, fmt.Sprintf("the %s interface's url is not the configured endpoint %q", ProtocolBinding, remote.Endpoint)
		}
		return ProtocolVersion, "", ""
	}
	legacyTop := isLegacyVersion(card.ProtocolVersion)
	legacyListed := slices.ContainsFunc(card.SupportedInterfaces, func(iface *sdk.AgentInterface) bool {
		return iface != nil && iface.ProtocolBinding == ProtocolBinding && isLegacyVersion(string(iface.ProtocolVersion))
	})
	if !legacyTop && !legacyListed {
		if card.ProtocolVersion != "" || card.URL != "" {
			return "", CardUnsupportedProtocol, fmt.Sprintf("the card lists no %s %s interface and declares no A2A %s (protocolVersion 0.3.x)", ProtocolBinding, ProtocolVersion, LegacyProtocolVersion)
		}
		return "", CardInterface, fmt.Sprintf("the card lists no %s %s interface", ProtocolBinding, ProtocolVersion)
	}
	urls := map[string]bool{}
	if legacyTop {
		if card.URL != "" && (card.PreferredTransport == "" || card.PreferredTransport == ProtocolBinding) {
			// 0.3: the preferred transport defaults to JSONRPC.
			urls[card.URL] = true
		}
		for _, iface := range card.AdditionalInterfaces {
			if iface.Transport == ProtocolBinding {
				urls[iface.URL] = true
			}
		}
	}
	for _, iface := range card.SupportedInterfaces {
		if iface != nil && iface.ProtocolBinding == ProtocolBinding && isLegacyVersion(string(iface.ProtocolVersion)) {
			if iface.Tenant != "" {
				return "", CardInterface, fmt.Sprintf("the %s %s interface names a tenant; only the empty tenant is admitted", ProtocolBinding, LegacyProtocolVersion)
			}
			urls[iface.URL] = true
		}
	}
	switch {
	case len(urls) == 0:
		return "", CardInterface, fmt.Sprintf("the A2A %s card lists no %s endpoint", LegacyProtocolVersion, ProtocolBinding)
	case len(urls) > 1:
		return "", CardInterface, fmt.Sprintf("the A2A %s card lists %d %s endpoints, exactly one is admitted", LegacyProtocolVersion, len(urls), ProtocolBinding)
	case !urls[remote.Endpoint]:
		return "", CardEndpointMismatch, fmt.Sprintf("the %s %s endpoint is not the configured endpoint %q", ProtocolBinding, LegacyProtocolVersion, remote.Endpoint)
	}
	return LegacyProtocolVersion, "", ""
}

// isLegacyVersion reports an A2A 0.3 version string: "0.3" or "0.3.N".
func isLegacyVersion(v string) bool {
	return v == LegacyProtocolVersion || strings.HasPrefix(v, LegacyProtocolVersion+".")
}

// securitySchemes are a card's security schemes by name, each true when
// it is an HTTP Bearer scheme.
type securitySchemes map[string]bool

// security decodes the card's security schemes and requirements in the
// dialect of protocol: 1.0's oneof schemes and {"schemes": ...}
// requirements, or 0.3's {"type": "http", "scheme": ...} schemes and bare
// "security" maps.
func (c *wireCard) security(protocol string) (securitySchemes, [][]schemeScopes, bool) {
	schemes := securitySchemes{}
	var reqs [][]schemeScopes
	if protocol == ProtocolVersion {
		var named sdk.NamedSecuritySchemes
		if len(c.SecuritySchemes) > 0 && json.Unmarshal(c.SecuritySchemes, &named) != nil {
			return nil, nil, false
		}
		for name, scheme := range named {
			http, ok := scheme.(sdk.HTTPAuthSecurityScheme)
			schemes[string(name)] = ok && strings.EqualFold(http.Scheme, "bearer")
		}
		for _, r := range c.SecurityRequirements {
			req := []schemeScopes{}
			for name, scopes := range r.Schemes {
				req = append(req, schemeScopes{name, scopes})
			}
			reqs = append(reqs, req)
		}
		return schemes, reqs, true
	}
	var legacy map[string]struct {
		Type   string `json:"type"`
		Scheme string `json:"scheme"`
	}
	if len(c.SecuritySchemes) > 0 && json.Unmarshal(c.SecuritySchemes, &legacy) != nil {
		return nil, nil, false
	}
	for name, scheme := range legacy {
		schemes[name] = scheme.Type == "http" && strings.EqualFold(scheme.Scheme, "bearer")
	}
	for _, r := range c.Security {
		req := []schemeScopes{}
		for name, scopes := range r {
			req = append(req, schemeScopes{name, scopes})
		}
		reqs = append(reqs, req)
	}
	return schemes, reqs, true
}

// schemeScopes is one scheme of a security requirement and its scopes.
type schemeScopes struct {
	scheme string
	scopes []string
}

// admitSecurity checks the card's security against the configured bearer:
// the scheme named in config must be an HTTP Bearer scheme of the card, and
// the card's requirements must be satisfiable by nothing or by that scheme
// with empty scopes. It reports whether the bearer is to be sent.
func admitSecurity(remote Remote, schemes securitySchemes, requirements [][]schemeScopes) (bool, string) {
	if b := remote.Bearer; b != nil {
		isBearer, ok := schemes[b.Scheme]
		if !ok {
			return false, fmt.Sprintf("the card has no security scheme %q (the configured bearer scheme)", b.Scheme)
		}
		if !isBearer {
			return false, fmt.Sprintf("security scheme %q is not an HTTP Bearer scheme", b.Scheme)
		}
	}
	if len(requirements) == 0 {
		return remote.Bearer != nil, ""
	}
	for _, req := range requirements {
		if len(req) == 0 {
			return remote.Bearer != nil, ""
		}
		if b := remote.Bearer; b != nil && len(req) == 1 && req[0].scheme == b.Scheme && len(req[0].scopes) == 0 {
			return true, ""
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
		{"securityRequirements", len(card.SecurityRequirements), MaxCardList},
		{"security", len(card.Security), MaxCardList},
		{"additionalInterfaces", len(card.AdditionalInterfaces), MaxCardList},
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

// wireCard is the part of an A2A 1.0 or 0.3 AgentCard Pablo reads.
// Interfaces and capabilities decode through a2a-go's types; the security
// schemes per dialect (see security); the security requirements and
// skills decode here, because a2a-go v2.4.0 reads a requirement's scopes
// as a bare array where the 1.0 protobuf JSON (and the TypeScript SDK)
// writes a StringList object {"list": [...]}: a real card with a
// requirement would not decode through it. The 0.3 fields (url,
// preferredTransport, additionalInterfaces, protocolVersion, security)
// are read only when the card lists no JSONRPC 1.0 interface.
type wireCard struct {
	Name                 string                `json:"name"`
	Description          string                `json:"description"`
	Version              string                `json:"version"`
	SupportedInterfaces  []*sdk.AgentInterface `json:"supportedInterfaces"`
	Capabilities         sdk.AgentCapabilities `json:"capabilities"`
	DefaultInputModes    []string              `json:"defaultInputModes"`
	DefaultOutputModes   []string              `json:"defaultOutputModes"`
	SecuritySchemes      json.RawMessage       `json:"securitySchemes"`
	SecurityRequirements []wireRequirement     `json:"securityRequirements"`
	Skills               []wireSkill           `json:"skills"`

	ProtocolVersion      string                `json:"protocolVersion"`
	URL                  string                `json:"url"`
	PreferredTransport   string                `json:"preferredTransport"`
	AdditionalInterfaces []wireLegacyInterface `json:"additionalInterfaces"`
	Security             []map[string][]string `json:"security"`
}

// wireLegacyInterface is an A2A 0.3 additionalInterfaces entry.
type wireLegacyInterface struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
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
