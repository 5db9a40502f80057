#include "textflag.h"

// func cpuTicks() uint64
TEXT ·cpuTicks(SB), NOSPLIT, $0-8
	RDTSC
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, ret+0(FP)
	RET

// func cpuTicksOrdered() uint64
TEXT ·cpuTicksOrdered(SB), NOSPLIT, $0-8
	LFENCE
	RDTSC
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, ret+0(FP)
	RET

// func haveInvariantTicks() bool
TEXT ·haveInvariantTicks(SB), NOSPLIT, $0-1
	MOVL $0x80000000, AX
	CPUID
	CMPL AX, $0x80000007
	JB   none
	MOVL $0x80000007, AX
	CPUID
	BTL  $8, DX
	SETCS ret+0(FP)
	RET
none:
	MOVB $0, ret+0(FP)
	RET
