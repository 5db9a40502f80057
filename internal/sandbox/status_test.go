package sandbox

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestChildPIDReadsTheFirstRecord: the init's PID is the first record's
// child-pid; anything else (no record, a malformed one, a PID of 0 or 1,
// a later record) gives 0, which makes proc probe the whole group.
func TestChildPIDReadsTheFirstRecord(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{
		`{ "child-pid": 16300, "mnt-namespace": 4026532183, "pid-namespace": 4026532184 }` + "\n" + `{ "exit-code": 0 }`: 16300,
		`{ "child-pid": 2 }`:                        2,
		`{ "child-pid": 1 }`:                        0,
		`{ "child-pid": 0 }`:                        0,
		`{ "child-pid": -5 }`:                       0,
		`{ "child-pid": "7" }`:                      0,
		`{ "exit-code": 0 }` + `{ "child-pid": 9 }`: 0,
		`{ "child-pid": 1630`:                       0,
		``:                                          0,
		`[]`:                                        0,
	} {
		if got := ChildPID([]byte(in)); got != want {
			t.Errorf("ChildPID(%q) = %d, want %d", in, got, want)
		}
	}
}

// FuzzChildPID: ChildPID never panics, says 0 or a PID above 1, and a
// PID only when the input's first JSON value is an object with that
// child-pid.
func FuzzChildPID(f *testing.F) {
	f.Add([]byte(`{ "child-pid": 16300, "mnt-namespace": 4026532183 }` + "\n" + `{ "exit-code": 0 }`))
	f.Add([]byte(`{ "child-pid": 1 }`))
	f.Add([]byte(`{"child-pid":1e3}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := ChildPID(b)
		if got == 0 {
			return
		}
		if got <= 1 {
			t.Fatalf("ChildPID = %d", got)
		}
		var first map[string]json.RawMessage
		if err := json.NewDecoder(bytesReader(b)).Decode(&first); err != nil {
			t.Fatalf("a PID %d from input that is no object: %v", got, err)
		}
		var pid int
		if err := json.Unmarshal(first["child-pid"], &pid); err != nil || pid != got {
			t.Fatalf("ChildPID = %d, the record says %s", got, first["child-pid"])
		}
	})
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
