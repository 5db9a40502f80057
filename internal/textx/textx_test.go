package textx

import (
	"fmt"
	"testing"
	"unicode/utf8"
)

func TestCutNeverSplitsACharacter(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 3, "abc"}, {"abc", 2, "ab"}, {"abc", 0, ""}, {"abc", -1, ""},
		{"aé", 2, "a"}, {"aé", 3, "aé"}, {"😀x", 3, ""}, {"😀x", 4, "😀"},
	} {
		if got := Cut(c.s, c.n); got != c.want || !utf8.ValidString(got) {
			t.Errorf("Cut(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
	if got := Shorten("aé", 2); got != "a…" {
		t.Errorf("Shorten: %q", got)
	}
	if got := Shorten("ab", 2); got != "ab" {
		t.Errorf("Shorten of a text within the bound: %q", got)
	}
}

func FuzzCut(f *testing.F) {
	f.Add("aé😀", 3)
	f.Fuzz(func(t *testing.T, s string, n int) {
		got := Cut(s, n)
		if len(got) > max(n, 0) || got != s[:len(got)] || (utf8.ValidString(s) && !utf8.ValidString(got)) {
			t.Fatalf("Cut(%q, %d) = %q", s, n, got)
		}
	})
}

func ExampleShorten() {
	fmt.Println(Shorten("résumé of the run", 8))
	// Output: résumé…
}
