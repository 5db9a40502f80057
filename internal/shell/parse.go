package shell

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Grammar limits from the reference (§4.3).
const (
	MaxCommandBytes = 65536
	MaxWords        = 257
)

// ErrSyntax is the kind of every *SyntaxError.
var ErrSyntax = errors.New("shell: command is outside the literal grammar")

// SyntaxReason is a stable code for why a command failed the literal grammar.
type SyntaxReason string

// The reasons Parse rejects a command.
const (
	ReasonEmpty            SyntaxReason = "empty"
	ReasonTooLong          SyntaxReason = "too_long"
	ReasonTooManyWords     SyntaxReason = "too_many_words"
	ReasonInvalidUTF8      SyntaxReason = "invalid_utf8"
	ReasonControlCharacter SyntaxReason = "control_character"
	ReasonUnclosedQuote    SyntaxReason = "unclosed_quote"
	ReasonDanglingEscape   SyntaxReason = "dangling_escape"
	ReasonOperator         SyntaxReason = "operator"
	ReasonExpansion        SyntaxReason = "expansion"
	ReasonGlob             SyntaxReason = "glob"
	ReasonBrace            SyntaxReason = "brace"
	ReasonTilde            SyntaxReason = "tilde"
	ReasonComment          SyntaxReason = "comment"
	ReasonAssignment       SyntaxReason = "assignment"
)

// SyntaxError reports a command outside the literal grammar. It carries a
// reason code and a byte offset, never the command text.
type SyntaxError struct {
	Reason SyntaxReason
	// Offset is the byte offset where the problem was found.
	Offset int
}

// Error implements error.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("shell: command rejected by the literal grammar: %s at byte %d; %s", e.Reason, e.Offset, e.Reason.hint())
}

// Unwrap makes errors.Is(err, ErrSyntax) hold.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }

func (r SyntaxReason) hint() string {
	switch r {
	case ReasonEmpty:
		return "give a program to run"
	case ReasonTooLong:
		return fmt.Sprintf("commands are limited to %d bytes", MaxCommandBytes)
	case ReasonTooManyWords:
		return fmt.Sprintf("commands are limited to %d words", MaxWords)
	case ReasonInvalidUTF8:
		return "commands must be valid UTF-8"
	case ReasonControlCharacter:
		return "control characters and newlines are not allowed, even quoted"
	case ReasonUnclosedQuote:
		return "close every quote"
	case ReasonDanglingEscape:
		return "a trailing backslash escapes nothing"
	case ReasonOperator:
		return "pipes, redirections, lists and subshells (|&;<>()) are not supported; quote them to pass them literally"
	case ReasonExpansion:
		return "$ and backtick expansion are not supported; quote with single quotes or escape them"
	case ReasonGlob:
		return "globs (*?[) are not expanded; quote them to pass them literally"
	case ReasonBrace:
		return "braces are not expanded; quote them to pass them literally"
	case ReasonTilde:
		return "~ is not expanded; give the path or quote it"
	case ReasonComment:
		return "# at the start of a word would begin a comment; quote it"
	case ReasonAssignment:
		return "variable assignments before the program are not supported; use the env argument"
	}
	return "see the literal command grammar"
}

// Parse splits a command into words by the literal grammar of the
// reference (§4.3): spaces and tabs delimit words; single quotes keep every
// non-control character; inside double quotes a backslash escapes only ",
// \, $ and backtick; outside quotes a backslash escapes the next character.
// Empty quoted words and concatenated segments are kept. Everything a shell
// would interpret — operators, expansion, globs, braces, tilde, comments,
// assignments as the program — is rejected with a *SyntaxError.
func Parse(command string) ([]string, error) {
	if len(command) > MaxCommandBytes {
		return nil, &SyntaxError{Reason: ReasonTooLong, Offset: MaxCommandBytes}
	}
	var (
		words  []string
		word   []byte
		inWord bool // a word has started, even if empty ('' counts)
	)
	fail := func(r SyntaxReason, at int) ([]string, error) {
		return nil, &SyntaxError{Reason: r, Offset: at}
	}
	endWord := func() bool {
		if inWord {
			words = append(words, string(word))
			word, inWord = word[:0:0], false
		}
		return len(words) <= MaxWords
	}
	for i := 0; i < len(command); {
		r, size := utf8.DecodeRuneInString(command[i:])
		if r == utf8.RuneError && size == 1 {
			return fail(ReasonInvalidUTF8, i)
		}
		switch {
		case r == ' ' || r == '\t':
			if !endWord() {
				return fail(ReasonTooManyWords, i)
			}
			i += size
			continue
		case unicode.IsControl(r):
			return fail(ReasonControlCharacter, i)
		}
		wordStart := !inWord
		inWord = true
		switch r {
		case '\'':
			j := i + 1
			for {
				q, qs, bad, at := quotedRune(command, i, j)
				if bad != "" {
					return fail(bad, at)
				}
				if q == '\'' {
					break
				}
				word = append(word, command[j:j+qs]...)
				j += qs
			}
			i = j + 1
		case '"':
			j := i + 1
			for {
				q, qs, bad, at := quotedRune(command, i, j)
				if bad != "" {
					return fail(bad, at)
				}
				if q == '"' {
					break
				}
				switch q {
				case '$', '`':
					return fail(ReasonExpansion, j)
				case '\\':
					if j+1 >= len(command) {
						return fail(ReasonUnclosedQuote, i)
					}
					switch n := command[j+1]; n {
					case '"', '\\', '$', '`':
						word = append(word, n)
						j += 2
						continue
					}
					// Any other backslash stays literal, as in sh.
				}
				word = append(word, command[j:j+qs]...)
				j += qs
			}
			i = j + 1
		case '\\':
			if i+1 >= len(command) {
				return fail(ReasonDanglingEscape, i)
			}
			n, ns := utf8.DecodeRuneInString(command[i+1:])
			if n == utf8.RuneError && ns == 1 {
				return fail(ReasonInvalidUTF8, i+1)
			}
			if unicode.IsControl(n) {
				return fail(ReasonControlCharacter, i+1)
			}
			word = append(word, command[i+1:i+1+ns]...)
			i += 1 + ns
		case '|', '&', ';', '<', '>', '(', ')':
			return fail(ReasonOperator, i)
		case '$', '`':
			return fail(ReasonExpansion, i)
		case '*', '?', '[':
			return fail(ReasonGlob, i)
		case '{', '}':
			return fail(ReasonBrace, i)
		case '~':
			return fail(ReasonTilde, i)
		case '#':
			if wordStart {
				return fail(ReasonComment, i)
			}
			word = append(word, '#')
			i++
		default:
			word = append(word, command[i:i+size]...)
			i += size
		}
	}
	if !endWord() {
		return fail(ReasonTooManyWords, len(command))
	}
	if len(words) == 0 {
		return fail(ReasonEmpty, 0)
	}
	if isAssignment(words[0]) {
		return fail(ReasonAssignment, 0)
	}
	return words, nil
}

// isAssignment reports whether a word has the form NAME=..., which a shell
// would take as a variable assignment rather than a program.
func isAssignment(w string) bool {
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c == '=':
			return i > 0
		case c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return false
}

// quotedRune decodes the character at j inside the quote opened at open.
// Past the end the quote is unclosed (reported at open); invalid UTF-8 and
// control characters are refused there as everywhere (reported at j).
func quotedRune(command string, open, j int) (q rune, size int, bad SyntaxReason, at int) {
	if j >= len(command) {
		return 0, 0, ReasonUnclosedQuote, open
	}
	q, size = utf8.DecodeRuneInString(command[j:])
	switch {
	case q == utf8.RuneError && size == 1:
		return q, size, ReasonInvalidUTF8, j
	case unicode.IsControl(q):
		return q, size, ReasonControlCharacter, j
	}
	return q, size, "", j
}
