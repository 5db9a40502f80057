package authority

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pabloagent/pablo/internal/fsx"
	"github.com/pabloagent/pablo/internal/redact"
)

// Consumer names the one place a credential may be used.
type Consumer string

// The credential consumers.
const (
	ConsumerVercel           Consumer = "provider.vercel"
	ConsumerOpenRouter       Consumer = "provider.openrouter"
	ConsumerOpenResponses    Consumer = "provider.open_responses"
	ConsumerOpenAICompatible Consumer = "provider.openai_compatible"
	ConsumerAnthropic        Consumer = "provider.anthropic"
	ConsumerOpenAI           Consumer = "provider.openai"
	ConsumerGemini           Consumer = "provider.gemini"
	ConsumerOTelHeaders      Consumer = "otel.headers"
	ConsumerMCPEnv           Consumer = "mcp.env"
	ConsumerMCPHeaders       Consumer = "mcp.headers"
	ConsumerA2ABearer        Consumer = "a2a.bearer"
	// ConsumerMCPOAuth is an OAuth client secret or signing key of a
	// Streamable HTTP MCP server ("mcp:SERVER:oauth:client_secret",
	// "mcp:SERVER:oauth:private_key"): it goes to the server's
	// authorization server only, never to the MCP server.
	ConsumerMCPOAuth Consumer = "mcp.oauth"
	// ConsumerLedgerStore is the password of the host's PostgreSQL ledger
	// store (a Go extension). Its one destination is
	// [DestinationLedgerStore]: the store is named by the host (--store,
	// PABLO_STORE), not by the deployment.
	ConsumerLedgerStore Consumer = "ledger.store"
)

// DestinationLedgerStore is the destination of every ledger.store
// credential: the ledger store the host opens.
const DestinationLedgerStore = "ledger store"

// ParseConsumer accepts every consumer name, including "mcp.environment",
// which the product documents use for the stdio MCP consumer that the
// reference schema spells "mcp.env".
func ParseConsumer(s string) (Consumer, bool) {
	if s == "mcp.environment" {
		return ConsumerMCPEnv, true
	}
	c := Consumer(s)
	switch c {
	case ConsumerVercel, ConsumerOpenRouter, ConsumerOpenResponses, ConsumerOpenAICompatible, ConsumerAnthropic, ConsumerOpenAI, ConsumerGemini,
		ConsumerOTelHeaders, ConsumerMCPEnv, ConsumerMCPHeaders, ConsumerMCPOAuth, ConsumerA2ABearer, ConsumerLedgerStore:
		return c, true
	}
	return "", false
}

// SourceKind says where a credential value comes from.
type SourceKind string

// The source kinds.
const (
	SourceEnvironment SourceKind = "environment"
	SourceFile        SourceKind = "file"
	SourceHost        SourceKind = "host"
)

// Source is one place to look for a credential value. Only an absent source
// falls through to the next; a present but empty, malformed or unreadable one
// is an error.
type Source struct {
	Kind SourceKind `json:"kind"`
	// Name is the environment variable (environment) or host callback
	// name (host).
	Name string `json:"name,omitempty"`
	// Path is the resolved absolute path of a file source.
	Path string `json:"path,omitempty"`
	// Encoding is "utf8" (a token file) or "dotenv" (with Key).
	Encoding string `json:"encoding,omitempty"`
	Key      string `json:"key,omitempty"`
}

// Credential is a named reference: never a value.
type Credential struct {
	Name     string   `json:"name"`
	Consumer Consumer `json:"consumer"`
	Sources  []Source `json:"sources"`
	// Destinations are the exact destinations configuration binds this
	// credential to (an endpoint URL, "mcp:SERVER" with a header or variable
	// name, ...). Resolution for any other destination fails.
	Destinations []string `json:"destinations"`
}

// MaxSecretBytes bounds one credential value.
const MaxSecretBytes = 64 << 10

// Secret holds a credential value. Every way of printing or encoding it
// yields a mask; only Reveal returns the value, and only code that hands it
// to its destination should call it.
type Secret struct{ v string }

// Reveal returns the value.
func (s Secret) Reveal() string { return s.v }

// String implements fmt.Stringer with a mask.
func (s Secret) String() string { return redact.Mask }

// GoString implements fmt.GoStringer with a mask.
func (s Secret) GoString() string { return redact.Mask }

// Format masks the value for every verb, %v and %+v included.
func (s Secret) Format(f fmt.State, _ rune) { io.WriteString(f, redact.Mask) }

// MarshalJSON masks the value.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(redact.Mask) }

// MarshalText masks the value.
func (s Secret) MarshalText() ([]byte, error) { return []byte(redact.Mask), nil }

// CredentialError explains why a credential did not resolve. It never holds
// the value.
type CredentialError struct {
	Name        string
	Consumer    Consumer
	Destination string
	Reason      string
	// Err is the source's error, when one failed to read (for example
	// fsx.ErrNotRegular for a FIFO, or the context's error); never a value.
	Err error
}

func (e *CredentialError) Error() string {
	return fmt.Sprintf("credential %q for %s at %q: %s", e.Name, e.Consumer, e.Destination, e.Reason)
}

// Is makes errors.Is(err, ErrCredential) true.
func (e *CredentialError) Is(target error) bool { return target == ErrCredential }

// Unwrap returns the source's error, or nil.
func (e *CredentialError) Unwrap() error { return e.Err }

// ResolverOptions configure a Resolver.
type ResolverOptions struct {
	Credentials []Credential
	// LookupEnv reads an environment variable. Nil means no environment
	// at all: every environment source is absent.
	LookupEnv func(name string) (string, bool)
	// Host answers host sources. Nil means every host source is absent.
	Host func(ctx context.Context, name string) (value string, ok bool, err error)
	// Redact, when set, learns every value resolved, so later output that
	// echoes it is masked before it is recorded.
	Redact *redact.Set
}

// Resolver resolves credential references for exactly their consumer and
// destination.
type Resolver struct {
	opts  ResolverOptions
	creds map[string]Credential
}

// NewResolver returns a Resolver over opts.Credentials.
func NewResolver(opts ResolverOptions) *Resolver {
	r := &Resolver{opts: opts, creds: make(map[string]Credential, len(opts.Credentials))}
	for _, c := range opts.Credentials {
		r.creds[c.Name] = c
	}
	return r
}

// Resolve returns the value of credential name, but only for its consumer and
// one of its bound destinations.
func (r *Resolver) Resolve(ctx context.Context, name string, consumer Consumer, destination string) (Secret, error) {
	fail := func(reason string) (Secret, error) {
		return Secret{}, &CredentialError{Name: name, Consumer: consumer, Destination: destination, Reason: reason}
	}
	c, ok := r.creds[name]
	if !ok {
		return fail("no such credential")
	}
	if c.Consumer != consumer {
		return fail(fmt.Sprintf("the credential belongs to consumer %s", c.Consumer))
	}
	if !slices.Contains(c.Destinations, destination) {
		return fail("the destination is not the one configuration binds this credential to")
	}
	for _, src := range c.Sources {
		v, present, err := r.read(ctx, src)
		if err != nil {
			return Secret{}, &CredentialError{Name: name, Consumer: consumer, Destination: destination, Reason: fmt.Sprintf("%s source: %v", src.Kind, err), Err: err}
		}
		if !present {
			continue
		}
		if v == "" {
			return fail(fmt.Sprintf("%s source is present but empty", src.Kind))
		}
		if len(v) > MaxSecretBytes {
			return fail(fmt.Sprintf("%s source value exceeds %d bytes", src.Kind, MaxSecretBytes))
		}
		if r.opts.Redact != nil {
			r.opts.Redact.Add(v)
		}
		return Secret{v: v}, nil
	}
	return fail("no source is present; looked for " + lookedFor(c.Sources) + howToSet(c.Sources))
}

// howToSet says how a person makes the credential present through its
// first environment or file source: "" when it has only host sources
// (the host program, not the person, provides those).
func howToSet(srcs []Source) string {
	for _, src := range srcs {
		switch src.Kind {
		case SourceEnvironment:
			return "; set it with: export " + src.Name + "=<value>"
		case SourceFile:
			if src.Key != "" {
				return "; set it with a line " + src.Key + "=<value> in " + src.Path
			}
			return "; set it by writing the value to " + src.Path
		}
	}
	return ""
}

// lookedFor names where a credential's sources were looked for, in order:
// the environment variables, files (and dotenv keys) and host sources.
func lookedFor(srcs []Source) string {
	var parts []string
	for _, src := range srcs {
		switch src.Kind {
		case SourceEnvironment:
			parts = append(parts, "environment variable "+src.Name)
		case SourceFile:
			p := "file " + src.Path
			if src.Key != "" {
				p += " (key " + src.Key + ")"
			}
			parts = append(parts, p)
		case SourceHost:
			parts = append(parts, "host source "+src.Name)
		}
	}
	if len(parts) == 0 {
		return "nothing: the credential declares no source"
	}
	return strings.Join(parts, ", then ")
}

func (r *Resolver) read(ctx context.Context, src Source) (string, bool, error) {
	switch src.Kind {
	case SourceEnvironment:
		if r.opts.LookupEnv == nil {
			return "", false, nil
		}
		v, ok := r.opts.LookupEnv(src.Name)
		return v, ok, nil
	case SourceHost:
		if r.opts.Host == nil {
			return "", false, nil
		}
		return r.opts.Host(ctx, src.Name)
	case SourceFile:
		return readSecretFile(ctx, src)
	}
	return "", false, fmt.Errorf("unknown source kind %q", src.Kind)
}

// readSecretFile reads a file source through fsx: a FIFO or a device is
// refused at once (never waited on) and ctx ends the read.
func readSecretFile(ctx context.Context, src Source) (string, bool, error) {
	data, err := fsx.ReadFile(ctx, src.Path, MaxSecretBytes+2)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		return "", false, nil
	case errors.Is(err, fsx.ErrNotRegular):
		return "", false, fmt.Errorf("%w: a credential file must be a regular file", fsx.ErrNotRegular)
	case errors.Is(err, fsx.ErrTooLarge):
		return "", false, fmt.Errorf("file exceeds %d bytes", MaxSecretBytes)
	case ctx.Err() != nil:
		return "", false, ctx.Err()
	default:
		return "", false, fmt.Errorf("unreadable file")
	}
	switch src.Encoding {
	case "", "utf8":
		return parseTokenFile(data)
	case "dotenv":
		return ParseDotenvKey(data, src.Key)
	}
	return "", false, fmt.Errorf("unknown encoding %q", src.Encoding)
}

func parseTokenFile(data []byte) (string, bool, error) {
	data = bytes.TrimSuffix(data, []byte("\n"))
	data = bytes.TrimSuffix(data, []byte("\r"))
	if !utf8.Valid(data) {
		return "", false, fmt.Errorf("token file is not UTF-8")
	}
	for _, c := range data {
		if c < 0x20 || c == 0x7f {
			return "", false, fmt.Errorf("token file holds a control byte")
		}
	}
	return string(data), true, nil
}

// ParseDotenvKey extracts one key from a dotenv file with a bounded
// single-line literal grammar: KEY=VALUE lines, blank lines and # comments,
// optional "export " prefix, values bare or in single or double quotes with
// no interpolation and no escapes. A repeated key anywhere in the file is an
// error. A missing key is absent (present=false).
func ParseDotenvKey(data []byte, key string) (value string, present bool, err error) {
	if !utf8.Valid(data) {
		return "", false, fmt.Errorf("dotenv file is not UTF-8")
	}
	seen := map[string]bool{}
	for i, line := range strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		trimmed = strings.TrimPrefix(trimmed, "export ")
		k, v, ok := strings.Cut(trimmed, "=")
		k = strings.TrimSpace(k)
		if !ok || !validEnvName(k) {
			return "", false, fmt.Errorf("dotenv line %d is not KEY=VALUE", i+1)
		}
		if seen[k] {
			return "", false, fmt.Errorf("dotenv key on line %d is repeated", i+1)
		}
		seen[k] = true
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') {
			if v[len(v)-1] != v[0] || strings.ContainsRune(v[1:len(v)-1], rune(v[0])) {
				return "", false, fmt.Errorf("dotenv line %d has an unbalanced quote", i+1)
			}
			v = v[1 : len(v)-1]
		} else if strings.ContainsAny(v, "\"'`$\\") {
			return "", false, fmt.Errorf("dotenv line %d needs quotes for special characters", i+1)
		}
		for _, c := range []byte(v) {
			if c < 0x20 || c == 0x7f {
				return "", false, fmt.Errorf("dotenv line %d holds a control byte", i+1)
			}
		}
		if k == key {
			value, present = v, true
		}
	}
	return value, present, nil
}

func validEnvName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// ValidEnvName reports whether s is an environment variable name:
// ^[A-Za-z_][A-Za-z0-9_]*$, 1..128 bytes.
func ValidEnvName(s string) bool { return validEnvName(s) }

// NewSecret wraps a value a host obtained itself, not through a
// [Resolver] (an ACP client's environment values for its own MCP
// servers), so it travels as every credential does: masked wherever it is
// printed or encoded.
func NewSecret(v string) Secret { return Secret{v: v} }
