//! Every kfunc in the flag table exists as a function in the host kernel's
//! BTF (a kfunc renamed or removed since the table was written shows here).

mod tables_support;

use bpfvet_verifier::helpers::kfuncs::KFUNCS;
use tables_support::*;

#[test]
fn every_kfunc_is_in_vmlinux_btf() {
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        println!("SKIP: no /sys/kernel/btf/vmlinux");
        return;
    }
    let names: Vec<(u32, &str)> = KFUNCS.iter().map(|(n, _)| (BTF_KIND_FUNC, *n)).collect();
    let ids = vmlinux_btf_ids(&names);
    let missing: Vec<&str> = names
        .iter()
        .zip(&ids)
        .filter(|(_, id)| id.is_none())
        .map(|((_, n), _)| *n)
        .collect();
    assert!(missing.is_empty(), "not in vmlinux BTF: {missing:?}");
}
