// SPDX-License-Identifier: Apache-2.0 OR MIT
// A TCP congestion-control algorithm as a tcp_congestion_ops struct_ops
// map: each program is verified against the member that holds it (its
// arguments, the tcp_sock fields it may write, its helpers and kfuncs).
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

SEC("struct_ops")
void BPF_PROG(ca_init, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;

	// A void member: nothing is returned; snd_cwnd is writable.
	tp->snd_cwnd = 10;
}

SEC("struct_ops")
__u32 BPF_PROG(ca_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = (const struct tcp_sock *)sk;
	__u32 half = tp->snd_cwnd >> 1;

	return half > 2 ? half : 2;
}

SEC("struct_ops")
void BPF_PROG(ca_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(ca_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops bpfvet_ca = {
	.init = (void *)ca_init,
	.ssthresh = (void *)ca_ssthresh,
	.cong_avoid = (void *)ca_cong_avoid,
	.undo_cwnd = (void *)ca_undo_cwnd,
	.name = "bpfvet_ca",
};

char LICENSE[] SEC("license") = "GPL";
