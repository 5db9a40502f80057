package proc

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// GroupMembers lists the processes whose process group is pgid, read from
// /proc. It is how tests and diagnostics prove a group gone.
func GroupMembers(pgid int) ([]Member, error) {
	names, err := procPids()
	if err != nil {
		return nil, err
	}
	var out []Member
	for _, name := range names {
		if st, ok := readStat(name); ok && st.pgid == pgid {
			out = append(out, st.member)
		}
	}
	return out, nil
}

// procPids lists the names of /proc's process directories.
func procPids() ([]string, error) {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	pids := names[:0]
	for _, name := range names {
		if name != "" && name[0] >= '0' && name[0] <= '9' {
			pids = append(pids, name)
		}
	}
	return pids, nil
}

// procStat is what /proc/PID/stat says of a process: the member, its
// process group and, when the line has field 22, its start time in clock
// ticks since boot.
type procStat struct {
	member   Member
	pgid     int
	start    uint64
	hasStart bool
}

// readStat parses "pid (comm) state ppid pgrp ... starttime ..." from
// /proc/NAME/stat. The command name may itself contain spaces and
// parentheses, so the fields after it are found from the last ')'.
func readStat(name string) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + name + "/stat")
	if err != nil {
		return procStat{}, false // the process went away meanwhile
	}
	open := bytes.IndexByte(b, '(')
	closing := bytes.LastIndexByte(b, ')')
	if open < 0 || closing < open {
		return procStat{}, false
	}
	fields := bytes.Fields(b[closing+1:])
	if len(fields) < 3 || len(fields[0]) != 1 {
		return procStat{}, false
	}
	pid, err1 := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	ppid, err2 := strconv.Atoi(string(fields[1]))
	group, err3 := strconv.Atoi(string(fields[2]))
	if err1 != nil || err2 != nil || err3 != nil {
		return procStat{}, false
	}
	st := procStat{member: Member{Pid: pid, PPid: ppid, State: fields[0][0], Comm: string(b[open+1 : closing])}, pgid: group}
	if len(fields) >= 20 {
		start, err := strconv.ParseUint(string(fields[19]), 10, 64)
		if err != nil {
			return procStat{}, false
		}
		st.start, st.hasStart = start, true
	}
	return st, true
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

// initAlive reports whether pid, a namespace init the leader of group pgid
// started, is still alive: in a group of its own (it made a session of its
// own, as bubblewrap's --new-session does) or, when it was killed before it
// got there, in the leader's. A PID reused by another process is in
// neither (every member of pgid is dead once it has been killed, so none
// can have forked it), but for the rare process that leads its own group,
// which makes the probe wait for it and report an unproven cleanup: never a
// group proven gone that is not.
func initAlive(pid, pgid int) bool {
	st, ok := readStat(strconv.Itoa(pid))
	return ok && (st.pgid == pgid || st.pgid == pid) && st.member.Alive()
}

// awaitInit waits until pid, a namespace init the leader of group pgid
// started (see initAlive), has exited or the deadline passes, woken by the
// kernel through a pidfd rather than by polling: a sandbox's namespace
// init exits a millisecond or so after bubblewrap (its parent-death signal
// ends it, once bubblewrap has reported the command's exit), once it has
// torn its namespaces down, and a probe on a backoff would oversleep that
// by up to as much again. It reports whether pid is gone; ok is false when
// no pidfd could be opened (a kernel before 5.3), and the caller polls
// instead. It sends no signal: a PID that another process took over is
// never killed.
func awaitInit(pid, pgid int, deadline time.Time) (gone, ok bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err == unix.ESRCH {
		return true, true
	}
	if err != nil {
		return false, false
	}
	defer unix.Close(fd)
	// The pidfd is for whatever process has pid now: if that is not the
	// init, the one we wait for is gone already.
	if !initAlive(pid, pgid) {
		return true, true
	}
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false, true
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(min(left, time.Hour).Milliseconds())+1)
		switch {
		case err == unix.EINTR:
		case err != nil:
			return false, false
		case n > 0:
			return true, true
		}
	}
}

// exited reports whether pid, a child of this process, has exited: it is
// a zombie, or gone. A PID that was reaped and taken over by another
// process reads as alive, which leaves a cleanup unproven, never proven
// wrongly.
func exited(pid int) bool {
	if st, ok := readStat(strconv.Itoa(pid)); ok {
		return !st.member.Alive()
	}
	return unix.Kill(pid, 0) == unix.ESRCH
}

// writersGone reports whether every pipe of files (nil entries skipped)
// has no write end left open anywhere (poll reports POLLHUP): nothing
// holds it open, and its reader, however late it runs, reaches end of
// file after the bytes still buffered.
func writersGone(files []*os.File) bool {
	for _, f := range files {
		if f == nil {
			continue
		}
		rc, err := f.SyscallConn()
		if err != nil {
			return false
		}
		hup := false
		err = rc.Control(func(fd uintptr) {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, 0)
			hup = err == nil && n > 0 && fds[0].Revents&unix.POLLHUP != 0
		})
		if err != nil || !hup {
			return false
		}
	}
	return true
}
