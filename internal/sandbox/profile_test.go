package sandbox

import (
	"errors"
	"testing"
)

func TestLayersNarrowNeverWiden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p, ceiling, want Profile
	}{
		{Profile{Filesystem: WorkspaceWrite, Network: Allow}, Profile{Filesystem: ReadOnly}, Profile{Mode: Required, Filesystem: ReadOnly, Network: Allow}},
		{Profile{Filesystem: WorkspaceWrite, Network: Allow}, Profile{Network: Deny}, Profile{Mode: Required, Filesystem: WorkspaceWrite, Network: Deny}},
		{Profile{Network: Allow}, Profile{}, Profile{Mode: Required, Filesystem: ReadOnly, Network: Allow}},
		{Profile{Filesystem: NoFS}, Profile{Filesystem: WorkspaceWrite, Network: Allow}, Profile{Mode: Required, Filesystem: NoFS, Network: Deny}},
		{Profile{Mode: Off}, Profile{Mode: Required, Filesystem: NoFS}, Profile{Mode: Required, Filesystem: NoFS, Network: Deny}},
		{Profile{Network: Allow}, Profile{Mode: Off}, Profile{Mode: Required, Filesystem: ReadOnly, Network: Allow}},
		{Profile{Mode: Off}, Profile{Mode: Off}, Profile{Mode: Off}},
	} {
		got := tc.p.Narrow(tc.ceiling)
		if got.String() != tc.want.String() {
			t.Errorf("%s narrowed by %s = %s, want %s", tc.p, tc.ceiling, got, tc.want)
		}
		if !got.Within(tc.ceiling) || !got.Within(tc.p) && tc.p.Normalized().Mode != Off {
			t.Errorf("%s is not within both %s and %s", got, tc.p, tc.ceiling)
		}
	}
	if (Profile{Filesystem: WorkspaceWrite}).Within(Profile{Filesystem: ReadOnly}) {
		t.Error("workspace-write is within read-only")
	}
	if (Profile{Mode: Off}).Within(Profile{Mode: Required}) {
		t.Error("off is within required")
	}
}

func TestAllowlistNarrowsBetweenDenyAndAllow(t *testing.T) {
	t.Parallel()
	list := Profile{Network: Allowlist, Allow: []string{"a.example.com", "b.example.com"}}
	if got := (Profile{Network: Allow}).Narrow(list); got.Network != Allowlist || len(got.Allow) != 2 {
		t.Errorf("allow narrowed by an allowlist = %v, want that allowlist", got)
	}
	if got := list.Narrow(Profile{Network: Deny}); got.Network != Deny || got.Allow != nil {
		t.Errorf("an allowlist narrowed by deny = %v, want deny with no entries", got)
	}
	if got := list.Narrow(Profile{Network: Allow}); got.Network != Allowlist || len(got.Allow) != 2 {
		t.Errorf("an allowlist narrowed by allow = %v, want it unchanged", got)
	}
	got := list.Narrow(Profile{Network: Allowlist, Allow: []string{"b.example.com", "c.example.com"}})
	if got.Network != Allowlist || len(got.Allow) != 1 || got.Allow[0] != "b.example.com" {
		t.Errorf("two allowlists = %v, want the entries both write", got)
	}
	if list.Within(Profile{Network: Allowlist, Allow: []string{"a.example.com"}}) || !list.Within(list) {
		t.Error("an allowlist is within a narrower one, or not within itself")
	}
}

func TestInvalidProfilesAreRefused(t *testing.T) {
	t.Parallel()
	for _, p := range []Profile{
		{Mode: "sometimes"}, {Filesystem: "everything"}, {Network: "sometimes"},
		{Network: Allowlist, Allow: []string{"https://api.example.com"}}, {Network: Allow, Allow: []string{"api.example.com"}},
		{ReadPaths: []string{"relative"}}, {ReadPaths: []string{"/a/../b"}}, {ReadPaths: []string{"/"}},
		{ReadPaths: []string{"/proc/1"}}, {ReadPaths: []string{"/dev"}}, {ReadPaths: []string{"/sys/kernel"}},
	} {
		if err := p.Validate(); !errors.Is(err, ErrInvalidProfile) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidProfile", p, err)
		}
	}
	if err := (Profile{ReadPaths: []string{"/opt/tool"}}).Validate(); err != nil {
		t.Errorf("a clean absolute read path is refused: %v", err)
	}
}

func TestParseStatusNeedsTheExitCodeRecord(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		code int
		ran  bool
	}{
		{"", 0, false},
		{`{ "child-pid": 12 }`, 0, false},
		{"{ \"child-pid\": 12 }\n{ \"exit-code\": 7 }\n", 7, true},
		{"{ \"child-pid\": 12 }\n{ \"exit-code\": 0 }", 0, true},
		{"{ \"child-pid\": 12 }\n{ \"exit-co", 0, false},
		{"garbage { \"exit-code\": 1 }", 0, false},
	} {
		code, ran := ParseStatus([]byte(tc.in))
		if code != tc.code || ran != tc.ran {
			t.Errorf("ParseStatus(%q) = %d, %v; want %d, %v", tc.in, code, ran, tc.code, tc.ran)
		}
	}
}

func FuzzParseStatus(f *testing.F) {
	f.Add([]byte("{ \"child-pid\": 12 }\n{ \"exit-code\": 7 }\n"))
	f.Add([]byte(`{"exit-code": null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		code, ran := ParseStatus(b)
		if !ran && code != 0 {
			t.Fatalf("no exit code record, yet code %d", code)
		}
	})
}
