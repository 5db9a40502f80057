package ids

// ValidName reports whether s is a name Pablo accepts inside an identifier
// or a file name: 1..max bytes, each one of A-Z a-z 0-9 '_' '.' '-'. MCP
// server and tool names, Skill roots, rule and authority IDs and trace
// session IDs are all checked with it, each with its own bound (and its own
// further rules: a reserved prefix, "." and "..").
func ValidName(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}
