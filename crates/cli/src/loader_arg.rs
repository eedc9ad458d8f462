//! `--loader auto|libbpf|cilium|iproute2`: whose conventions an object is
//! read with (bpfvet_object::loader); `auto` reads them off the object.

use bpfvet_object::Loader;

pub const HELP: &str = "Read objects as this loader does: libbpf, cilium (cilium/ebpf under \
Cilium's agent) or iproute2 (tc/ip). They differ in the map pin values they know and in the \
type of programs whose section names none (iproute2 and Cilium give them the object's entry \
type). auto: iproute2 for `struct bpf_elf_map` maps, cilium for Cilium's pin flag, else libbpf";

/// The choice: None for `auto`.
#[derive(Clone, Copy, Debug)]
pub struct LoaderArg(pub Option<Loader>);

pub fn parse(text: &str) -> Result<LoaderArg, String> {
    if text == "auto" {
        return Ok(LoaderArg(None));
    }
    Loader::from_name(text)
        .map(|l| LoaderArg(Some(l)))
        .ok_or_else(|| format!("unknown loader '{text}' (auto, libbpf, cilium, iproute2)"))
}

/// The note saying which loader was detected, when it is not libbpf.
pub fn detected_note(obj: &bpfvet_object::Object) -> Option<String> {
    let why = obj.loader_reason.as_deref()?;
    Some(format!("read as {} reads it: {why}", obj.loader.name()))
}
