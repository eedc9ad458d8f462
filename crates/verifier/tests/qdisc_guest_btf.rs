//! bpf_qdisc's Qdisc_ops programs, verified against the vmlinux BTF of the
//! 6.18 guest (the host's kernel has no Qdisc_ops; batch.sh `KERNEL=6.18`
//! caches that BTF). enqueue's stub names its skb `skb__ref`: the program
//! holds that reference from entry (kernel/bpf/bpf_struct_ops.c
//! prepare_arg_info, verifier.c do_check_common, check_ctx_access,
//! check_struct_ops_btf_id). The expected lines are the kernel's messages
//! for these causes.

use bpfvet_object::btf::Btf;
use bpfvet_object::{Object, StructOpsMember};
use bpfvet_verifier::{verify, Options, Verdict};

/// The guest's BTF as batch.sh caches it.
fn guest_btf() -> Option<std::path::PathBuf> {
    let home = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cache")))?;
    let p = home.join("bpfvet/kernels/6.18/btf/vmlinux");
    p.is_file().then_some(p)
}

/// bpfvet's verdict on `text` as the Qdisc_ops `member`; kfunc calls are
/// written `call NAME` and resolved in `btf`.
fn run(btf: &Btf, member: &str, text: &str) -> Verdict {
    let mut src = String::new();
    for line in text.lines() {
        let line = line.trim();
        match line.strip_prefix("call bpf_") {
            Some(rest) if !rest.contains('#') && btf_kfunc(btf, line).is_some() => {
                let name = &line["call ".len()..];
                src.push_str(&format!(
                    "call {name}#{}\n",
                    btf_kfunc(btf, line).unwrap_or(0)
                ));
            }
            _ => {
                src.push_str(line);
                src.push('\n');
            }
        }
    }
    let insns = bpfvet_isa::asm::assemble_insns(&src).expect("the test program assembles");
    let mut obj = Object::single_program(member, bpfvet_isa::uapi::ProgType::STRUCT_OPS, insns);
    obj.programs[0].struct_ops = StructOpsMember::by_ids(btf, "Qdisc_ops", member);
    assert!(
        obj.programs[0].struct_ops.is_some(),
        "Qdisc_ops.{member} in the guest's BTF"
    );
    obj.maps = vec![bpfvet_object::MapDef::new(
        "progs",
        bpfvet_isa::uapi::MapType::PROG_ARRAY,
        4,
        4,
        4,
    )];
    verify(&obj, 0, &Options::default()).verdict
}

fn btf_kfunc(btf: &Btf, line: &str) -> Option<u32> {
    btf.find_by_name_kind(line.strip_prefix("call ")?, bpfvet_object::btf::Kind::Func)
}

fn rejected_with(v: &Verdict) -> Option<&str> {
    match v {
        Verdict::Rejected { error, .. } => Some(error),
        _ => None,
    }
}

#[test]
fn qdisc_ref_arguments() {
    let Some(path) = guest_btf() else {
        println!("SKIP: no 6.18 guest BTF (batch.sh KERNEL=6.18 caches it)");
        return;
    };
    // Every use of vmlinux BTF in this process reads the guest's (one
    // test in this file, so nothing reads it before).
    std::env::set_var(bpfvet_object::VMLINUX_ENV, &path);
    let btf = Btf::from_bytes(&std::fs::read(&path).expect("guest BTF")).expect("guest BTF parses");
    if btf
        .find_by_name_kind("Qdisc_ops__enqueue", bpfvet_object::btf::Kind::Func)
        .is_none()
    {
        println!("SKIP: the cached guest BTF has no bpf_qdisc");
        return;
    }

    // The skb released once: accepted.
    let freed = "r1 = *(u64 *)(r1 +0)\ncall bpf_kfree_skb\nr0 = 0\nexit";
    assert_eq!(run(&btf, "enqueue", freed), Verdict::Accepted);

    // Never released: the reference taken at entry leaks.
    let leaked = "r0 = 0\nexit";
    assert_eq!(
        rejected_with(&run(&btf, "enqueue", leaked)),
        Some("BPF_EXIT instruction in main prog would lead to reference leak")
    );
    // Returned instead: struct_ops programs may hand R0's reference back,
    // and an int-returning member takes any value from a root loader.
    let returned = "r0 = *(u64 *)(r1 +0)\nexit";
    assert_eq!(run(&btf, "enqueue", returned), Verdict::Accepted);
    // dequeue returns an skb or NULL, nothing else.
    let nonzero = "r0 = 1\nexit";
    assert_eq!(
        rejected_with(&run(&btf, "dequeue", nonzero)),
        Some("At program exit the register R0 has smin=1 smax=1 should have been in [0, 0]")
    );

    // The context slot read again after the release.
    let reread = "r6 = r1\nr1 = *(u64 *)(r6 +0)\ncall bpf_kfree_skb\n\
                  r1 = *(u64 *)(r6 +0)\nr0 = 0\nexit";
    assert_eq!(
        rejected_with(&run(&btf, "enqueue", reread)),
        Some("invalid bpf_context access off=0. Reference may already be released")
    );

    // A tail call anywhere, even after the release.
    let tail = "r6 = r1\nr1 = *(u64 *)(r6 +0)\ncall bpf_kfree_skb\nr1 = r6\n\
                r2 = map_idx[0]\nr3 = 0\ncall bpf_tail_call#12\nr0 = 0\nexit";
    assert_eq!(
        rejected_with(&run(&btf, "enqueue", tail)),
        Some("program with __ref argument cannot tail call")
    );

    // init has no `__ref` argument; bpf_qdisc_skb_drop is enqueue's alone.
    let drop_in_init = "r1 = *(u64 *)(r1 +0)\nr2 = 0\ncall bpf_qdisc_skb_drop\nr0 = 0\nexit";
    assert_eq!(
        rejected_with(&run(&btf, "init", drop_in_init)),
        Some("calling kernel function bpf_qdisc_skb_drop is not allowed")
    );

    // The to_free slot is a trusted bpf_sk_buff_ptr for bpf_qdisc_skb_drop.
    let dropped = "r6 = r1\nr1 = *(u64 *)(r6 +0)\nr2 = *(u64 *)(r6 +16)\n\
                   call bpf_qdisc_skb_drop\nr0 = 1\nexit";
    assert_eq!(run(&btf, "enqueue", dropped), Verdict::Accepted);
}
