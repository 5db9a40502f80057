package fstools

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/pabloagent/pablo/authority"
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

// The schema constants are valid Draft 2020-12 documents, closed, and agree
// with the strict decoder on what they accept.
func TestSchemasAreClosedAndAgreeWithDecoder(t *testing.T) {
	t.Parallel()
	cases := map[authority.ID][]string{
		authority.FSRead:   {`{"path":"a"}`, `{"path":"a","offset":0,"max_bytes":1,"timeout_ms":5,"max_output_bytes":1024}`, `{"path":"a","x":1}`, `{}`, `{"path":"a","max_bytes":0}`},
		authority.FSList:   {`{"path":"."}`, `{"path":".","max_entries":0}`, `{"path":5}`},
		authority.FSSearch: {`{"path":".","query":"q"}`, `{"path":".","query":""}`, `{"path":".","query":"a\nb"}`},
		authority.FSWrite: {`{"path":"a","text":"","expected_revision":null}`, `{"path":"a","text":""}`,
			`{"path":"a","text":"","expected_revision":"` + strings.Repeat("a", 64) + `"}`, `{"path":"a","text":"","expected_revision":"XYZ"}`},
		authority.FSEdit: {`{"path":"a","expected_revision":"` + strings.Repeat("0", 64) + `","old_text":"o","new_text":""}`,
			`{"path":"a","expected_revision":null,"old_text":"o","new_text":""}`, `{"path":"a","expected_revision":"` + strings.Repeat("0", 64) + `","old_text":"","new_text":""}`},
	}
	for id, docs := range cases {
		spec, ok := SpecOf(id)
		if !ok || spec.Description == "" {
			t.Fatalf("%s: no spec", id)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal([]byte(spec.Schema), &s); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if s.AdditionalProperties == nil || len(s.Required) == 0 {
			t.Fatalf("%s: schema is not closed", id)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: resolve: %v", id, err)
		}
		for _, doc := range docs {
			var inst any
			if err := json.Unmarshal([]byte(doc), &inst); err != nil {
				t.Fatal(err)
			}
			schemaOK := rs.Validate(inst) == nil
			decodeOK := decodeAndValidate(id, doc) == nil
			if schemaOK != decodeOK {
				t.Errorf("%s %s: schema accepts=%v, decoder accepts=%v", id, doc, schemaOK, decodeOK)
			}
		}
	}
}

// decodeAndValidate runs the argument checks Call and the typed methods make
// before touching the filesystem.
func decodeAndValidate(id authority.ID, doc string) error {
	raw := json.RawMessage(doc)
	switch id {
	case authority.FSRead:
		var a ReadArgs
		if err := decodeArgs(id, raw, &a); err != nil {
			return err
		}
	case authority.FSList:
		var a ListArgs
		if err := decodeArgs(id, raw, &a); err != nil {
			return err
		}
	case authority.FSSearch:
		var a SearchArgs
		if err := decodeArgs(id, raw, &a); err != nil {
			return err
		}
		return checkQuery(id, a.Query)
	case authority.FSWrite:
		var a WriteArgs
		if err := decodeArgs(id, raw, &a); err != nil {
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
