package tracecontext

import (
	"errors"
	"strings"
	"testing"
)

const validParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestParseAcceptsW3C(t *testing.T) {
	sc, err := Parse(validParent, "vendor=opaque,other@tenant=x")
	if err != nil {
		t.Fatal(err)
	}
	if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" || !sc.IsSampled() || !sc.IsRemote() {
		t.Fatalf("got %+v", sc)
	}
	if sc.TraceState().Get("vendor") != "opaque" {
		t.Fatalf("tracestate %q", sc.TraceState())
	}
	// A later version may add fields after a dash.
	if _, err := Parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-extra", ""); err != nil {
		t.Fatalf("future version refused: %v", err)
	}
}

func TestParseRefusesWhatW3CRefuses(t *testing.T) {
	for name, c := range map[string][2]string{
		"empty":               {"", ""},
		"version ff":          {"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ""},
		"uppercase":           {"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", ""},
		"zero trace id":       {"00-00000000000000000000000000000000-00f067aa0ba902b7-01", ""},
		"zero parent id":      {"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", ""},
		"version 00 too long": {validParent + "-x", ""},
		"short":               {validParent[:54], ""},
		"bad separator":       {"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ""},
		"future no dash":      {"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", ""},
		"non-hex flags":       {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g", ""},
		"tracestate invalid":  {validParent, "Not Valid"},
		"traceparent 513":     {validParent + strings.Repeat("a", 513-len(validParent)), ""},
		"tracestate 513":      {validParent, "a=" + strings.Repeat("b", 511)},
	} {
		if _, err := Parse(c[0], c[1]); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	// At the bound, a tracestate is still parsed (and then judged by W3C).
	if _, err := Parse(validParent, "a="+strings.Repeat("b", 254)); err != nil {
		t.Errorf("tracestate within bounds refused: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(validParent, "vendor=x")
	f.Add("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-extra", "")
	f.Fuzz(func(t *testing.T, tp, ts string) {
		sc, err := Parse(tp, ts)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if !sc.IsValid() || !sc.IsRemote() || len(tp) > MaxBytes {
			t.Fatalf("accepted %q as %+v", tp, sc)
		}
		// What is accepted is what the trace-id and parent-id fields say.
		if sc.TraceID().String() != tp[3:35] || sc.SpanID().String() != tp[36:52] {
			t.Fatalf("%q parsed as %s/%s", tp, sc.TraceID(), sc.SpanID())
		}
	})
}
