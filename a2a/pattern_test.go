package a2a

import (
	"regexp"
	"strings"
	"testing"
)

// TestHandMatchersMatchTheirRegularExpressions defends the start-up cut:
// the remote-name and usage-claim matchers written by hand accept exactly
// what the regular expressions they replace accept.
func TestHandMatchersMatchTheirRegularExpressions(t *testing.T) {
	matchers := map[string]func(string) bool{remoteNamePattern: remoteName, usageKeyPattern: usageKey, decimalPattern: decimalRE}
	cases := []string{"", "0", "00", "01", "1", "9", "a", "A", "_", "-", ".", "a_b", "a-b", "a.b", "a b", "é", "\xff", "Z9", "-1"}
	for _, n := range []int{38, 39, 40, 63, 64, 65, 127, 128, 129} {
		cases = append(cases, strings.Repeat("a", n), strings.Repeat("9", n), "1"+strings.Repeat("0", n-1), "a"+strings.Repeat("_", n-1))
	}
	for text, match := range matchers {
		re := regexp.MustCompile(text)
		for _, s := range cases {
			if got, want := match(s), re.MatchString(s); got != want {
				t.Errorf("%s %q: hand matcher %v, regexp %v", text, s, got, want)
			}
		}
	}
}
