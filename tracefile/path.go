package tracefile

import (
	"fmt"
	"strings"

	"github.com/pabloagent/pablo/internal/ids"
)

// ExpandPath replaces every {session_id} in a trace path template.
// The session ID must be a safe file-name fragment (1..128 bytes of
// A-Z a-z 0-9 _ . -, not "." or ".."); any other brace is refused.
func ExpandPath(template, sessionID string) (string, error) {
	if !strings.Contains(template, "{") && !strings.Contains(template, "}") {
		return template, nil
	}
	if !validSessionID(sessionID) {
		return "", &Error{Path: template, Reason: fmt.Sprintf("session ID %q cannot name a file (want 1..128 bytes of A-Z a-z 0-9 _ . -)", truncateID(sessionID))}
	}
	out := strings.ReplaceAll(template, "{session_id}", sessionID)
	if strings.ContainsAny(out, "{}") {
		return "", &Error{Path: template, Reason: "the only template is the literal {session_id}"}
	}
	return out, nil
}

// validSessionID: a session ID names a trace file, so "." and ".." are
// out beside the shared name check.
func validSessionID(s string) bool {
	return ids.ValidName(s, 128) && s != "." && s != ".."
}

func truncateID(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
