// Loader features not covered by tests/progs: an exception callback named
// by a decl tag (appended after everything the entry program reaches) and a
// "?" section (not autoloaded by libbpf, same program type).
// Rebuild: clang-19 -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu \
//          -c exception_cb.bpf.c -o exception_cb.bpf.o
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

__noinline int add_one(int x)
{
	return x + 1;
}

__noinline int on_exception(__u64 cookie)
{
	return (int)cookie;
}

SEC("tc")
__attribute__((btf_decl_tag("exception_callback:on_exception")))
int with_callback(struct __sk_buff *skb)
{
	return add_one(skb->len);
}

SEC("?tc")
int optional(struct __sk_buff *skb)
{
	return add_one(skb->protocol);
}

char LICENSE[] SEC("license") = "GPL";
