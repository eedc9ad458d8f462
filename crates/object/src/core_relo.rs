//! CO-RE relocations (placeholder until the resolver lands).

use crate::btf::Btf;
use crate::btf_ext::{CoreReloRec, ExtSection};
use crate::error::LResult;
use crate::link::CodeSec;

pub fn apply(
    _local: &Btf,
    _target: Option<&Btf>,
    sec: &ExtSection<CoreReloRec>,
    c: &mut CodeSec,
) -> LResult<()> {
    for r in &sec.records {
        c.core_failures.push((
            (r.insn_off / 8) as usize,
            "CO-RE not implemented yet".into(),
        ));
    }
    Ok(())
}
