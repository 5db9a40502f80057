package main

import (
	"context"
	"strings"
)

// shorthand implements `pablo "TASK" [RUN OPTIONS]`, the reference's
// shorthand for `pablo run "TASK"`: a first word that is no command is
// the task (or a run flag before it). A task that is one word close to a
// command's name ("valdate") is refused with the command it resembles,
// so a typo never becomes a paid model call; `pablo run WORD` runs such a
// task.
func shorthand(ctx context.Context, args []string, h *host) error {
	word := args[0]
	if !strings.HasPrefix(word, "-") && !strings.ContainsAny(word, " \t\n") {
		if near := nearestCommand(word); near != "" {
			return usagef("unknown command %q; did you mean %q? (a one-word task runs with pablo run %q)", word, near, word)
		}
	}
	if strings.HasPrefix(word, "-") && !runTakes(word) {
		return usagef("unknown flag %s (see pablo --help)", word)
	}
	return runCommand(ctx, args, h)
}

// runTakes reports whether a flag word is one of run's.
func runTakes(word string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(word, "-"), "=")
	c, _ := lookup("run")
	_, ok := c.specs()[name]
	return ok
}

// nearestCommand is the command or group name within two edits of word,
// one for a name of four letters or fewer ("" when none is).
func nearestCommand(word string) string {
	best, bestD := "", 3
	seen := map[string]bool{}
	for _, c := range commands() {
		name, _, _ := strings.Cut(c.path, " ")
		if seen[name] {
			continue
		}
		seen[name] = true
		limit := 2
		if len(name) <= 4 {
			limit = 1
		}
		if d := editDistance(strings.ToLower(word), name); d <= limit && d < bestD {
			best, bestD = name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
