package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/pabloagent/pablo/internal/jsonx"
)

// SnapshotVersion is the version of the dispatch snapshot form this
// package writes and reads.
const SnapshotVersion = 1

// The bounds of a dispatch snapshot. A snapshot lists what one agent was
// admitted to use, so it is small; anything larger is refused, never cut.
const (
	// MaxSnapshotBytes bounds a snapshot's canonical form.
	MaxSnapshotBytes = 1 << 20
	// MaxSnapshotEntries bounds its entries.
	MaxSnapshotEntries = 4096
	// MaxSnapshotAttributes bounds one entry's attributes.
	MaxSnapshotAttributes = 32
	// MaxSnapshotString bounds every string of a snapshot (an ID, a kind,
	// a layer, a rule, an attribute's key or value), in bytes.
	MaxSnapshotString = 4096
)

// Snapshot is the dispatch snapshot of one agent: what it was admitted to
// use when it started, as its runtime materialized it — each offered tool
// with the layer and rule that admitted it and its definition digest, the
// MCP servers it uses with their negotiated protocol versions, its Skills
// with their metadata and instruction digests, the sandbox each process
// runs in, and its model route entries. It holds nothing time- or
// health-dependent, so equal inputs give equal snapshots.
//
// Its canonical form ([EncodeSnapshot]) is what the ledger records and
// what its digest covers.
type Snapshot struct {
	// Version is SnapshotVersion.
	Version int `json:"version"`
	// Fingerprint is the deployment fingerprint; empty for a runtime
	// assembled by hand.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Admitted lists the entries, sorted by ID, each ID once.
	Admitted []SnapshotEntry `json:"admitted"`
}

// SnapshotEntry is one admitted option of a snapshot: a tool, an MCP
// server, a Skill, a remote, a model route or a model.
type SnapshotEntry struct {
	// ID is unique in the snapshot: "tool:fs.read", "mcp:records",
	// "skill:team/review", "route:fast", "model:mini", "model", ...
	ID string `json:"id"`
	// Kind is tool, mcp_tool, mcp_server, skill, remote, model_route or
	// model.
	Kind string `json:"kind"`
	// Layer and Rule are the deciding layer and rule, where policy decides.
	Layer string `json:"layer,omitempty"`
	Rule  string `json:"rule,omitempty"`
	// Attributes pin what the entry is (definition digest, protocol
	// version, Skill digests, sandbox profile, provider and model).
	Attributes map[string]string `json:"attributes,omitempty"`
}

// SnapshotRecord is the ledger record of one agent's dispatch snapshot:
// the snapshot's canonical JSON and its digest, "sha256:" over exactly
// those bytes. The canonical text is kept as a JSON string, not nested
// JSON, so a store that re-encodes records (escaping '<', '>' or '&', or
// reordering members) cannot change the bytes the digest covers.
type SnapshotRecord struct {
	AgentID  string    `json:"agent_id"`
	Digest   ResultRef `json:"digest"`
	Snapshot string    `json:"snapshot"`
}

// SnapshotError is a snapshot that cannot be recorded, or a recorded one
// that does not read back: malformed, out of bounds, not canonical, or not
// matching its digest (the record was altered). It matches [ErrInvalid].
type SnapshotError struct {
	// Field is where the fault is: "digest", "canonical form", "version",
	// "admitted[3].id", ...
	Field  string
	Reason string
}

func (e *SnapshotError) Error() string {
	return "ledger: dispatch snapshot: " + e.Field + ": " + e.Reason
}

// Is matches ErrInvalid.
func (e *SnapshotError) Is(target error) bool { return target == ErrInvalid }

// EncodeSnapshot checks s and returns its canonical JSON and digest.
func EncodeSnapshot(s *Snapshot) ([]byte, ResultRef, error) {
	if err := s.check(); err != nil {
		return nil, "", err
	}
	canonical := appendSnapshot(make([]byte, 0, snapshotSize(s)), s)
	if len(canonical) > MaxSnapshotBytes {
		return nil, "", &SnapshotError{Field: "snapshot", Reason: fmt.Sprintf("its canonical form holds %d bytes, over the %d a snapshot may", len(canonical), MaxSnapshotBytes)}
	}
	return canonical, RefOf(canonical), nil
}

// snapshotSize is the length of s's canonical form when no string in it
// needs escaping: the buffer appendSnapshot writes it into is made once.
func snapshotSize(s *Snapshot) int {
	n := len(`{"admitted":[],"fingerprint":"","version":}`) + len(s.Fingerprint) + 20
	for _, e := range s.Admitted {
		n += len(`{"attributes":{},"id":"","kind":"","layer":"","rule":""},`) + len(e.ID) + len(e.Kind) + len(e.Layer) + len(e.Rule)
		for k, v := range e.Attributes {
			n += len(`"":"",`) + len(k) + len(v)
		}
	}
	return n
}

// appendSnapshot writes s, checked, in canonical JSON by hand (it is on
// every task's start): members in byte order, strings in jsonx's one
// escaping, the empty members a struct would omit omitted.
func appendSnapshot(b []byte, s *Snapshot) []byte {
	b = append(b, `{"admitted":[`...)
	var keys []string
	for i, e := range s.Admitted {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		if len(e.Attributes) > 0 {
			keys = keys[:0]
			for k := range e.Attributes {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			b = append(b, `"attributes":{`...)
			for j, k := range keys {
				if j > 0 {
					b = append(b, ',')
				}
				b = jsonx.AppendString(b, k)
				b = append(b, ':')
				b = jsonx.AppendString(b, e.Attributes[k])
			}
			b = append(b, "},"...)
		}
		b = append(b, `"id":`...)
		b = jsonx.AppendString(b, e.ID)
		b = append(b, `,"kind":`...)
		b = jsonx.AppendString(b, e.Kind)
		if e.Layer != "" {
			b = append(b, `,"layer":`...)
			b = jsonx.AppendString(b, e.Layer)
		}
		if e.Rule != "" {
			b = append(b, `,"rule":`...)
			b = jsonx.AppendString(b, e.Rule)
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if s.Fingerprint != "" {
		b = append(b, `,"fingerprint":`...)
		b = jsonx.AppendString(b, s.Fingerprint)
	}
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, int64(s.Version), 10)
	return append(b, '}')
}

// DecodeSnapshot reads a recorded snapshot back: data must be the
// canonical form of a valid snapshot and digest its sha256. A record that
// was altered fails with a *SnapshotError naming what does not hold.
func DecodeSnapshot(data []byte, digest ResultRef) (*Snapshot, error) {
	if len(data) > MaxSnapshotBytes {
		return nil, &SnapshotError{Field: "snapshot", Reason: fmt.Sprintf("%d bytes, over the %d a snapshot may hold", len(data), MaxSnapshotBytes)}
	}
	if got := RefOf(data); got != digest {
		return nil, &SnapshotError{Field: "digest", Reason: fmt.Sprintf("the snapshot's sha256 is %s, the record says %s: the record was altered", got, strconv.Quote(string(digest)))}
	}
	canonical, err := jsonx.Canonical(data)
	if err != nil {
		return nil, &SnapshotError{Field: "snapshot", Reason: err.Error()}
	}
	if !bytes.Equal(canonical, data) {
		return nil, &SnapshotError{Field: "canonical form", Reason: "the snapshot is not in canonical JSON (sorted keys, no whitespace, minimal escapes)"}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Snapshot
	if err := dec.Decode(&s); err != nil {
		return nil, &SnapshotError{Field: "snapshot", Reason: err.Error()}
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	// A member set to its zero value (an empty fingerprint or layer, say)
	// decodes like an absent one but encodes without it: only the form
	// EncodeSnapshot writes is accepted.
	if again, _, err := EncodeSnapshot(&s); err != nil || !bytes.Equal(again, data) {
		return nil, &SnapshotError{Field: "canonical form", Reason: "the snapshot holds members its writer omits (empty strings, null, empty attributes)"}
	}
	return &s, nil
}

// check validates s: the version, the entries sorted by ID and unique,
// and every bound.
func (s *Snapshot) check() error {
	if s.Version != SnapshotVersion {
		return &SnapshotError{Field: "version", Reason: fmt.Sprintf("is %d; this ledger reads version %d", s.Version, SnapshotVersion)}
	}
	if err := checkSnapshotString("fingerprint", s.Fingerprint, false); err != nil {
		return err
	}
	if s.Admitted == nil {
		return &SnapshotError{Field: "admitted", Reason: "is missing; a snapshot with nothing admitted has an empty list"}
	}
	if len(s.Admitted) > MaxSnapshotEntries {
		return &SnapshotError{Field: "admitted", Reason: fmt.Sprintf("holds %d entries, over the %d a snapshot may", len(s.Admitted), MaxSnapshotEntries)}
	}
	for i, e := range s.Admitted {
		// An entry's field is named only when it fails: a snapshot is
		// checked every time an agent starts.
		if err := checkEntryString(i, ".id", "", e.ID, true); err != nil {
			return err
		}
		if i > 0 && s.Admitted[i-1].ID >= e.ID {
			return &SnapshotError{Field: entryField(i, ".id", ""), Reason: fmt.Sprintf("%q follows %q: entries are sorted by ID, each ID once", e.ID, s.Admitted[i-1].ID)}
		}
		if err := checkEntryString(i, ".kind", "", e.Kind, true); err != nil {
			return err
		}
		if err := checkEntryString(i, ".layer", "", e.Layer, false); err != nil {
			return err
		}
		if err := checkEntryString(i, ".rule", "", e.Rule, false); err != nil {
			return err
		}
		if len(e.Attributes) > MaxSnapshotAttributes {
			return &SnapshotError{Field: entryField(i, ".attributes", ""), Reason: fmt.Sprintf("holds %d attributes, over the %d an entry may", len(e.Attributes), MaxSnapshotAttributes)}
		}
		for k, v := range e.Attributes {
			if err := checkEntryString(i, ".attributes key", "", k, true); err != nil {
				return err
			}
			if err := checkEntryString(i, ".attributes.", k, v, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// entryField names a field of the i-th admitted entry: field, then name.
func entryField(i int, field, name string) string {
	return "admitted[" + strconv.Itoa(i) + "]" + field + name
}

// checkEntryString is checkSnapshotString for the field of the i-th
// admitted entry entryField names, built only for the error.
func checkEntryString(i int, field, name, v string, required bool) error {
	if reason := snapshotStringProblem(v, required); reason != "" {
		return &SnapshotError{Field: entryField(i, field, name), Reason: reason}
	}
	return nil
}

func checkSnapshotString(field, v string, required bool) error {
	if reason := snapshotStringProblem(v, required); reason != "" {
		return &SnapshotError{Field: field, Reason: reason}
	}
	return nil
}

// snapshotStringProblem is what is wrong with v as a snapshot string, or
// "".
func snapshotStringProblem(v string, required bool) string {
	switch {
	case required && v == "":
		return "must not be empty"
	case !utf8.ValidString(v):
		return "is not valid UTF-8"
	case len(v) > MaxSnapshotString:
		return fmt.Sprintf("holds %d bytes, over the %d a snapshot string may", len(v), MaxSnapshotString)
	}
	return ""
}

// RecordSnapshot implements [Ledger]: it records agentID's dispatch
// snapshot, canonical JSON whose sha256 is digest (from
// [EncodeSnapshot]). It is not a barrier: the record is durable with the
// agent's first dispatch, before anything it was admitted to use acts.
// Unless the root's payloads are trusted, the snapshot is decoded and
// checked first.
func (r *Root) RecordSnapshot(ctx context.Context, agentID string, snapshot []byte, digest ResultRef) error {
	if r.trusted {
		if len(snapshot) > MaxSnapshotBytes || RefOf(snapshot) != digest {
			return &SnapshotError{Field: "digest", Reason: "does not match the snapshot: record what EncodeSnapshot returned"}
		}
	} else if _, err := DecodeSnapshot(snapshot, digest); err != nil {
		return err
	}
	r.mu.Lock()
	a, err := r.usable(agentID, "record a snapshot for")
	if err != nil {
		r.mu.Unlock()
		return err
	}
	r.record(Record{Kind: RecordSnapshot, Time: r.clock(), Snapshot: &SnapshotRecord{AgentID: a.id, Digest: digest, Snapshot: string(snapshot)}})
	return r.unlockAccepted(ctx)
}
