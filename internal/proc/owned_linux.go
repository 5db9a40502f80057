package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// BootID returns this boot's /proc/sys/kernel/random/boot_id.
func BootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// Identify returns the identity of the group pid leads.
func Identify(pid int, program string) (Group, error) {
	boot, err := BootID()
	if err != nil {
		return Group{}, err
	}
	st, ok := readStartStat(strconv.Itoa(pid))
	if !ok {
		return Group{}, fmt.Errorf("proc: /proc/%d/stat is not readable", pid)
	}
	return Group{BootID: boot, Pgid: pid, LeaderStart: st.start, Program: program}, nil
}

// readStartStat is readStat for a line that must carry the start time.
func readStartStat(name string) (procStat, bool) {
	st, ok := readStat(name)
	return st, ok && st.hasStart
}

// Survivors lists the live members of g on this host: nothing when the boot
// ID differs; when the leader still runs, everything of the group only if
// the leader's start time is the recorded one; when the leader is gone (its
// parent-death signal killed it), the members of the group that started no
// earlier than the recorded leader. A pgid stays allocated while any process
// is in its group, so such members were started in the recorded group,
// unless the whole group ended and a later leader reused the pgid and died
// too — which the start time bound narrows to a group younger than the
// record; that residue is documented.
func Survivors(g Group) ([]Member, error) {
	boot, err := BootID()
	if err != nil {
		return nil, err
	}
	if g.Pgid <= 1 || boot != g.BootID {
		return nil, nil
	}
	if leader, ok := readStartStat(strconv.Itoa(g.Pgid)); ok && leader.pgid == g.Pgid && leader.start != g.LeaderStart {
		return nil, nil // the pgid now names another group
	}
	names, err := procPids()
	if err != nil {
		return nil, err
	}
	var out []Member
	for _, name := range names {
		st, ok := readStartStat(name)
		if !ok || st.pgid != g.Pgid || st.start < g.LeaderStart || !st.member.Alive() {
			continue
		}
		out = append(out, st.member)
	}
	return out, nil
}

// Reap kills the survivors of g (see [Survivors]) with SIGKILL to the group
// and returns what it killed. Nothing is killed when no member matches.
func Reap(g Group) ([]Member, error) {
	members, err := Survivors(g)
	if err != nil || len(members) == 0 {
		return nil, err
	}
	if err := syscall.Kill(-g.Pgid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
		return nil, err
	}
	return members, nil
}

// groupsIdentifiable says whether a group's identity can be read here.
const groupsIdentifiable = true
