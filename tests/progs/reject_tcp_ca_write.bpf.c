// SPDX-License-Identifier: Apache-2.0 OR MIT
// A congestion-control program may write only a few tcp_sock fields;
// rcv_wnd is not one of them. (The algorithm is incomplete: only its
// program is loaded, never the algorithm.)
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("struct_ops")
void BPF_PROG(ca_write_rcv_wnd, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;

	tp->rcv_wnd = 0;
}

SEC(".struct_ops")
struct tcp_congestion_ops bpfvet_ca_bad_write = {
	.init = (void *)ca_write_rcv_wnd,
	.name = "bpfvet_ca_bad",
};

char LICENSE[] SEC("license") = "GPL";
