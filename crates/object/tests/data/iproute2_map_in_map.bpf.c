// iproute2's legacy map definitions (`struct bpf_elf_map` in section
// "maps"), as tc loads them and Cilium wrote them: a HASH_OF_MAPS whose
// inner_id names the id of its inner map template.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct bpf_elf_map {
	__u32 type;
	__u32 size_key;
	__u32 size_value;
	__u32 max_elem;
	__u32 flags;
	__u32 id;
	__u32 pinning;
	__u32 inner_id;
	__u32 inner_idx;
};

#define NO_PREPOPULATE 0xffffffff

struct bpf_elf_map SEC("maps") slots_template = {
	.type = BPF_MAP_TYPE_ARRAY,
	.size_key = sizeof(__u32),
	.size_value = sizeof(__u64),
	.max_elem = 8,
	.id = 7,
	.inner_idx = NO_PREPOPULATE,
};

struct bpf_elf_map SEC("maps") slots_by_tenant = {
	.type = BPF_MAP_TYPE_HASH_OF_MAPS,
	.size_key = sizeof(__u32),
	.size_value = sizeof(__u32),
	.max_elem = 64,
	.inner_id = 7,
};

// An outer map without a template (inner_id names no map): left without one.
struct bpf_elf_map SEC("maps") orphan_outer = {
	.type = BPF_MAP_TYPE_ARRAY_OF_MAPS,
	.size_key = sizeof(__u32),
	.size_value = sizeof(__u32),
	.max_elem = 4,
	.inner_id = 99,
};

SEC("classifier")
int tc_tenant_slot(struct __sk_buff *skb)
{
	__u32 tenant = skb->mark, slot = skb->priority & 7;
	void *slots = bpf_map_lookup_elem(&slots_by_tenant, &tenant);
	__u64 *v;

	if (!slots)
		return 0;
	v = bpf_map_lookup_elem(slots, &slot);
	return v ? (int)(*v & 1) : 0;
}

char LICENSE[] SEC("license") = "GPL";
