package config

import "strings"

// pattern is one of the configuration's anchored name patterns, matched by
// hand: compiling the equivalent regular expressions (their counted
// repetitions expand to hundreds of instructions) cost most of the
// process's start-up. String returns the regular expression a message
// quotes; config_pattern_test.go checks each matcher against it.
type pattern struct {
	text  string
	match func(string) bool
}

// MatchString reports whether s matches the whole pattern.
func (p pattern) MatchString(s string) bool { return p.match(s) }

func (p pattern) String() string { return p.text }

// The configuration's patterns.
var (
	nameRE   = pattern{`^[a-z][a-z0-9_-]{0,63}$`, func(s string) bool { return classes(s, 1, 64, isLower, isNameByte) }}
	envRE    = pattern{`^[A-Za-z_][A-Za-z0-9_]{0,127}$`, func(s string) bool { return classes(s, 1, 128, isEnvFirst, isEnvByte) }}
	u64RE    = pattern{`^(0|[1-9][0-9]{0,19})$`, func(s string) bool { return s == "0" || classes(s, 1, 20, isNonZeroDigit, isDigit) }}
	taskEnv  = pattern{`^PABLO_TASK_[A-Za-z0-9_]{1,117}$`, matchTaskEnv} // 12..128 bytes, as the reference's shell.environment
	headerRE = pattern{`^[a-z0-9-]{1,64}$`, func(s string) bool { return classes(s, 1, 64, isHeaderByte, isHeaderByte) }}
	identRE  = pattern{`^[A-Za-z0-9_.-]{1,32}$`, func(s string) bool { return classes(s, 1, 32, isIdentByte, isIdentByte) }}
	remoteRE = pattern{`^[A-Za-z0-9_.-]{1,128}$`, func(s string) bool { return classes(s, 1, 128, isIdentByte, isIdentByte) }}
	toolRE   = remoteRE // MCP tool names share the remote-name alphabet and bound
	credRE   = pattern{`^[A-Za-z0-9_.-]{1,64}$`, func(s string) bool { return classes(s, 1, 64, isIdentByte, isIdentByte) }}
	otelRE   = pattern{`^https?://[^/@?#\s]+(?:/[^?#\s]*)?$`, matchOTelEndpoint}
	ratioRE  = pattern{`^(0(\.[0-9]{1,17})?|1(\.0{1,17})?)$`, matchRatio}
)

// classes matches first then rest... with a length of lo to hi bytes.
func classes(s string, lo, hi int, first, rest func(byte) bool) bool {
	if len(s) < lo || len(s) > hi || !first(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !rest(s[i]) {
			return false
		}
	}
	return true
}

func isLower(c byte) bool        { return 'a' <= c && c <= 'z' }
func isDigit(c byte) bool        { return '0' <= c && c <= '9' }
func isNonZeroDigit(c byte) bool { return '1' <= c && c <= '9' }
func isAlpha(c byte) bool        { return isLower(c) || 'A' <= c && c <= 'Z' }
func isNameByte(c byte) bool     { return isLower(c) || isDigit(c) || c == '_' || c == '-' }
func isEnvFirst(c byte) bool     { return isAlpha(c) || c == '_' }
func isEnvByte(c byte) bool      { return isAlpha(c) || isDigit(c) || c == '_' }
func isHeaderByte(c byte) bool   { return isLower(c) || isDigit(c) || c == '-' }
func isIdentByte(c byte) bool    { return isAlpha(c) || isDigit(c) || c == '_' || c == '.' || c == '-' }

func matchTaskEnv(s string) bool {
	rest, ok := strings.CutPrefix(s, "PABLO_TASK_")
	return ok && classes(rest, 1, 128-len("PABLO_TASK_"), isEnvByte, isEnvByte)
}

// isSpace is the regular expressions' \s: ASCII space, \t, \n, \f, \r.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

func matchOTelEndpoint(s string) bool {
	rest, ok := strings.CutPrefix(s, "https://")
	if !ok {
		if rest, ok = strings.CutPrefix(s, "http://"); !ok {
			return false
		}
	}
	host, path, hasPath := strings.Cut(rest, "/")
	if host == "" || strings.ContainsFunc(host, func(r rune) bool { return r == '@' || r == '?' || r == '#' || r < 0x80 && isSpace(byte(r)) }) {
		return false
	}
	return !hasPath || !strings.ContainsFunc(path, func(r rune) bool { return r == '?' || r == '#' || r < 0x80 && isSpace(byte(r)) })
}

func matchRatio(s string) bool {
	if s == "0" || s == "1" {
		return true
	}
	if len(s) < 3 || len(s) > 19 || s[1] != '.' {
		return false
	}
	switch s[0] {
	case '0':
		return classes(s[2:], 1, 17, isDigit, isDigit)
	case '1':
		return strings.Trim(s[2:], "0") == ""
	}
	return false
}
