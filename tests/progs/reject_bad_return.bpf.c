// SPDX-License-Identifier: Apache-2.0 OR MIT
// REJECTED by the verifier: invalid return value. A cgroup_skb ingress program
// must return 0 (drop) or 1 (allow); the verifier checks the range of R0
// at exit.
// Kernel's last log line (Linux 6.18, root):
//   At program exit the register R0 has smin=5 smax=5 should have been in [0, 1]
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("cgroup_skb/ingress")
int cgroup_bad_return(struct __sk_buff *skb)
{
	return skb->len > 100 ? 1 : 5;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
