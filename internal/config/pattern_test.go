package config

import (
	"regexp"
	"strings"
	"testing"
)

func allPatterns() map[string]pattern {
	return map[string]pattern{"name": nameRE, "env": envRE, "u64": u64RE, "task_env": taskEnv, "header": headerRE,
		"ident": identRE, "remote": remoteRE, "cred": credRE, "otel": otelRE, "ratio": ratioRE,
		"memory_ref": memoryRefRE, "memory_kind": memoryKindRE}
}

// patternCases are boundary values for every pattern: each limit, one
// past it, and each forbidden byte.
func patternCases() []string {
	cases := []string{"", "a", "A", "_", "-", ".", "0", "1", "00", "01", "10", "a-b_c", "a b", "é", "\xff", "\x00",
		"PABLO_TASK_", "PABLO_TASK_X", "PABLO_TASK_x-y", "pablo_task_x",
		"0.", "0.5", "1.0", "1.5", "1.00000000000000000", "1.000000000000000000", "0.12345678901234567", "0.123456789012345678", "2", ".5",
		"18446744073709551615", "99999999999999999999", "999999999999999999999", "-1",
		"http://", "https://h", "http://h/", "https://h/p?q", "https://u@h", "https://h#f", "https://h /p", "https://h/p\t", "ftp://h", "https://h\x0b",
		"https://é/ü", "https://h\xff/\xfe",
		"HEAD", "head", "HEADS", "refs/", "refs/heads/main", "refs/a..b", "refs/a b", "*", "**", "*a", ".a", "a.b-c_d",
		strings.Repeat("a", 40), strings.Repeat("f", 40), strings.Repeat("0", 39), strings.Repeat("0", 41), strings.Repeat("A", 40), strings.Repeat("g", 40)}
	for _, n := range []int{31, 32, 33, 63, 64, 65, 127, 128, 129} {
		cases = append(cases, strings.Repeat("a", n), "A"+strings.Repeat("b", n-1), strings.Repeat("9", n))
	}
	return cases
}

func TestPatternsMatchTheirRegularExpressions(t *testing.T) {
	for name, p := range allPatterns() {
		re := regexp.MustCompile(p.String())
		for _, s := range patternCases() {
			if got, want := p.MatchString(s), re.MatchString(s); got != want {
				t.Errorf("%s %q: hand matcher %v, %s %v", name, s, got, re, want)
			}
		}
	}
}

// FuzzPatterns checks every hand matcher against the regular expression it
// stands for.
func FuzzPatterns(f *testing.F) {
	for _, s := range patternCases() {
		f.Add(s)
	}
	res := map[string]*regexp.Regexp{}
	for name, p := range allPatterns() {
		res[name] = regexp.MustCompile(p.String())
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, p := range allPatterns() {
			if got, want := p.MatchString(s), res[name].MatchString(s); got != want {
				t.Fatalf("%s %q: hand matcher %v, regexp %v", name, s, got, want)
			}
		}
	})
}
