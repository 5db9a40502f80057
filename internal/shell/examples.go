package shell

import (
	"errors"
	"fmt"
)

// ErrExample is the kind of every *ExampleError.
var ErrExample = errors.New("shell: command rule example failed")

// ExampleError reports a rule example that does not behave as declared.
type ExampleError struct {
	RuleID string
	// Want is "match" or "not_match".
	Want string
	// Index is the example's position in its list.
	Index   int
	Example string
	// Reason is why it failed: "not_matched", "matched", or the syntax or
	// resolution reason that stopped a match example.
	Reason string
}

// Error implements error.
func (e *ExampleError) Error() string {
	list := "match_examples"
	if e.Want == "not_match" {
		list = "not_match_examples"
	}
	return fmt.Sprintf("shell: rule %q %s[%d] %q: %s; fix the rule or the example", e.RuleID, list, e.Index, e.Example, e.Reason)
}

// Unwrap makes errors.Is(err, ErrExample) hold.
func (e *ExampleError) Unwrap() error { return ErrExample }

// CheckExamples verifies every rule's examples against that rule alone:
// each match example must parse, resolve on this host and match; each
// not-match example must not match (an example that does not parse or
// resolve cannot match, so it passes). The config loader calls it; a failing
// example is a config error naming the rule.
func CheckExamples(rules CommandRules) error {
	for _, list := range [][]CommandRule{rules.Allow, rules.Deny} {
		for _, rule := range list {
			for i, ex := range rule.MatchExamples {
				if reason := exampleMatches(rule, ex); reason != "" {
					return &ExampleError{RuleID: rule.ID, Want: "match", Index: i, Example: ex, Reason: reason}
				}
			}
			for i, ex := range rule.NotMatchExamples {
				if exampleMatches(rule, ex) == "" {
					return &ExampleError{RuleID: rule.ID, Want: "not_match", Index: i, Example: ex, Reason: "matched"}
				}
			}
		}
	}
	return nil
}

// exampleMatches returns "" when rule matches command, else why not.
func exampleMatches(rule CommandRule, command string) string {
	argv, err := Parse(command)
	if err != nil {
		var se *SyntaxError
		errors.As(err, &se)
		return "syntax " + string(se.Reason)
	}
	exe, err := Resolve(argv[0])
	if err != nil {
		var re *ResolveError
		errors.As(err, &re)
		return "executable " + string(re.Reason)
	}
	if !rule.matches(argv, exe) {
		return "not_matched"
	}
	return ""
}
