package fstools

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLexicalPathRules(t *testing.T) {
	const ws = "/srv/ws"
	tests := []struct {
		name, in, rel string
		invalid       bool
		encoding      bool
		denied        bool
	}{
		{name: "relative file", in: "a/b.txt", rel: "a/b.txt"},
		{name: "dot is the workspace", in: ".", rel: "."},
		{name: "dot components are dropped", in: "./a/./b/", rel: "a/b"},
		{name: "repeated slashes are dropped", in: "a//b", rel: "a/b"},
		{name: "absolute workspace itself", in: "/srv/ws", rel: "."},
		{name: "absolute inside", in: "/srv/ws/a/b", rel: "a/b"},
		{name: "absolute inside with trailing slash", in: "/srv/ws/", rel: "."},
		{name: "absolute outside", in: "/etc/passwd", denied: true},
		{name: "absolute sibling prefix is outside", in: "/srv/ws2/a", denied: true},
		{name: "dotdot rejected not normalized", in: "a/../b", denied: true},
		{name: "leading dotdot", in: "../outside", denied: true},
		{name: "absolute with dotdot", in: "/srv/ws/../ws/a", denied: true},
		{name: "dotdot-like names are ordinary", in: "a..b/..c", rel: "a..b/..c"},
		{name: "empty", in: "", invalid: true},
		{name: "NUL", in: "a\x00b", invalid: true},
		{name: "not UTF-8", in: "a\xffb", encoding: true},
		{name: "4096 bytes accepted", in: strings.Repeat("a", 4096), rel: strings.Repeat("a", 4096)},
		{name: "4097 bytes rejected", in: strings.Repeat("a", 4097), invalid: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel, parts, perr := lexicalPath(ws, tt.in)
			switch {
			case tt.invalid:
				if perr == nil || perr.invalid == "" {
					t.Fatalf("got %q %v, want invalid", rel, perr)
				}
			case tt.encoding:
				if perr == nil || !perr.encoding {
					t.Fatalf("got %q %v, want encoding", rel, perr)
				}
			case tt.denied:
				if perr == nil || perr.denial == "" {
					t.Fatalf("got %q %v, want denial", rel, perr)
				}
			default:
				if perr != nil || rel != tt.rel {
					t.Fatalf("got %q %+v, want %q", rel, perr, tt.rel)
				}
				if rel != "." && strings.Join(parts, "/") != rel {
					t.Fatalf("parts %q do not join to %q", parts, rel)
				}
			}
		})
	}
}

// FuzzPath checks the lexical path checker's invariants: an accepted path is
// relative, UTF-8, free of NUL, "..", "." and empty components, and stable
// under re-checking.
func FuzzPath(f *testing.F) {
	for _, s := range []string{".", "a/b", "/ws/a", "/ws", "../x", "a/../b", "/etc", "a//b/./c/", "\x00", "\xff", "/ws/..", "/wsx/a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		rel, parts, perr := lexicalPath("/ws", in)
		if perr != nil {
			if rel != "" || parts != nil {
				t.Fatalf("rejected %q but returned %q %q", in, rel, parts)
			}
			return
		}
		if in == "" || len(in) > MaxPathBytes || !utf8.ValidString(in) || strings.IndexByte(in, 0) >= 0 {
			t.Fatalf("accepted %q", in)
		}
		if strings.HasPrefix(in, "/") && in != "/ws" && !strings.HasPrefix(in, "/ws/") {
			t.Fatalf("accepted absolute outside path %q", in)
		}
		if rel == "." {
			if len(parts) != 0 {
				t.Fatalf("%q: rel . with parts %q", in, parts)
			}
		} else {
			if strings.HasPrefix(rel, "/") || strings.Join(parts, "/") != rel {
				t.Fatalf("%q: bad rel %q parts %q", in, rel, parts)
			}
			for _, p := range parts {
				if p == "" || p == "." || p == ".." || strings.Contains(p, "/") {
					t.Fatalf("%q: bad component %q", in, p)
				}
			}
		}
		rel2, _, perr2 := lexicalPath("/ws", rel)
		if perr2 != nil || rel2 != rel {
			t.Fatalf("%q: re-check of %q gave %q %v", in, rel, rel2, perr2)
		}
	})
}
