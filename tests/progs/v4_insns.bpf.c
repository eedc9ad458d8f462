// SPDX-License-Identifier: Apache-2.0 OR MIT
// Instructions of ISA v4 (built with -mcpu=v4): sign-extending loads
// (BPF_MEMSX), sign-extending moves (MOVSX), signed division and modulo
// (SDIV/SMOD), unconditional byte swaps (BSWAP) and, in xdp_long_jump,
// a jump too long for a 16-bit offset, which clang emits as gotol.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// .bss: results a test can compare with the kernel's after a run.
__s64 r_s8, r_s16, r_s32;     // bytes 0, 2..3, 4..7, sign-extended loads
__s64 r_sdiv, r_smod;	      // r_s32 / r_s16, r_s32 % r_s8 (when the divisor != 0)
__s64 r_movsx8, r_movsx16, r_movsx32; // bytes 0, 2..3, 0..3 as signed
__u64 r_bswap16, r_bswap32, r_bswap64; // bytes 0..7 swapped as u16/u32/u64

// XDP_ABORTED for packets shorter than 8 bytes, else XDP_PASS.
SEC("xdp")
int xdp_signed_ops(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 raw, hi;
	__s64 a, b, c;

	if (data + 8 > data_end)
		return XDP_ABORTED;
	a = *(__s8 *)data;
	b = *(__s16 *)(data + 2);
	c = *(__s32 *)(data + 4);
	r_s8 = a;
	r_s16 = b;
	r_s32 = c;
	// Different divisors, so that clang emits SMOD instead of deriving
	// the remainder from the quotient.
	if (b != 0)
		r_sdiv = c / b;
	if (a != 0)
		r_smod = c % a;

	raw = *(__u64 *)data;
	barrier_var(raw);
	// Casts of a register value, not a load: MOVSX.  The shifted copy is
	// made opaque so that clang cannot fold shift and cast into shifts.
	hi = raw >> 16;
	barrier_var(hi);
	r_movsx8 = (__s8)raw;
	r_movsx16 = (__s16)hi;
	r_movsx32 = (__s32)raw;
	r_bswap16 = __builtin_bswap16((__u16)raw);
	r_bswap32 = __builtin_bswap32((__u32)raw);
	r_bswap64 = __builtin_bswap64(raw);
	return XDP_PASS;
}

// 2 * 4^7 + 4^3 = 32832 one-instruction statements: more than a 16-bit
// jump offset (at most 32767) spans, so the branch around them needs gotol.
#define REP2(s) s s
#define REP4(s) s s s s
#define BLOCK_32832(s) REP2(REP4(REP4(REP4(REP4(REP4(REP4(REP4(s)))))))) REP4(REP4(REP4(s)))

__u64 r_long;

// Packets whose first byte is 0xff (or that are empty) skip the long block
// (r_long = 0); all others run it (r_long = 32832).  Always XDP_PASS.
SEC("xdp")
int xdp_long_jump(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 acc = 0;

	if (data + 1 <= data_end && *(unsigned char *)data != 0xff) {
		BLOCK_32832(asm volatile("%0 += 1" : "+r"(acc));)
	}
	r_long = acc;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
