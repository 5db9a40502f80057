package a2a

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"net/url"
	"time"

	"github.com/pabloagent/pablo/clock"

	"github.com/google/uuid"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/endpoint"
)

// The protocol Pablo speaks: A2A 1.0 over JSON-RPC.
const (
	// ProtocolVersion is the A2A version of every request (the
	// A2A-Version header) and of the one interface a card must list.
	ProtocolVersion = "1.0"
	// ProtocolBinding is the interface binding a card must offer.
	ProtocolBinding = "JSONRPC"
	// LegacyProtocolVersion is the A2A version Pablo also speaks, to a
	// remote whose card lists no JSONRPC 1.0 interface and declares 0.3:
	// its JSON-RPC methods (message/send, message/stream, tasks/get,
	// tasks/cancel) and its kind-discriminated objects.
	LegacyProtocolVersion = "0.3"
	// TraceExtension is the optional trace-context extension, honoured
	// only when the host opts in (Remote.TraceContext) and the card's
	// entry has empty params.
	TraceExtension = "urn:pablo:a2a:tracecontext:v1"
)

// The fixed bounds of REFERENCE §5.4.
const (
	MaxRemotes       = 16
	MaxCardBytes     = 64 << 10
	CardFetchTimeout = 10 * time.Second
	CancelTimeout    = 2 * time.Second
	MaxRemoteIDBytes = 256
	MaxParts         = 32
	MaxURLBytes      = 4096
	MaxMediaType     = 128
	MaxFilename      = 256
	MaxOutputModes   = 16
	// DefaultMaxOutputBytes bounds a remote result's logical bytes when
	// the host names no ceiling (the parent's max_output_bytes default).
	DefaultMaxOutputBytes = 1 << 20
	// MaxFrameBytes bounds one SSE frame and one blocking answer.
	MaxFrameBytes = 16 << 20
	// MaxFrames bounds the frames of one stream.
	MaxFrames = 4096
)

const remoteNamePattern = `^[A-Za-z0-9_.-]{1,128}$`

// remoteName reports whether s matches remoteNamePattern, matched by hand:
// compiling the regular expression (its counted repetition expands to
// hundreds of instructions) cost every process that links a2a at start-up.
func remoteName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(isAlnum(c) || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// Remote is one host-configured remote agent (options.a2a.remotes.NAME):
// its card URL and RPC endpoint, the trace-context opt-in and the bearer
// it may be sent.
type Remote struct {
	Name         string
	CardURL      string
	Endpoint     string
	TraceContext bool
	// Bearer, when set, names the card's HTTP Bearer security scheme and
	// the a2a.bearer credential sent to the endpoint (and nowhere else).
	Bearer *Bearer
}

// Bearer is a remote's bearer: the security scheme of the card it
// answers and the credential's name.
type Bearer struct {
	Scheme     string
	Credential string
}

// Resolver resolves one credential for its consumer and exact destination;
// (*authority.Resolver).Resolve is one.
type Resolver func(ctx context.Context, name string, consumer authority.Consumer, destination string) (authority.Secret, error)

// Clock is the package's time: the card fetch bound, the cancel exchange
// bound and a task's deadline are armed on it, so tests advance time by
// hand and never sleep. Nil in [Options] is the system clock. It is the
// same interface as children.Clock and acp.Clock.
type Clock = clock.Clock

// Timer is what [Clock.AfterFunc] returns; *time.Timer is one.
type Timer = clock.Timer

// Options configure a [Client] and a [Runner].
type Options struct {
	// Remotes are the configured remotes, at most MaxRemotes.
	Remotes []Remote
	// Resolve resolves a remote's bearer credential; nil resolves
	// nothing, so a remote with a bearer fails before it is sent.
	Resolve Resolver
	// AllowLoopbackHTTP admits plain http to a loopback host (test
	// fixtures, never under a locked deployment).
	AllowLoopbackHTTP bool
	// TLSConfig, when set, is used for https (tests pass an httptest
	// server's).
	TLSConfig *tls.Config
	// MaxOutputBytes is the parent's output ceiling: a remote result's
	// logical bytes (text, data, inline files, URLs) count against it.
	// Zero is DefaultMaxOutputBytes.
	MaxOutputBytes int64
	// Clock arms every time rule; nil is the system clock.
	Clock Clock
	// NewID returns message IDs; nil is random UUIDs.
	NewID func() string
	// Redact is the host's set of known secrets: every resolved bearer
	// joins it, and a remote result is masked with it before anything
	// keeps it, so a peer that echoes the bearer back records only the
	// mask. Nil is a set of the client's own.
	Redact Masker
}

// Masker is the host's set of known secrets, as the client uses it: a
// resolved bearer joins it (Add), and every text, JSON value and byte
// string a remote returns is masked with it before anything keeps it,
// each answer with the count of secrets masked. The runtime passes its
// own set, so a secret the host knows is masked in remote results too.
type Masker interface {
	Add(secret string)
	String(s string) string
	Mask(b []byte) ([]byte, int)
	MaskString(s string) (string, int)
	MaskJSON(raw []byte) ([]byte, int)
}

func (o *Options) clock() Clock {
	if o.Clock == nil {
		return clock.System{}
	}
	return o.Clock
}

func (o *Options) newID() string {
	if o.NewID == nil {
		return uuid.NewString()
	}
	return o.NewID()
}

// newIDs returns a message ID and a request ID: NewID's, or two random
// UUIDs (version 4, as uuid.NewString makes them) from one read.
func (o *Options) newIDs() (string, string) {
	if o.NewID != nil {
		msgID := o.NewID()
		return msgID, o.NewID()
	}
	var b [32]byte
	rand.Read(b[:])
	return randomUUID(b[:16]), randomUUID(b[16:])
}

func randomUUID(b []byte) string {
	var u uuid.UUID
	copy(u[:], b)
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // variant RFC 4122
	return u.String()
}

func (o *Options) maxOutput() int64 {
	if o.MaxOutputBytes <= 0 {
		return DefaultMaxOutputBytes
	}
	return o.MaxOutputBytes
}

// check validates the remotes once.
func (o *Options) check() (map[string]Remote, error) {
	if len(o.Remotes) > MaxRemotes {
		return nil, fmt.Errorf("%w: %d remotes, at most %d", ErrConfig, len(o.Remotes), MaxRemotes)
	}
	byName := make(map[string]Remote, len(o.Remotes))
	for _, r := range o.Remotes {
		if !remoteName(r.Name) {
			return nil, fmt.Errorf("%w: remote name %q must match %s", ErrConfig, r.Name, remoteNamePattern)
		}
		if _, dup := byName[r.Name]; dup {
			return nil, fmt.Errorf("%w: remote %q is configured twice", ErrConfig, r.Name)
		}
		for _, u := range []struct{ key, v string }{{"card_url", r.CardURL}, {"endpoint", r.Endpoint}} {
			if err := checkURL(u.v, o.AllowLoopbackHTTP); err != nil {
				return nil, fmt.Errorf("%w: remote %q: %s: %w", ErrConfig, r.Name, u.key, err)
			}
		}
		if b := r.Bearer; b != nil && (b.Scheme == "" || len(b.Scheme) > 128 || b.Credential == "") {
			return nil, fmt.Errorf("%w: remote %q: bearer needs a scheme (1..128 bytes) and a credential", ErrConfig, r.Name)
		}
		byName[r.Name] = r
	}
	return byName, nil
}

// checkURL admits an absolute http(s) URL of at most 4096 bytes with no
// userinfo, query or fragment, https unless loopback http is allowed.
func checkURL(raw string, allowLoopback bool) error {
	if raw == "" || len(raw) > 4096 {
		return fmt.Errorf("must be 1..4096 bytes")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return fmt.Errorf("must be an absolute URL")
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return fmt.Errorf("must have no userinfo, query or fragment")
	}
	return endpoint.CheckScheme(u, allowLoopback)
}

// timerContext returns ctx ended with cause once d has passed on clock;
// stop releases the timer.
func timerContext(ctx context.Context, clock Clock, d time.Duration, cause error) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	t := clock.AfterFunc(d, func() { cancel(cause) })
	return ctx, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}
