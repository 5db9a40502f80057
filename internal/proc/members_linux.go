package proc

import (
	"bytes"
	"os"
	"strconv"
)

// GroupMembers lists the processes whose process group is pgid, read from
// /proc. It is how tests and diagnostics prove a group gone.
func GroupMembers(pgid int) ([]Member, error) {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var out []Member
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		m, group, ok := readStat(name)
		if ok && group == pgid {
			out = append(out, m)
		}
	}
	return out, nil
}

// readStat parses "pid (comm) state ppid pgrp ..." from /proc/NAME/stat.
// The command name may itself contain spaces and parentheses, so the fields
// after it are found from the last ')'.
func readStat(name string) (m Member, pgid int, ok bool) {
	b, err := os.ReadFile("/proc/" + name + "/stat")
	if err != nil {
		return m, 0, false // the process went away meanwhile
	}
	open := bytes.IndexByte(b, '(')
	closing := bytes.LastIndexByte(b, ')')
	if open < 0 || closing < open {
		return m, 0, false
	}
	fields := bytes.Fields(b[closing+1:])
	if len(fields) < 3 || len(fields[0]) != 1 {
		return m, 0, false
	}
	pid, err1 := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	ppid, err2 := strconv.Atoi(string(fields[1]))
	group, err3 := strconv.Atoi(string(fields[2]))
	if err1 != nil || err2 != nil || err3 != nil {
		return m, 0, false
	}
	return Member{Pid: pid, PPid: ppid, State: fields[0][0], Comm: string(b[open+1 : closing])}, group, true
}

// onlyZombies reports whether every member left in the group is a zombie,
// which the probe counts as gone (see the package documentation).
func onlyZombies(pgid int) bool {
	members, err := GroupMembers(pgid)
	if err != nil {
		return false
	}
	for _, m := range members {
		if m.Alive() {
			return false
		}
	}
	return true
}
