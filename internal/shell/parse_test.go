package shell

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestLiteralGrammar defends the reference's word grammar (§4.3), one
// command string per row, with the words it yields or the reason it is
// rejected.
func TestLiteralGrammar(t *testing.T) {
	t.Parallel()
	type row struct {
		command string
		words   []string
		reason  SyntaxReason
	}
	w := func(s ...string) []string { return s }
	rows := []row{
		// Accepted: words, quoting, escapes, concatenation.
		{"printf hello", w("printf", "hello"), ""},
		{"/usr/bin/printf hello", w("/usr/bin/printf", "hello"), ""},
		{"  printf   a\t\tb  ", w("printf", "a", "b"), ""},
		{"printf ''", w("printf", ""), ""},
		{`printf ""`, w("printf", ""), ""},
		{`printf '' ''`, w("printf", "", ""), ""},
		{`printf 'a b'`, w("printf", "a b"), ""},
		{`printf "a b"`, w("printf", "a b"), ""},
		{`printf a'b'"c"d`, w("printf", "abcd"), ""},
		{`printf 'it'\''s'`, w("printf", "it's"), ""},
		{`printf '$HOME'`, w("printf", "$HOME"), ""},
		{"printf '`id`'", w("printf", "`id`"), ""},
		{`printf '|&;<>()'`, w("printf", "|&;<>()"), ""},
		{`printf "|&;<>()"`, w("printf", "|&;<>()"), ""},
		{`printf '*?[{}~#'`, w("printf", "*?[{}~#"), ""},
		{`printf "*?[{}~#"`, w("printf", "*?[{}~#"), ""},
		{`printf "\$HOME"`, w("printf", "$HOME"), ""},
		{"printf \"\\`id\\`\"", w("printf", "`id`"), ""},
		{`printf "a\"b"`, w("printf", `a"b`), ""},
		{`printf "a\\b"`, w("printf", `a\b`), ""},
		{`printf "a\nb"`, w("printf", `a\nb`), ""},
		{`printf 'a\nb'`, w("printf", `a\nb`), ""},
		{`printf a\ b`, w("printf", "a b"), ""},
		{`printf \|`, w("printf", "|"), ""},
		{`printf \$x`, w("printf", "$x"), ""},
		{`printf \*`, w("printf", "*"), ""},
		{`printf \~`, w("printf", "~"), ""},
		{`printf \#x`, w("printf", "#x"), ""},
		{`printf \'`, w("printf", "'"), ""},
		{`printf a#b`, w("printf", "a#b"), ""},
		{`printf a=b`, w("printf", "a=b"), ""},
		{`printf -- --x=1`, w("printf", "--", "--x=1"), ""},
		{`printf ]`, w("printf", "]"), ""},
		{`printf %s\\n x`, w("printf", `%s\n`, "x"), ""},
		{`printf 'héllo wörld ✓'`, w("printf", "héllo wörld ✓"), ""},
		{`git log --format=%H -n 1`, w("git", "log", "--format=%H", "-n", "1"), ""},
		{`'/usr/bin/printf' x`, w("/usr/bin/printf", "x"), ""},
		{`'A=b' x`, nil, ReasonAssignment},
		{`printf !x`, w("printf", "!x"), ""},
		{`printf @ % ^ + , .`, w("printf", "@", "%", "^", "+", ",", "."), ""},

		// Rejected: empty, control characters, quoting errors.
		{"", nil, ReasonEmpty},
		{"   \t ", nil, ReasonEmpty},
		{"printf a\nb", nil, ReasonControlCharacter},
		{"printf a\rb", nil, ReasonControlCharacter},
		{"printf 'a\nb'", nil, ReasonControlCharacter},
		{"printf \"a\tb\"", nil, ReasonControlCharacter},
		{"printf a\x00b", nil, ReasonControlCharacter},
		{"printf a\x7fb", nil, ReasonControlCharacter},
		{"printf \u0085", nil, ReasonControlCharacter},
		{"printf \\\n", nil, ReasonControlCharacter},
		{"printf \xff", nil, ReasonInvalidUTF8},
		{"printf 'abc", nil, ReasonUnclosedQuote},
		{`printf "abc`, nil, ReasonUnclosedQuote},
		{`printf "abc\"`, nil, ReasonUnclosedQuote},
		{`printf abc\`, nil, ReasonDanglingEscape},

		// Rejected: operators.
		{"printf hello | sh", nil, ReasonOperator},
		{"printf a && rm x", nil, ReasonOperator},
		{"printf a; id", nil, ReasonOperator},
		{"printf a > f", nil, ReasonOperator},
		{"printf a < f", nil, ReasonOperator},
		{"printf a>f", nil, ReasonOperator},
		{"(printf a)", nil, ReasonOperator},
		{"printf a &", nil, ReasonOperator},
		{"printf a|&b", nil, ReasonOperator},

		// Rejected: expansion, globs, braces, tilde, comments, assignment.
		{"/usr/bin/printf $(id)", nil, ReasonExpansion},
		{"printf $HOME", nil, ReasonExpansion},
		{"printf ${HOME}", nil, ReasonExpansion},
		{"printf `id`", nil, ReasonExpansion},
		{`printf "$HOME"`, nil, ReasonExpansion},
		{"printf \"`id`\"", nil, ReasonExpansion},
		{`printf "a$(id)"`, nil, ReasonExpansion},
		{"printf *", nil, ReasonGlob},
		{"printf a?", nil, ReasonGlob},
		{"printf [ab]", nil, ReasonGlob},
		{"printf {a,b}", nil, ReasonBrace},
		{"printf a}", nil, ReasonBrace},
		{"printf ~", nil, ReasonTilde},
		{"printf ~/x", nil, ReasonTilde},
		{"printf a~b", nil, ReasonTilde},
		{"printf # comment", nil, ReasonComment},
		{"#printf", nil, ReasonComment},
		{"A=b printf x", nil, ReasonAssignment},
		{"A=b", nil, ReasonAssignment},
		{"_x1=", nil, ReasonAssignment},
	}
	if len(rows) < 60 {
		t.Fatalf("the grammar table must hold at least 60 commands, has %d", len(rows))
	}
	for _, r := range rows {
		words, err := Parse(r.command)
		if r.reason == "" {
			if err != nil || !reflect.DeepEqual(words, r.words) {
				t.Errorf("Parse(%q) = %q, %v; want %q", r.command, words, err, r.words)
			}
			continue
		}
		var se *SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, ErrSyntax) || se.Reason != r.reason {
			t.Errorf("Parse(%q) = %q, %v; want reason %s", r.command, words, err, r.reason)
			continue
		}
		if r.command != "" && strings.Contains(err.Error(), r.command) {
			t.Errorf("Parse(%q): error echoes the command: %v", r.command, err)
		}
	}
}

func TestGrammarLimitsAtAndPastTheBoundary(t *testing.T) {
	t.Parallel()
	atBytes := "printf " + strings.Repeat("a", MaxCommandBytes-len("printf "))
	if _, err := Parse(atBytes); err != nil {
		t.Errorf("a %d-byte command must parse: %v", len(atBytes), err)
	}
	if _, err := Parse(atBytes + "a"); !isReason(err, ReasonTooLong) {
		t.Errorf("a %d-byte command must be too_long, got %v", len(atBytes)+1, err)
	}
	atWords := "printf" + strings.Repeat(" x", MaxWords-1)
	words, err := Parse(atWords)
	if err != nil || len(words) != MaxWords {
		t.Errorf("%d words must parse: %d, %v", MaxWords, len(words), err)
	}
	if _, err := Parse(atWords + " x"); !isReason(err, ReasonTooManyWords) {
		t.Errorf("%d words must be too_many_words, got %v", MaxWords+1, err)
	}
	if _, err := Parse(atWords + " x "); !isReason(err, ReasonTooManyWords) {
		t.Errorf("%d words and a trailing space must be too_many_words, got %v", MaxWords+1, err)
	}
}

func isReason(err error, r SyntaxReason) bool {
	var se *SyntaxError
	return errors.As(err, &se) && se.Reason == r
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"printf hello", `printf 'a b' "c\"d" e\ f`, "printf $(id)", "A=b x", "printf ''",
		"printf \"\\`\"", "x # y", "a\\", "'unclosed", "printf {a,b} ~ *", "\xff\xfe",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, command string) {
		words, err := Parse(command)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error is not a *SyntaxError: %v", err)
			}
			if se.Offset < 0 || se.Offset > len(command) {
				t.Fatalf("offset %d outside the command of %d bytes", se.Offset, len(command))
			}
			if len(command) > 8 && strings.Contains(err.Error(), command) {
				t.Fatalf("error echoes the command")
			}
			return
		}
		if len(words) == 0 || len(words) > MaxWords || len(command) > MaxCommandBytes {
			t.Fatalf("accepted %d words from %d bytes", len(words), len(command))
		}
		total := 0
		for _, w := range words {
			total += len(w)
			for _, r := range w {
				if r < 0x20 || r == 0x7f {
					t.Fatalf("word holds a control character")
				}
			}
		}
		if total > len(command) {
			t.Fatalf("words hold more bytes (%d) than the command (%d)", total, len(command))
		}
		// Quoting every word back must round-trip to the same words.
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		again, err := Parse(strings.Join(quoted, " "))
		if err != nil && !isReason(err, ReasonAssignment) && !isReason(err, ReasonTooLong) {
			t.Fatalf("re-quoted words do not parse: %v", err)
		}
		if err == nil && !reflect.DeepEqual(again, words) {
			t.Fatalf("re-quoted words differ: %q vs %q", again, words)
		}
	})
}
