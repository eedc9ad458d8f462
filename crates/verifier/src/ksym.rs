//! Typed kernel symbols in `ldimm64` (BPF_PSEUDO_BTF_ID, the kernel's
//! check_pseudo_btf_id): the instruction names a VAR or FUNC of vmlinux BTF;
//! the kernel looks its name up in kallsyms (a kernel without
//! CONFIG_KALLSYMS_ALL lists no variables, so the load fails there) and
//! types the register by what the BTF says the symbol is.

use crate::error::VerifyError;
use crate::regs::{flag, Reg, RegType};
use bpfvet_object::btf::Kind;
use std::collections::HashSet;
use std::sync::OnceLock;

/// Names another kernel's symbol list (kallsyms' format), for verifying
/// for a guest kernel; the host's /proc/kallsyms otherwise.
pub const KALLSYMS_ENV: &str = "BPFVET_KALLSYMS";

/// The target kernel's symbol names (what kallsyms_lookup_name can find),
/// read once per process; None when the list cannot be read.
fn kallsyms() -> Option<&'static HashSet<String>> {
    static NAMES: OnceLock<Option<HashSet<String>>> = OnceLock::new();
    NAMES
        .get_or_init(|| {
            let path = std::env::var_os(KALLSYMS_ENV).unwrap_or_else(|| "/proc/kallsyms".into());
            let text = std::fs::read_to_string(path).ok()?;
            let names: HashSet<String> = text
                .lines()
                .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
                .collect();
            (!names.is_empty()).then_some(names)
        })
        .as_ref()
}

/// Whether kallsyms_lookup_name would find `name` (None: kallsyms is
/// unreadable here).
pub fn kernel_symbol_exists(name: &str) -> Option<bool> {
    kallsyms().map(|s| s.contains(name))
}

/// The section of vmlinux BTF listing per-CPU variables.
const PERCPU_DATASEC: &str = ".data..percpu";

/// The register an `ldimm64` of BTF id `btf_id` (module BTF fd `btf_fd`)
/// loads, or the kernel's error for instruction `idx`.
pub fn pseudo_btf_id(idx: usize, btf_id: u32, btf_fd: i32) -> Result<Reg, VerifyError> {
    let err = |m: String| Err(VerifyError::new(Some(idx), m));
    let unsupported = |m: &str| Err(VerifyError::unsupported(Some(idx), m.to_string()));
    // Like a raw map fd, a raw BTF fd names no object the loader created
    // (the linker leaves module symbols at fd 0), so the kernel's
    // btf_get_by_fd fails.
    if btf_fd != 0 {
        return err("invalid module BTF object FD specified.".to_string());
    }
    let Some(btf) = crate::btf_walk::vmlinux() else {
        return unsupported("ldimm64 of a kernel symbol without the host's vmlinux BTF");
    };
    // Id 0 is `void`: a type, of the wrong kind.
    let t = btf.type_by_id(btf_id).filter(|_| btf_id != 0);
    if t.is_none() && btf_id != 0 {
        return err(format!("ldimm64 insn specifies invalid btf_id {btf_id}."));
    }
    let Some(t) = t.filter(|t| t.kind == Kind::Var || t.kind == Kind::Func) else {
        return err(format!(
            "pseudo btf_id {btf_id} in ldimm64 isn't KIND_VAR or KIND_FUNC"
        ));
    };
    let name = btf.name(t);
    let Some(symbols) = kallsyms() else {
        return unsupported("ldimm64 of a kernel symbol (kallsyms unreadable)");
    };
    if !symbols.contains(name) {
        return err(format!(
            "ldimm64 failed to find the address for kernel symbol '{name}'."
        ));
    }
    let mut mem = Reg::pointer(RegType::Mem);
    mem.flags |= flag::RDONLY;
    if t.kind == Kind::Func {
        return Ok(mem);
    }
    let percpu = btf
        .find_by_name_kind(PERCPU_DATASEC, Kind::Datasec)
        .and_then(|id| btf.type_by_id(id))
        .is_some_and(|ds| btf.datasec_vars(ds).iter().any(|v| v.type_id == btf_id));
    let ty = btf.skip_mods_and_typedefs(t.size_or_type);
    if percpu || ty.is_none_or(|(_, t)| t.kind.is_composite()) {
        return unsupported("ldimm64 of a per-CPU or struct kernel variable");
    }
    match btf.resolve_size(t.size_or_type) {
        Ok(size) => {
            mem.aux = size.min(u32::MAX as u64) as u32;
            Ok(mem)
        }
        Err(_) => unsupported("ldimm64 of a kernel variable of unresolvable size"),
    }
}
