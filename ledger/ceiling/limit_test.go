package ceiling

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestLimitText(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"unlimited", "0", "7", "18446744073709551615"} {
		l, err := Parse(s)
		if err != nil || l.String() != s {
			t.Errorf("Parse(%q) = %v, %v", s, l, err)
		}
	}
	for _, s := range []string{"", "-1", "01", "1.0", " 1", "18446744073709551616", "Unlimited"} {
		if _, err := Parse(s); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
}

func TestZeroLimitIsNotSet(t *testing.T) {
	t.Parallel()
	var zero Limit
	if zero.IsSet() || zero == Unlimited() || zero == Max(0) || zero.IsFinite() {
		t.Fatal("the zero Limit must be neither unlimited nor 0, but not set")
	}
	if !Max(0).IsSet() || Max(0).Allows(0, 1) || !Unlimited().IsSet() || !Unlimited().Allows(1<<63, 1<<63) {
		t.Fatal("Max(0) allows nothing, Unlimited bounds nothing, and both are set")
	}
	if zero.Or(Max(3)) != Max(3) || Max(0).Or(Max(3)) != Max(0) || Unlimited().Or(Max(3)) != Unlimited() {
		t.Fatal("Or applies the default to an unset Limit only")
	}
}

func TestLimitJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		l    Limit
		json string
	}{{Limit{}, `null`}, {Max(0), `"0"`}, {Max(1 << 62), `"4611686018427387904"`}, {Unlimited(), `"unlimited"`}} {
		b, err := json.Marshal(c.l)
		if err != nil || string(b) != c.json {
			t.Errorf("%v marshals as %s, %v; want %s", c.l, b, err, c.json)
		}
		var back Limit
		if err := json.Unmarshal(b, &back); err != nil || back != c.l {
			t.Errorf("%s unmarshals to %v, %v", b, back, err)
		}
	}
	// The deployment file's 32-bit counts arrive as JSON integers.
	var l Limit
	if err := json.Unmarshal([]byte(`7`), &l); err != nil || l != Max(7) {
		t.Errorf("7 unmarshals to %v, %v", l, err)
	}
	for _, bad := range []string{`"01"`, `"-1"`, `-1`, `1.5`, `"x"`, `true`} {
		if err := json.Unmarshal([]byte(bad), &l); !errors.Is(err, ErrSyntax) {
			t.Errorf("%s accepted: %v", bad, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"unlimited", "0", "42", "18446744073709551615", "01", "-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := Parse(s)
		if err != nil {
			return
		}
		if l.String() != s {
			t.Fatalf("Parse(%q).String() = %q", s, l.String())
		}
	})
}
