package sandbox

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/net/bpf"
)

// The terminal requests the sandbox's seccomp filter refuses: TIOCSTI
// pushes a byte into a terminal's input queue as if the user had typed it,
// and TIOCLINUX's subcodes paste the console's selection the same way (and
// read the screen). Both are 0x54xx on every architecture the filter
// supports (the asm-generic numbers).
const (
	tiocsti   = 0x5412
	tioclinux = 0x541C
)

// The AUDIT_ARCH_* values the kernel writes into seccomp_data.arch, and the
// system call numbers of ioctl for each ABI a process of that architecture
// can enter the kernel with.
const (
	auditArchX8664   = 0xC000003E // x86-64 and x32
	auditArchI386    = 0x40000003 // int 0x80 on an x86-64 kernel
	auditArchAArch64 = 0xC00000B7
	auditArchARM     = 0x40000028 // AArch32 compat on an arm64 kernel

	x32SyscallBit = 0x40000000
	nrIoctlX8664  = 16
	nrIoctlX32    = x32SyscallBit | 514 // x32's own compat ioctl
	nrIoctlI386   = 54
	nrIoctlARM64  = 29
	nrIoctlARM    = 54
)

// Offsets into struct seccomp_data { int nr; __u32 arch; __u64
// instruction_pointer; __u64 args[6]; }. A 32-bit load reads in the
// kernel's byte order; every architecture here is little-endian, so the
// low half of args[1] is at its start.
const (
	offNr       = 0
	offArch     = 4
	offArg1Low  = 16 + 8*1
	retAllow    = 0x7FFF0000 // SECCOMP_RET_ALLOW
	retErrno    = 0x00050000 // SECCOMP_RET_ERRNO, the errno in the low 16 bits
	retKill     = 0x80000000 // SECCOMP_RET_KILL_PROCESS
	errnoEPERM  = 1
	retRefused  = retErrno | errnoEPERM
	filterLimit = 255 // jumps are 8-bit forward offsets: keep the program short
)

// syscallABI is one way a process of an architecture can enter the kernel:
// the AUDIT_ARCH value the kernel reports for it and the numbers ioctl has
// there.
type syscallABI struct {
	arch   uint32
	ioctls []uint32
}

// terminalABIs lists the system call ABIs of goarch, or nil for an
// architecture the filter has no numbers for.
func terminalABIs(goarch string) []syscallABI {
	switch goarch {
	case "amd64":
		// The 64-bit number with the x32 bit set is not an x32 system call
		// today; refusing it too costs nothing.
		return []syscallABI{
			{auditArchX8664, []uint32{nrIoctlX8664, nrIoctlX32, x32SyscallBit | nrIoctlX8664}},
			{auditArchI386, []uint32{nrIoctlI386}},
		}
	case "arm64":
		return []syscallABI{
			{auditArchAArch64, []uint32{nrIoctlARM64}},
			{auditArchARM, []uint32{nrIoctlARM}},
		}
	}
	return nil
}

// terminalProgram is the classic BPF program of the seccomp filter for
// goarch: ioctl with the request TIOCSTI or TIOCLINUX fails with EPERM,
// every other call is allowed, and a call made under an architecture the
// program does not know kills the process (as libseccomp does by default:
// a filter that cannot read the call must not let it through). The
// request is compared on its low 32 bits: the kernel takes it as an
// unsigned int, so a request with high bits set is the same request.
func terminalProgram(goarch string) ([]bpf.Instruction, error) {
	abis := terminalABIs(goarch)
	if abis == nil {
		return nil, fmt.Errorf("no seccomp filter for GOARCH %s", goarch)
	}
	// Layout: one block per ABI (load the arch; skip the block unless it
	// matches; load nr; each ioctl number jumps to the request check;
	// allow), then kill, then the request check (load the request;
	// TIOCSTI or TIOCLINUX jump to refuse; allow), then refuse.
	blockLen := func(a syscallABI) int { return 4 + len(a.ioctls) }
	blocks := 0
	for _, a := range abis {
		blocks += blockLen(a)
	}
	check := blocks + 1 // index of the request check
	refuse := check + 4 // index of the refusal
	var p []bpf.Instruction
	for _, a := range abis {
		p = append(p,
			bpf.LoadAbsolute{Off: offArch, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: a.arch, SkipFalse: uint8(blockLen(a) - 2)},
			bpf.LoadAbsolute{Off: offNr, Size: 4})
		for _, nr := range a.ioctls {
			p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: uint8(check - len(p) - 1)})
		}
		p = append(p, bpf.RetConstant{Val: retAllow})
	}
	p = append(p,
		bpf.RetConstant{Val: retKill},
		bpf.LoadAbsolute{Off: offArg1Low, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: tiocsti, SkipTrue: uint8(refuse - check - 2)},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: tioclinux, SkipTrue: uint8(refuse - check - 3)},
		bpf.RetConstant{Val: retAllow},
		bpf.RetConstant{Val: retRefused})
	if len(p) != refuse+1 || len(p) > filterLimit {
		return nil, fmt.Errorf("seccomp filter layout is off: %d instructions", len(p))
	}
	return p, nil
}

// terminalFilter is terminalProgram for goarch compiled as bubblewrap's
// --seccomp reads it: an array of struct sock_filter { __u16 code; __u8
// jt; __u8 jf; __u32 k; } in the host's byte order.
func terminalFilter(goarch string) ([]byte, error) {
	p, err := terminalProgram(goarch)
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(p)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 8*len(raw))
	for _, ins := range raw {
		out = binary.NativeEndian.AppendUint16(out, ins.Op)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.NativeEndian.AppendUint32(out, ins.K)
	}
	return out, nil
}
