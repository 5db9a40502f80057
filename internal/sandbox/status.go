package sandbox

import (
	"bytes"
	"encoding/json"
)

// maxStatusBytes bounds what is read of bubblewrap's JSON status.
const maxStatusBytes = 16 << 10

// ParseStatus reads bubblewrap's --json-status-fd output: a sequence of
// JSON objects, the first naming the child's PID, the last the command's
// exit code once it ran. It reports the exit code and whether one was
// written, which is whether the command ran at all: bubblewrap writes none
// when the sandbox could not be set up or the program could not be
// executed. Anything malformed ends the reading; what came before counts.
func ParseStatus(b []byte) (exitCode int, ran bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var rec struct {
			ExitCode *int `json:"exit-code"`
		}
		if err := dec.Decode(&rec); err != nil {
			return exitCode, ran
		}
		if rec.ExitCode != nil {
			exitCode, ran = *rec.ExitCode, true
		}
	}
}

// ChildPID reads the PID of the sandbox's init from the first object of
// bubblewrap's --json-status-fd output, or 0 when it is not there.
func ChildPID(b []byte) int {
	var rec map[string]json.RawMessage // the key exactly, not case-folded
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&rec); err != nil {
		return 0
	}
	var pid int
	if err := json.Unmarshal(rec["child-pid"], &pid); err != nil || pid <= 1 {
		return 0
	}
	return pid
}
