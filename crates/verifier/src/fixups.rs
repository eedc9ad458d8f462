//! Failures of the kernel's rewrite passes after a successful exploration
//! (do_misc_fixups), in instruction order: a kfunc call left with BTF id
//! 0 that dead-code removal did not drop; more direct tail calls (one prog
//! array, one constant key) than the JIT's poke table holds; a tail call
//! passed different prog arrays, one of them made without the Spectre v1
//! bypass (its index mask needs one map).

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
            // blinding (bpf_jit_harden at its default, 0).
            // Only calls a non-speculative path reached: the dead-code
            // passes drop or neutralise the others first.
            let seen = self.aux.get(i).is_some_and(|a| a.seen);
            let jit_pokes = self.caps.bpf_capable && crate::kernel_config::jit_enabled() && seen;
            let site = self.call_sites.get(&i);
            let map_state = site.map(|c| c.tail_call_map).unwrap_or_default();
            // One prog array and one key, none of its maps made without
            // the Spectre v1 bypass: a direct jump the JIT patches.
            let direct_tail_call = !map_state.unpriv
                && !map_state.poisoned
                && site.is_some_and(|c| matches!(c.tail_call, TailCallSite::Direct { .. }));
            // Otherwise an unpriv map gets an index mask, which needs a
            // single map.
            if seen && map_state.unpriv && map_state.poisoned {
                return Err(VerifyError::new(
                    Some(i),
                    "tail_call abusing map_ptr".into(),
                ));
            }
            if jit_pokes && direct_tail_call {
                pokes += 1;
                if pokes > MAX_POKE_DESCRIPTORS {
                    return Err(VerifyError::new(
                        Some(i),
                        "adding tail call poke descriptor failed".into(),
                    ));
                }
            }
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
