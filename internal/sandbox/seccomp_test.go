package sandbox

import (
	"encoding/binary"
	"runtime"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompData lays out struct seccomp_data as the filter reads it on a
// little-endian kernel: every 32-bit word at its offset, a 64-bit argument
// as its low word then its high word. x/net/bpf's VM loads words
// big-endian, so each word is written big-endian: the VM then reads the
// values the kernel would.
func seccompData(arch, nr uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[offNr:], nr)
	binary.BigEndian.PutUint32(b[offArch:], arch)
	for i, a := range args {
		binary.BigEndian.PutUint32(b[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(b[20+8*i:], uint32(a>>32))
	}
	return b
}

// TestSeccompFilterRefusesTerminalInjectionOnly runs the filter of each
// supported architecture in x/net/bpf's virtual machine: ioctl with
// TIOCSTI or TIOCLINUX fails with EPERM under every ABI a process of the
// architecture can enter the kernel with (x86-64, x32 and i386; AArch64
// and AArch32), also with bits set above the request's low 32 (the kernel
// ignores them); any other ioctl, and TIOCSTI's number as an argument of
// another call, is allowed; a call under an architecture the filter does
// not know kills the process.
func TestSeccompFilterRefusesTerminalInjectionOnly(t *testing.T) {
	t.Parallel()
	const refused, allowed, killed = retErrno | uint32(unix.EPERM), uint32(unix.SECCOMP_RET_ALLOW), uint32(unix.SECCOMP_RET_KILL_PROCESS)
	if retRefused != refused || retAllow != allowed || retKill != killed {
		t.Fatal("the filter's return values differ from the kernel's")
	}
	type call struct {
		name     string
		arch, nr uint32
		req      uint64
		want     uint32
	}
	abi := map[string][]call{
		"amd64": {
			{"x86-64 TIOCSTI", unix.AUDIT_ARCH_X86_64, 16, unix.TIOCSTI, refused},
			{"x86-64 TIOCLINUX", unix.AUDIT_ARCH_X86_64, 16, unix.TIOCLINUX, refused},
			{"x86-64 TIOCSTI with high bits", unix.AUDIT_ARCH_X86_64, 16, 0xFFFFFFFF_00000000 | unix.TIOCSTI, refused},
			{"x32 TIOCSTI", unix.AUDIT_ARCH_X86_64, 0x40000000 | 514, unix.TIOCSTI, refused},
			{"i386 TIOCSTI", auditArchI386, 54, unix.TIOCSTI, refused},
			{"i386 TIOCLINUX", auditArchI386, 54, unix.TIOCLINUX, refused},
			{"x86-64 TCGETS", unix.AUDIT_ARCH_X86_64, 16, unix.TCGETS, allowed},
			{"x86-64 TIOCSCTTY", unix.AUDIT_ARCH_X86_64, 16, unix.TIOCSCTTY, allowed},
			{"x86-64 write with TIOCSTI's number", unix.AUDIT_ARCH_X86_64, 1, unix.TIOCSTI, allowed},
			{"i386 read", auditArchI386, 3, unix.TIOCSTI, allowed},
			{"AArch64 under amd64's filter", unix.AUDIT_ARCH_AARCH64, 29, unix.TIOCSTI, killed},
		},
		"arm64": {
			{"AArch64 TIOCSTI", unix.AUDIT_ARCH_AARCH64, 29, unix.TIOCSTI, refused},
			{"AArch64 TIOCLINUX", unix.AUDIT_ARCH_AARCH64, 29, unix.TIOCLINUX, refused},
			{"AArch64 TIOCSTI with high bits", unix.AUDIT_ARCH_AARCH64, 29, 1<<32 | unix.TIOCSTI, refused},
			{"AArch32 TIOCSTI", auditArchARM, 54, unix.TIOCSTI, refused},
			{"AArch64 TCGETS", unix.AUDIT_ARCH_AARCH64, 29, unix.TCGETS, allowed},
			{"AArch64 write with TIOCSTI's number", unix.AUDIT_ARCH_AARCH64, 64, unix.TIOCSTI, allowed},
			{"x86-64 under arm64's filter", unix.AUDIT_ARCH_X86_64, 16, unix.TIOCSTI, killed},
		},
	}
	for goarch, calls := range abi {
		prog, err := terminalProgram(goarch)
		if err != nil {
			t.Fatal(err)
		}
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatalf("%s: %v", goarch, err)
		}
		for _, c := range calls {
			got, err := vm.Run(seccompData(c.arch, c.nr, 3, c.req, 0))
			if err != nil || uint32(got) != c.want {
				t.Errorf("%s %s: got %#x (%v), want %#x", goarch, c.name, uint32(got), err, c.want)
			}
		}
		raw, err := terminalFilter(goarch)
		if err != nil || len(raw) != 8*len(prog) {
			t.Errorf("%s: compiled %d bytes (%v), want 8 per instruction", goarch, len(raw), err)
		}
	}
	if _, err := terminalProgram("riscv64"); err == nil {
		t.Error("an architecture without the filter's numbers got a filter")
	}
}

// TestSeccompFilterUsesThisArchitecturesNumbers: the numbers the filter
// matches on this host are the kernel's own, as x/sys/unix has them.
func TestSeccompFilterUsesThisArchitecturesNumbers(t *testing.T) {
	t.Parallel()
	native := map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}[runtime.GOARCH]
	abis := terminalABIs(runtime.GOARCH)
	if native == 0 || abis == nil {
		t.Skipf("no filter for %s", runtime.GOARCH)
	}
	if abis[0].arch != native || abis[0].ioctls[0] != unix.SYS_IOCTL || tiocsti != unix.TIOCSTI || tioclinux != unix.TIOCLINUX {
		t.Fatalf("native ABI %#x %v, want %#x and ioctl %d", abis[0].arch, abis[0].ioctls, native, unix.SYS_IOCTL)
	}
}
