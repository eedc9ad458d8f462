//! Failures of the kernel's rewrite passes after a successful exploration
//! (do_misc_fixups), in instruction order: a kfunc call left with BTF id
//! 0 that dead-code removal did not drop; more direct tail calls (one prog
//! array, one constant key) than the JIT's poke table holds.

use crate::error::{VResult, VerifyError};
use crate::explore::{Env, TailCallSite};
use bpfvet_isa::opcode::BPF_PSEUDO_KFUNC_CALL;

/// Direct tail calls one program may hold (the JIT's poke_tab_max).
const MAX_POKE_DESCRIPTORS: usize = 1024;

impl Env<'_> {
    pub fn check_fixups(&self) -> VResult<()> {
        // convert_ctx_accesses adds bpf_qdisc's prologue or epilogue, whose
        // kfunc call the interpreter cannot make.
        if self.struct_ops.is_some_and(|so| so.adds_kfunc_call())
            && !crate::kernel_config::jit_enabled()
        {
            return Err(crate::error::VerifyError::new(
                None,
                "JIT is required for calling kernel function".into(),
            ));
        }
        let mut pokes = 0;
        for (i, ins) in self.insns.iter().enumerate() {
            // A CAP_BPF loader's programs are JITed without constant
            // blinding (bpf_jit_harden at its default, 0) and the maps
            // were made by a loader that may bypass Spectre v1.
            let jit_pokes = self.caps.bpf_capable
                && crate::kernel_config::jit_enabled()
                && self.aux.get(i).is_some_and(|a| a.seen);
            let direct_tail_call = self
                .call_sites
                .get(&i)
                .is_some_and(|c| matches!(c.tail_call, TailCallSite::Direct { .. }));
            if jit_pokes && direct_tail_call {
                pokes += 1;
                if pokes > MAX_POKE_DESCRIPTORS {
                    return Err(VerifyError::new(
                        Some(i),
                        "adding tail call poke descriptor failed".into(),
                    ));
                }
            }
            let seen = self.aux.get(i).is_some_and(|a| a.seen);
            let kfunc = ins.code == 0x85 && ins.src == BPF_PSEUDO_KFUNC_CALL;
            if seen && kfunc && ins.imm == 0 {
                return Err(VerifyError::new(
                    Some(i),
                    "invalid kernel function call not eliminated in verifier pass".into(),
                ));
            }
        }
        Ok(())
    }
}
