package config

import "testing"

// TestACPMaxSessionsIsBoundedAndLeavesTheFingerprintAlone: the reference
// reserves options.interfaces.acp; ours takes max_sessions in 1..64, and a
// deployment that does not set it keeps the fingerprint it had before the
// key existed.
func TestACPMaxSessionsIsBoundedAndLeavesTheFingerprintAlone(t *testing.T) {
	const head = "schema_version = 1\n"
	plain, err := loadString(t, head)
	if err != nil {
		t.Fatal(err)
	}
	// The fingerprint of the empty deployment without interfaces.acp
	// (pablo config validate on a file holding only the version; since
	// options.shell.sandbox it holds the sandbox's defaults).
	if want := "sha256:5abca05bf4c6362fb9a99875319d49b9f8f4b491d62e8908492d262533f63a8a"; plain.Fingerprint != want {
		t.Errorf("an absent interfaces.acp changed the fingerprint: %s", plain.Fingerprint)
	}
	if plain.Options.Interfaces.ACP.MaxSessions != 0 {
		t.Errorf("absent max_sessions is %d, want 0 (the handler's default)", plain.Options.Interfaces.ACP.MaxSessions)
	}
	for _, n := range []string{"1", "64"} {
		d, err := loadString(t, head+"[options.interfaces.acp]\nmax_sessions = "+n+"\n")
		if err != nil {
			t.Fatalf("max_sessions = %s: %v", n, err)
		}
		if got := d.Options.Interfaces.ACP.MaxSessions; (n == "1" && got != 1) || (n == "64" && got != 64) {
			t.Errorf("max_sessions = %s reads as %d", n, got)
		}
		if d.Fingerprint == plain.Fingerprint {
			t.Errorf("max_sessions = %s does not change the fingerprint", n)
		}
	}
	for _, n := range []string{"0", "65", "4.0", `"4"`} {
		_, err := loadString(t, head+"[options.interfaces.acp]\nmax_sessions = "+n+"\n")
		if err == nil {
			t.Fatalf("max_sessions = %s loaded", n)
		}
		var want Code = CodeInvalidValue
		if n == "4.0" || n == `"4"` {
			if ce, ok := err.(*Error); !ok || ce.Option != "/options/interfaces/acp/max_sessions" {
				t.Errorf("max_sessions = %s: %v", n, err)
			}
			continue
		}
		wantCode(t, err, want, "/options/interfaces/acp/max_sessions")
	}
	_, err = loadString(t, head+"[options.interfaces.acp]\nmax_sesions = 2\n")
	wantCode(t, err, CodeUnknownOption, "/options/interfaces/acp/max_sesions")
}
