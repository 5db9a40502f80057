package proc

// Member is one process found in a process group.
type Member struct {
	// Pid and PPid are the process and parent process IDs.
	Pid, PPid int
	// State is the one-letter state from /proc/PID/stat: 'R', 'S', 'D',
	// 'Z' (zombie), 'X' (dead), ...
	State byte
	// Comm is the command name.
	Comm string
}

// Alive reports whether the member can still run code or hold files, that
// is, whether it is neither a zombie nor dead.
func (m Member) Alive() bool { return m.State != 'Z' && m.State != 'X' }
