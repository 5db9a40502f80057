package suggest

import (
	"strings"
	"testing"
)

func TestNearestSuggestsTheClosestKnownName(t *testing.T) {
	known := []string{"fs.read", "fs.write", "shell.run", "net.fetch"}
	for _, c := range []struct{ in, want string }{
		{"fs.reed", "fs.read"},
		{"shel.run", "shell.run"},
		{"fs.wirte", "fs.write"},
		{"net.fecth", "net.fetch"},
		{"fs.read", ""},       // an exact match is no suggestion
		{"database.drop", ""}, // nothing near enough
		{"", ""},
	} {
		if got := Nearest(c.in, known); got != c.want {
			t.Errorf("Nearest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestNearestIsBoundedForShortAndLongNames(t *testing.T) {
	if got := Nearest("ab", []string{"xy"}); got != "" {
		t.Errorf("two edits on a two-letter name suggested %q", got)
	}
	long := strings.Repeat("a", MaxNameBytes+1)
	if got := Nearest(long, []string{long[:MaxNameBytes]}); got != "" {
		t.Errorf("a name over the bound suggested %q", got)
	}
}

func TestDidYouMeanIsAMessageSuffix(t *testing.T) {
	if got := DidYouMean("fs.reed", []string{"fs.read"}); got != `; did you mean "fs.read"?` {
		t.Errorf("DidYouMean = %q", got)
	}
	if got := DidYouMean("zzz", []string{"fs.read"}); got != "" {
		t.Errorf("DidYouMean with nothing near = %q", got)
	}
}
