package fstools

import (
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/schema"
)

func TestCallDecodesArgumentsStrictly(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Write: true})
	f.write("a.txt", "hello")
	tests := []struct {
		name string
		id   authority.ID
		args string
	}{
		{"unknown field", authority.FSRead, `{"path":"a.txt","extra":1}`},
		{"wrong type", authority.FSRead, `{"path":1}`},
		{"missing required", authority.FSRead, `{}`},
		{"null for a required string", authority.FSRead, `{"path":null}`},
		{"null for an optional integer", authority.FSRead, `{"path":"a.txt","offset":null}`},
		{"negative integer", authority.FSRead, `{"path":"a.txt","offset":-1}`},
		{"fractional integer", authority.FSRead, `{"path":"a.txt","max_bytes":1.5}`},
		{"repeated member", authority.FSRead, `{"path":"a.txt","path":"b"}`},
		{"not an object", authority.FSRead, `["a.txt"]`},
		{"trailing data", authority.FSRead, `{"path":"a.txt"} {}`},
		{"max_output_bytes below 1024", authority.FSRead, `{"path":"a.txt","max_output_bytes":1023}`},
		{"zero max_bytes", authority.FSRead, `{"path":"a.txt","max_bytes":0}`},
		{"zero timeout_ms", authority.FSRead, `{"path":"a.txt","timeout_ms":0}`},
		{"write without expected_revision", authority.FSWrite, `{"path":"b","text":"x"}`},
		{"edit with null expected_revision", authority.FSEdit, `{"path":"a.txt","expected_revision":null,"old_text":"h","new_text":"j"}`},
		{"search without query", authority.FSSearch, `{"path":"."}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := f.tools.Call(bg(), tt.id, json.RawMessage(tt.args))
			if p != nil {
				t.Fatalf("payload %v", p)
			}
			wantInvalid(t, err)
		})
	}
	p, err := f.tools.Call(bg(), authority.FSWrite, json.RawMessage(`{"path":"b","text":"x","expected_revision":null}`))
	if err != nil || !p.(*WriteResult).Created {
		t.Fatalf("%+v %v", p, err)
	}
}

func TestCallUnknownOrDisabledToolIsUnavailable(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	for _, id := range []authority.ID{authority.FSWrite, authority.FSEdit, authority.ShellRun, "fs.delete"} {
		_, err := f.tools.Call(bg(), id, json.RawMessage(`{}`))
		wantDenied(t, err, authority.RuleToolUnavailable)
	}
	if n := len(f.tools.Specs()); n != 3 {
		t.Fatalf("read-only agent has %d specs", n)
	}
}

func TestCallOutputLimitBoundary(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.write("a.txt", strings.Repeat("x", 2000))
	p, err := f.tools.Call(bg(), authority.FSRead, json.RawMessage(`{"path":"a.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p)
	size := int64(len(b))
	limited := newFixture(t, Options{Limits: Limits{MaxToolOutputBytes: size}})
	limited.write("a.txt", strings.Repeat("x", 2000))
	if _, err := limited.tools.Call(bg(), authority.FSRead, json.RawMessage(`{"path":"a.txt"}`)); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	limited.write("a.txt", strings.Repeat("x", 2001))
	_, err = limited.tools.Call(bg(), authority.FSRead, json.RawMessage(`{"path":"a.txt"}`))
	wantLimit(t, err, ToolOutputBytes)
	// max_output_bytes narrows an unlimited host bound.
	_, err = f.tools.Call(bg(), authority.FSRead, json.RawMessage(`{"path":"a.txt","max_output_bytes":1024}`))
	wantLimit(t, err, ToolOutputBytes)
	// Escaping counts: 600 quotes serialize to 1200 bytes.
	f.write("q.txt", strings.Repeat(`"`, 600))
	_, err = f.tools.Call(bg(), authority.FSRead, json.RawMessage(`{"path":"q.txt","max_output_bytes":1024}`))
	wantLimit(t, err, ToolOutputBytes)
}

func TestCallTimeoutNarrowsTheDeadline(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Write: true})
	// A held gate makes the write wait until its own timeout_ms expires.
	if err := f.ws.lock(bg()); err != nil {
		t.Fatal(err)
	}
	defer f.ws.unlock()
	_, err := f.tools.Call(bg(), authority.FSWrite, json.RawMessage(`{"path":"a","text":"x","expected_revision":null,"timeout_ms":1}`))
	if !errors.Is(err, contextDeadlineExceeded()) {
		t.Fatalf("err = %v", err)
	}
}

// The schema constants compile in the engine's bounded subset
// (internal/schema), are closed, and the strict decoder is at least as strict
// as they are. The decoder is stricter where the subset has no keyword: the
// query's forbidden characters, the revision's hex digits, and byte (not
// codepoint) lengths.
func TestSchemasAreClosedAndDecoderIsAtLeastAsStrict(t *testing.T) {
	t.Parallel()
	rev := strings.Repeat("a", 64)
	cases := map[authority.ID][]struct {
		doc     string
		schema  bool // the schema accepts
		decoder bool // the decoder and argument checks accept
	}{
		authority.FSRead: {
			{`{"path":"a"}`, true, true},
			{`{"path":"a","offset":0,"max_bytes":1,"timeout_ms":5,"max_output_bytes":1024}`, true, true},
			{`{"path":"a","max_bytes":1.0,"offset":2e1}`, true, true},
			{`{"path":"a","max_bytes":1.5}`, false, false},
			{`{"path":"a","x":1}`, false, false},
			{`{}`, false, false},
			{`{"path":""}`, false, false},
			{`{"path":"a","max_bytes":0}`, false, false},
			{`{"path":"a","max_output_bytes":1023}`, false, false},
			{`{"path":"a","offset":9007199254740992}`, false, false},
		},
		authority.FSList: {
			{`{"path":"."}`, true, true},
			{`{"path":".","max_entries":0}`, false, false},
			{`{"path":5}`, false, false},
		},
		authority.FSSearch: {
			{`{"path":".","query":"q"}`, true, true},
			{`{"path":".","query":""}`, false, false},
			{`{"path":".","query":"a\nb"}`, true, false},
			{`{"path":".","query":"a\u0000b"}`, true, false},
		},
		authority.FSWrite: {
			{`{"path":"a","text":"","expected_revision":null}`, true, true},
			{`{"path":"a","text":""}`, false, false},
			{`{"path":"a","text":"","expected_revision":"` + rev + `"}`, true, true},
			{`{"path":"a","text":"","expected_revision":"XYZ"}`, false, false},
			{`{"path":"a","text":"","expected_revision":"` + strings.Repeat("A", 64) + `"}`, true, false},
		},
		authority.FSEdit: {
			{`{"path":"a","expected_revision":"` + rev + `","old_text":"o","new_text":""}`, true, true},
			{`{"path":"a","expected_revision":null,"old_text":"o","new_text":""}`, false, false},
			{`{"path":"a","expected_revision":"` + rev + `","old_text":"","new_text":""}`, false, false},
		},
	}
	for id, docs := range cases {
		spec, ok := SpecOf(id)
		if !ok || spec.Description == "" {
			t.Fatalf("%s: no spec", id)
		}
		var top struct {
			AdditionalProperties *bool    `json:"additionalProperties"`
			Required             []string `json:"required"`
		}
		if err := json.Unmarshal([]byte(spec.Schema), &top); err != nil || top.AdditionalProperties == nil || *top.AdditionalProperties || len(top.Required) == 0 {
			t.Fatalf("%s: schema is not closed: %v", id, err)
		}
		compiled, err := schema.Compile([]byte(spec.Schema), schema.DefaultLimits())
		if err != nil {
			t.Fatalf("%s: compile: %v", id, err)
		}
		for _, c := range docs {
			if got := compiled.Validate([]byte(c.doc)).Valid; got != c.schema {
				t.Errorf("%s %s: schema accepts=%v, want %v", id, c.doc, got, c.schema)
			}
			if got := decodeAndValidate(id, c.doc) == nil; got != c.decoder {
				t.Errorf("%s %s: decoder accepts=%v, want %v", id, c.doc, got, c.decoder)
			}
		}
	}
}

// FuzzDecodeArgs: whatever the strict decoder accepts, the tool's schema
// accepts too, and the decoder never panics.
func FuzzDecodeArgs(f *testing.F) {
	f.Add(uint8(0), `{"path":"a","offset":1.0}`)
	f.Add(uint8(1), `{"path":".","max_entries":2e0}`)
	f.Add(uint8(2), `{"path":".","query":"x","max_matches":1}`)
	f.Add(uint8(3), `{"path":"a","text":"","expected_revision":null}`)
	f.Add(uint8(4), `{"path":"a","expected_revision":"`+strings.Repeat("0", 64)+`","old_text":"o","new_text":""}`)
	ids := []authority.ID{authority.FSRead, authority.FSList, authority.FSSearch, authority.FSWrite, authority.FSEdit}
	compiled := map[authority.ID]*schema.Schema{}
	for _, id := range ids {
		spec, _ := SpecOf(id)
		s, err := schema.Compile([]byte(spec.Schema), schema.DefaultLimits())
		if err != nil {
			f.Fatal(err)
		}
		compiled[id] = s
	}
	f.Fuzz(func(t *testing.T, which uint8, doc string) {
		id := ids[int(which)%len(ids)]
		if decodeAndValidate(id, doc) != nil {
			return
		}
		if r := compiled[id].Validate([]byte(doc)); !r.Valid {
			t.Fatalf("%s: decoder accepted %q, schema rejects: %+v", id, doc, r.Diagnostics)
		}
	})
}

// FuzzJSONInteger compares the integer reader with exact rational
// arithmetic.
func FuzzJSONInteger(f *testing.F) {
	for _, s := range []string{"0", "-0", "5", "5.0", "5e0", "50e-1", "1.5", "1e16", "9007199254740991", "0.000e-99999", "12E+2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) || len(s) == 0 || s != strings.TrimSpace(s) || !(s[0] == '-' || s[0] >= '0' && s[0] <= '9') {
			return
		}
		if _, exp, ok := strings.Cut(strings.ToLower(s), "e"); ok && len(strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")) > 4 {
			return // keep the oracle's work small
		}
		n, ok := jsonInteger(json.RawMessage(s))
		r, rok := new(big.Rat).SetString(s)
		if !rok {
			t.Fatalf("oracle rejects %q", s)
		}
		want := r.IsInt() && r.Num().IsInt64() && r.Num().CmpAbs(big.NewInt(1e16)) < 0
		if ok != want || (ok && n != r.Num().Int64()) {
			t.Fatalf("%q: got %d %v, oracle %v %v", s, n, ok, r, want)
		}
	})
}

// decodeAndValidate runs the argument checks Call and the typed methods make
// before touching the filesystem.
func decodeAndValidate(id authority.ID, doc string) error {
	raw := json.RawMessage(doc)
	pathOK := func(p string) error {
		if _, _, perr := lexicalPath("/ws", p); perr != nil && perr.invalid != "" {
			return errors.New(perr.invalid)
		}
		return nil
	}
	switch id {
	case authority.FSRead:
		var a ReadArgs
		if err := decodeArgs(id, raw, &a); err != nil {
			return err
		}
		if err := pathOK(a.Path); err != nil {
			return err
		}
	case authority.FSList:
		var a ListArgs
		if err := decodeArgs(id, raw, &a); err != nil {
			return err
		}
		if err := pathOK(a.Path); err != nil {
			return err
		}
	case authority.FSSearch:
		var a SearchArgs
		if err := decodeArgs(id, raw, &a); err != nil {
			return err
		}
		if err := pathOK(a.Path); err != nil {
			return err
		}
		return checkQuery(id, a.Query)
	case authority.FSWrite:
		var a WriteArgs
		if err := decodeArgs(id, raw, &a); err != nil {
			return err
		}
		if err := pathOK(a.Path); err != nil {
			return err
		}
		if a.ExpectedRevision != nil && !ValidRevision(*a.ExpectedRevision) {
			return errors.New("revision")
		}
	case authority.FSEdit:
		var a EditArgs
		if err := decodeArgs(id, raw, &a); err != nil {
			return err
		}
		if err := pathOK(a.Path); err != nil {
			return err
		}
		if !ValidRevision(a.ExpectedRevision) || a.OldText == "" {
			return errors.New("edit")
		}
	}
	return nil
}

func TestCallDispatchesEveryTool(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Write: true, Limits: Limits{MaxToolOutputBytes: 1 << 20}})
	f.write("d/a.txt", "one\ntwo needle\n")
	rev := Revision([]byte("one\ntwo needle\n"))
	steps := []struct {
		id   authority.ID
		args string
		want string
	}{
		{authority.FSList, `{"path":"d","max_entries":5,"offset":0}`, `{"path":"d","entries":[{"path":"d/a.txt","type":"file"}],"next_offset":null,"truncated":false}`},
		{authority.FSSearch, `{"path":".","query":"needle","max_matches":3}`, `{"path":".","matches":[{"path":"d/a.txt","line":2,"text":"two needle"}],"truncated":false}`},
		{authority.FSRead, `{"path":"d/a.txt","offset":4,"max_bytes":3}`, `{"path":"d/a.txt","text":"two","offset":4,"next_offset":7,"size_bytes":15,"revision":"` + rev + `","truncated":true}`},
		{authority.FSEdit, `{"path":"d/a.txt","expected_revision":"` + rev + `","old_text":"one","new_text":"1"}`, `{"path":"d/a.txt","revision":"` + Revision([]byte("1\ntwo needle\n")) + `","size_bytes":13,"created":false,"committed":true}`},
	}
	for _, s := range steps {
		p, err := f.tools.Call(bg(), s.id, json.RawMessage(s.args))
		if err != nil {
			t.Fatalf("%s: %v", s.id, err)
		}
		b, _ := json.Marshal(p)
		if string(b) != s.want {
			t.Fatalf("%s:\n got %s\nwant %s", s.id, b, s.want)
		}
	}
}

// The cheap bound used to skip serialization is never below the real size.
func TestOutputUpperBoundCoversEncoding(t *testing.T) {
	t.Parallel()
	nasty := "a\"\\<>&\u2028\u2029\x01\n\t日本 😀"
	payloads := []bounded{
		&ReadResult{Path: nasty, Text: strings.Repeat(nasty, 50), Offset: 1 << 52, NextOffset: ptr(int64(1 << 52)), SizeBytes: 1 << 52, Revision: strings.Repeat("f", 64), Truncated: true},
		&ListResult{Path: nasty, Entries: []Entry{{nasty, TypeDirectory}, {"", TypeOther}}, NextOffset: ptr(int64(1 << 52)), Truncated: true},
		&SearchResult{Path: nasty, Matches: []Match{{nasty, 1 << 52, nasty, true}, {"", 0, "", false}}, Truncated: true},
		&WriteResult{Path: nasty, Revision: strings.Repeat("f", 64), SizeBytes: 1 << 52, Created: true, Committed: true},
	}
	for _, p := range payloads {
		b, _ := json.Marshal(p)
		if int64(len(b)) > boundOf(p) {
			t.Fatalf("%T: bound %d < size %d", p, boundOf(p), len(b))
		}
	}
}

func FuzzOutputUpperBound(f *testing.F) {
	f.Add("a\"<\u2028", "x")
	f.Fuzz(func(t *testing.T, path, text string) {
		if !utf8ValidString(path) || !utf8ValidString(text) {
			return
		}
		for _, p := range []bounded{
			&ReadResult{Path: path, Text: text, Revision: strings.Repeat("0", 64), NextOffset: ptr(int64(maxJSONInt))},
			&SearchResult{Path: path, Matches: []Match{{path, maxJSONInt, text, true}}},
		} {
			b, _ := json.Marshal(p)
			if int64(len(b)) > boundOf(p) {
				t.Fatalf("%T: bound %d < size %d", p, boundOf(p), len(b))
			}
		}
	})
}

// boundOf is the smaller of the two bounds, so a test against it checks
// both.
func boundOf(p bounded) int64 {
	return min(p.jsonBound(newEscapable().upper), p.jsonBound(crudeStringUpper))
}
