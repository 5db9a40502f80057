// Package suggest finds the known name nearest to a misspelt one, for the
// "did you mean" of every message that rejects an unknown name: one helper,
// so the CLI, the configuration and the policy checks suggest alike.
package suggest

import "unicode/utf8"

// MaxNameBytes bounds the names compared: a longer name (or candidate) is
// never suggested, so a hostile input cannot make the distance quadratic in
// an unbounded length.
const MaxNameBytes = 128

// Nearest returns the candidate nearest to name by edit distance
// (insertions, deletions and substitutions of characters), or "" when none
// is near enough: within a third of the name's length, at least 1 and at
// most 3 edits. An exact match is not a suggestion. Ties go to the earliest
// candidate, so callers pass a stable order.
func Nearest(name string, candidates []string) string {
	if name == "" || len(name) > MaxNameBytes {
		return ""
	}
	n := utf8.RuneCountInString(name)
	limit := min(max(n/3, 1), 3)
	best, bestD := "", limit+1
	for _, c := range candidates {
		if c == name || c == "" || len(c) > MaxNameBytes {
			continue
		}
		if d := distance(name, c, bestD); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// DidYouMean returns `; did you mean "X"?` for the candidate nearest to
// name, or "" when none is near enough: the suffix of a message.
func DidYouMean(name string, candidates []string) string {
	if s := Nearest(name, candidates); s != "" {
		return `; did you mean "` + s + `"?`
	}
	return ""
}

// distance is the Levenshtein distance between a and b, or bound when it is
// at least bound.
func distance(a, b string, bound int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d >= bound || -d >= bound {
		return bound
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= bound {
			return bound
		}
		prev, cur = cur, prev
	}
	return min(prev[len(rb)], bound)
}
