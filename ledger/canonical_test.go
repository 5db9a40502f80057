package ledger

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCanonicalSortsKeysAndDropsWhitespace(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{` { "b" : 1 , "a" : [ true , null , "x" ] } `, `{"a":[true,null,"x"],"b":1}`},
		{`"<&>\u00e9\u2028"`, "\"<&>\u00e9\u2028\""},
		{`"\u0001\n\"\\\/"`, `"\u0001\n\"\\/"`},
		{`1.50e+3`, `1.50e+3`},
		{`{"z":{"y":1,"x":2},"":0}`, `{"":0,"z":{"x":2,"y":1}}`},
		{`[]`, `[]`},
		{`{}`, `{}`},
	}
	for _, tc := range cases {
		got, err := Canonical([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("Canonical(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestCanonicalHandlesDeepNesting(t *testing.T) {
	t.Parallel()
	const depth = 5000
	in := strings.Repeat(`{"k":`, depth) + "1" + strings.Repeat("}", depth)
	out, err := Canonical([]byte(in))
	if err != nil || string(out) != in {
		t.Fatalf("deep object: %v", err)
	}
}

func TestCanonicalRejectsAmbiguousInput(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{"a":1,"a":2}`, `{} {}`, `{"a":`, ``, `[1,]`, `nul`} {
		if _, err := Canonical([]byte(in)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Canonical(%q) = %v, want ErrInvalid", in, err)
		}
	}
}

func TestPutResultIsContentAddressedAndIdempotent(t *testing.T) {
	t.Parallel()
	r, store, _ := newRoot(t, Limits{})
	a, err := r.PutResult(bg, map[string]any{"b": 2, "a": "x"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.PutResult(bg, json.RawMessage(`{ "a":"x", "b":2 }`))
	if err != nil || a != b || !a.Valid() {
		t.Fatalf("refs %q %q (%v)", a, b, err)
	}
	if a != RefOf([]byte(`{"a":"x","b":2}`)) {
		t.Fatalf("ref %q is not the sha256 of the canonical JSON", a)
	}
	data, err := r.Result(bg, a)
	if err != nil || string(data) != `{"a":"x","b":2}` {
		t.Fatalf("Result = %s, %v", data, err)
	}
	if err := r.Flush(bg); err != nil {
		t.Fatal(err)
	}
	recs, _ := store.Records(bg, r.ID())
	n := 0
	for _, rec := range recs {
		if rec.Kind == RecordResult {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d result records, want 1", n)
	}
	if _, err := r.Result(bg, RefOf([]byte("nothing"))); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing result: %v", err)
	}
}

func TestLimitsUnmarshalFromRecords(t *testing.T) {
	t.Parallel()
	var lims Limits
	if err := json.Unmarshal([]byte(`{"model_calls":"4","cost_microusd":"unlimited"}`), &lims); err != nil || lims.ModelCalls != Max(4) ||
		lims.CostMicroUSD != Unlimited() || lims.ToolCalls.IsSet() {
		t.Fatalf("%+v %v", lims, err)
	}
}

func TestCountMarshalsAsDecimalStringOrNull(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		count Count
		json  string
	}{{known(0), `"0"`}, {known(1 << 62), `"4611686018427387904"`}, {unknownCount(), `null`}} {
		b, _ := json.Marshal(c.count)
		if string(b) != c.json {
			t.Errorf("%v marshals as %s, want %s", c.count, b, c.json)
		}
		var back Count
		if err := json.Unmarshal(b, &back); err != nil || back != c.count {
			t.Errorf("%s unmarshals to %v, %v", b, back, err)
		}
	}
	for _, bad := range []string{`0`, `"01"`, `"-1"`, `"x"`} {
		var c Count
		if err := json.Unmarshal([]byte(bad), &c); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
