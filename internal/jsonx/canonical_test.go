package jsonx

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// hostile are strings where escapings can differ: control characters,
// the JavaScript line separators, HTML's specials, invalid UTF-8 and the
// UTF-8 encoding of lone surrogates (invalid UTF-8 to Go).
var hostile = []struct {
	in, short, config string
}{
	{"plain", `"plain"`, `"plain"`},
	{"q\"b\\", `"q\"b\\"`, `"q\"b\\"`},
	{"\n\r\t\b\f", `"\n\r\t\b\f"`, `"\u000a\u000d\u0009\u0008\u000c"`},
	{"\x00\x01\x1f", `"\u0000\u0001\u001f"`, `"\u0000\u0001\u001f"`},
	{"\x7f", "\"\x7f\"", "\"\x7f\""},
	{"\u2028\u2029", "\"\u2028\u2029\"", "\"\u2028\u2029\""},
	{"<&>", `"<&>"`, `"<&>"`},
	{"é ☃ 😀", `"é ☃ 😀"`, `"é ☃ 😀"`},
	{"bad\xffutf8", "\"bad\ufffdutf8\"", "\"bad\xffutf8\""},
	{"cut\xe2\x82", "\"cut\ufffd\ufffd\"", "\"cut\xe2\x82\""},
	{"lone\xed\xa0\x80", "\"lone\ufffd\ufffd\ufffd\"", "\"lone\xed\xa0\x80\""},
	{"/", `"/"`, `"/"`},
}

// TestEscapingsPinnedOnHostileStrings pins both escapings byte for byte,
// and shows that each is exactly the writer it replaced: EscapeShort the
// ledger's and the engine's (this package's AppendString, unchanged),
// EscapeConfig the root's pablo-config-json-v1 writer.
func TestEscapingsPinnedOnHostileStrings(t *testing.T) {
	t.Parallel()
	for _, h := range hostile {
		if got := string(EscapeShort.Append(nil, h.in)); got != h.short {
			t.Errorf("EscapeShort %q = %s, want %s", h.in, got, h.short)
		}
		if got := string(EscapeConfig.Append(nil, h.in)); got != h.config {
			t.Errorf("EscapeConfig %q = %s, want %s", h.in, got, h.config)
		}
		if got, old := EscapeShort.Append(nil, h.in), oldShortString(nil, h.in); !bytes.Equal(got, old) {
			t.Errorf("EscapeShort %q = %s, the old writer wrote %s", h.in, got, old)
		}
		if got, old := EscapeConfig.Append(nil, h.in), oldConfigString(nil, h.in); !bytes.Equal(got, old) {
			t.Errorf("EscapeConfig %q = %s, the old writer wrote %s", h.in, got, old)
		}
	}
}

// TestCanonicalOfLoneSurrogateEscape: JSON text may escape a lone
// surrogate; decoding makes it U+FFFD, which is then written raw.
func TestCanonicalOfLoneSurrogateEscape(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`"\ud800"`:         "\"\ufffd\"",
		`"\udc00x"`:        "\"\ufffdx\"",
		`"\ud83d\ude00"`:   "\"😀\"",
		`"\u2028<\u0026>"`: "\"\u2028<&>\"",
	} {
		got, err := Canonical([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("Canonical(%s) = %q, %v; want %q", in, got, err, want)
		}
		old, _ := oldLedgerCanonical([]byte(in))
		if string(old) != string(got) {
			t.Errorf("Canonical(%s) = %q, the old ledger wrote %q", in, got, old)
		}
	}
}

// FuzzEscapingsMatchTheOldWriters: on any string, each escaping writes
// what the writer it replaced wrote, and a tree written in EscapeConfig is
// what the root's old canonicalJSON wrote.
func FuzzEscapingsMatchTheOldWriters(f *testing.F) {
	for _, h := range hostile {
		f.Add(h.in, h.in)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, old := EscapeShort.Append(nil, a), oldShortString(nil, a); !bytes.Equal(got, old) {
			t.Fatalf("EscapeShort %q = %q, old %q", a, got, old)
		}
		if got, old := EscapeConfig.Append(nil, a), oldConfigString(nil, a); !bytes.Equal(got, old) {
			t.Fatalf("EscapeConfig %q = %q, old %q", a, got, old)
		}
		tree := map[string]any{a: []any{b, int64(-7), uint64(1 << 63), true, nil}, b: map[string]any{"k": a}, "n": 3}
		if got, old := AppendCanonical(nil, tree, EscapeConfig), oldConfigCanonical(nil, tree); !bytes.Equal(got, old) {
			t.Fatalf("config tree = %q, old %q", got, old)
		}
	})
}

// TestGoldenFingerprintsAgreeUnderBothEscapings reads the resolved
// envelopes the CLI goldens hold (pablo config explain on the demo and the
// presets): every deployment there (and every source list) is written the
// same in either escaping, so the goldens' fingerprints do not depend on
// the choice between them; and EscapeConfig, the one the deployment uses,
// recomputes exactly the printed fingerprint.
func TestGoldenFingerprintsAgreeUnderBothEscapings(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "pablo", "testdata", "golden", "*-config.txt"))
	if len(files) == 0 {
		t.Fatal("no CLI goldens found")
	}
	seen := 0
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if !bytes.HasPrefix(line, []byte(`{"config":`)) {
				continue
			}
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.UseNumber()
			var env map[string]any
			if err := dec.Decode(&env); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			// The input fingerprint hashes the sources' real paths, which
			// the goldens print hidden; the fingerprint covers no path.
			for _, over := range []string{"config", "sources"} {
				doc := map[string]any{"schema_version": env["schema_version"], "contract_revision": env["contract_revision"], over: env[over]}
				config, short := AppendCanonical(nil, doc, EscapeConfig), AppendCanonical(nil, doc, EscapeShort)
				if !bytes.Equal(config, short) {
					t.Errorf("%s: the %s document differs between the escapings", file, over)
				}
				if over != "config" {
					continue
				}
				sum := sha256.Sum256(config)
				if got := "sha256:" + hex.EncodeToString(sum[:]); got != env["fingerprint"] {
					t.Errorf("%s: the fingerprint recomputes to %s, the golden says %v", file, got, env["fingerprint"])
				}
			}
			seen++
		}
		f.Close()
	}
	if seen < 5 {
		t.Fatalf("%d resolved envelopes in the goldens, want the demo's and each preset's", seen)
	}
}

func TestCanonicalSortsKeysAndRejectsRepeats(t *testing.T) {
	t.Parallel()
	got, err := Canonical([]byte(` {"b":1, "a":[true,null,"x"], "":{"y":1,"x":2}} `))
	if want := `{"":{"x":2,"y":1},"a":[true,null,"x"],"b":1}`; err != nil || string(got) != want {
		t.Fatalf("Canonical = %s, %v; want %s", got, err, want)
	}
	var e *Error
	if _, err := Canonical([]byte(`{"b":1,"b":2,"a":1,"a":2}`)); !errors.As(err, &e) || e.Reason != `duplicate object key "a"` {
		t.Fatalf("repeated keys: %v", err)
	}
	for _, in := range []string{`{} {}`, `{"a":`, ``, `[1,]`, `nul`, `]`} {
		if _, err := Canonical([]byte(in)); !errors.As(err, &e) {
			t.Errorf("Canonical(%q) = %v, want an *Error", in, err)
		}
	}
}

// FuzzCanonical: the fast path only accepts what the general path leaves
// unchanged, the output is valid, canonical and means what the input
// meant, and the general path writes what the ledger's old one wrote.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1,2]}`, `"\u00e9"`, `{"a":{"a":{}}}`, `[1e5,-0.0,true]`, `{"a":1,"a":1}`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if isCanonical(in) {
			// The fast path may only accept what the general path would
			// leave unchanged.
			slow, err := canonicalSlow(in)
			if err != nil || string(slow) != string(in) {
				t.Fatalf("fast path accepted %q, general path gives %q (%v)", in, slow, err)
			}
		}
		out, err := Canonical(in)
		old, oldErr := oldLedgerCanonical(in)
		if (err == nil) != (oldErr == nil) || !bytes.Equal(out, old) {
			t.Fatalf("Canonical(%q) = %q, %v; the old ledger wrote %q, %v", in, out, err, old, oldErr)
		}
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Canonical(%q) = %q is not valid JSON", in, out)
		}
		again, err := Canonical(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", in, out, again, err)
		}
		var a, b any
		if json.Unmarshal(in, &a) == nil && json.Unmarshal(out, &b) == nil {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if string(ja) != string(jb) {
				t.Fatalf("meaning changed: %s vs %s", ja, jb)
			}
		}
	})
}

// The writers this package replaced, frozen as they were, as oracles.

// oldShortString is the ledger's and the engine's string encoder as it was
// (this package's AppendString before the move; its byte-at-a-time oracle
// is appendStringOracle).
func oldShortString(out []byte, s string) []byte { return appendStringOracle(out, s) }

// oldLedgerCanonical is the ledger's general path before the move (decode
// every token, sort, re-encode), frozen here as the oracle.
func oldLedgerCanonical(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	root, err := oldParseNode(dec)
	if err != nil {
		return nil, oldCanonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &Error{Reason: "trailing data after the JSON value"}
	}
	return root.oldAppend(make([]byte, 0, len(data))), nil
}

func oldCanonError(err error) error {
	var inv *Error
	if errors.As(err, &inv) {
		return err
	}
	return &Error{Reason: "not valid JSON: " + err.Error()}
}

// oldNode is a parsed value: a scalar's canonical text, or an array's or
// object's members (objects sorted by key once parsed).
type oldNode struct {
	scalar []byte
	object bool
	array  bool
	keys   []string
	kids   []*oldNode
}

func oldParseNode(dec *json.Decoder) (*oldNode, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		n := &oldNode{object: v == '{', array: v == '['}
		if !n.object && !n.array {
			return nil, &Error{Reason: "unexpected " + v.String()}
		}
		for dec.More() {
			if n.object {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := k.(string)
				n.keys = append(n.keys, key)
			}
			kid, err := oldParseNode(dec)
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, kid)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		if n.object {
			return n, n.oldSortKeys()
		}
		return n, nil
	case string:
		return &oldNode{scalar: oldShortString(nil, v)}, nil
	case json.Number:
		return &oldNode{scalar: []byte(v)}, nil
	case bool:
		if v {
			return &oldNode{scalar: []byte("true")}, nil
		}
		return &oldNode{scalar: []byte("false")}, nil
	case nil:
		return &oldNode{scalar: []byte("null")}, nil
	}
	return nil, &Error{Reason: "unexpected token"}
}

func (n *oldNode) oldSortKeys() error {
	idx := make([]int, len(n.keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(n.keys[a], n.keys[b]) })
	keys := make([]string, len(idx))
	kids := make([]*oldNode, len(idx))
	for i, j := range idx {
		keys[i], kids[i] = n.keys[j], n.kids[j]
		if i > 0 && keys[i-1] == keys[i] {
			return &Error{Reason: "duplicate object key " + string(oldShortString(nil, keys[i]))}
		}
	}
	n.keys, n.kids = keys, kids
	return nil
}

func (n *oldNode) oldAppend(out []byte) []byte {
	switch {
	case n.object:
		out = append(out, '{')
		for i, kid := range n.kids {
			if i > 0 {
				out = append(out, ',')
			}
			out = oldShortString(out, n.keys[i])
			out = append(out, ':')
			out = kid.oldAppend(out)
		}
		return append(out, '}')
	case n.array:
		out = append(out, '[')
		for i, kid := range n.kids {
			if i > 0 {
				out = append(out, ',')
			}
			out = kid.oldAppend(out)
		}
		return append(out, ']')
	}
	return append(out, n.scalar...)
}

// oldConfigCanonical is the root's canonicalJSON (pablo-config-json-v1) as
// it was.
func oldConfigCanonical(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case uint64:
		return strconv.AppendUint(b, x, 10)
	case string:
		return oldConfigString(b, x)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = oldConfigCanonical(b, e)
		}
		return append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys) // Go compares strings bytewise: UTF-8 byte order.
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = oldConfigString(b, k)
			b = append(b, ':')
			b = oldConfigCanonical(b, x[k])
		}
		return append(b, '}')
	}
	panic("unsupported type")
}

func oldConfigString(b []byte, s string) []byte {
	const hexdigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexdigits[c>>4], hexdigits[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
