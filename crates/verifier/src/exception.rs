//! BPF exceptions: the exception callback a program names with an
//! `exception_callback:<name>` decl tag, and the call-graph rules the kernel
//! checks with the stack depth (check_max_stack_depth_subprog): bpf_throw
//! may not be reached from a callback, and the exception callback may not
//! be called directly.

use crate::error::{VResult, VerifyError};
use crate::explore::Env;
use bpfvet_isa::opcode::BPF_PSEUDO_KFUNC_CALL;
use bpfvet_isa::Insn;
use bpfvet_object::btf::Kind;
use bpfvet_object::Program;

/// The first instruction of the exception callback `prog` names with an
/// `exception_callback:<name>` decl tag on its main function, or the
/// kernel's error (bpf_find_exception_callback_insn_off).
pub fn exception_callback_insn(
    btf: Option<&bpfvet_object::btf::Btf>,
    prog: &Program,
) -> Result<Option<usize>, VerifyError> {
    let (Some(btf), Some(main)) = (btf, prog.func_info.first()) else {
        return Ok(None);
    };
    let err = |m: String| Err(VerifyError::new(None, m));
    if btf.type_by_id(main.type_id).is_none() {
        return err("invalid btf id for main subprog in func_info".into());
    }
    let mut names = btf.ids().filter_map(|id| {
        let t = btf.type_by_id(id)?;
        (t.kind == Kind::DeclTag
            && t.size_or_type == main.type_id
            && t.decl_tag_component() == Some(-1))
        .then(|| btf.name(t).strip_prefix("exception_callback:"))
        .flatten()
    });
    let Some(name) = names.next() else {
        return Ok(None);
    };
    if names.next().is_some() {
        return err("multiple exception callback tags for main subprog".into());
    }
    let Some(id) = btf.find_by_name_kind(name, Kind::Func) else {
        return err(format!(
            "exception callback '{name}' could not be found in BTF"
        ));
    };
    if btf.type_by_id(id).map(|t| t.linkage()) != Some(bpfvet_object::btf::BTF_FUNC_GLOBAL) {
        return err(format!(
            "exception callback '{name}' must have global linkage"
        ));
    }
    let mut insn = None;
    for f in prog.func_info.iter().filter(|f| f.type_id == id) {
        if f.insn_off == 0 {
            return err("invalid exception callback insn_off in func_info: 0".into());
        }
        insn = Some(f.insn_off as usize);
    }
    match insn {
        Some(i) => Ok(Some(i)),
        None => err("exception callback type id not found in func_info".into()),
    }
}

pub fn is_bpf_throw(ins: &Insn) -> bool {
    ins.src == BPF_PSEUDO_KFUNC_CALL
        && ins.off == 0
        && crate::btf_walk::vmlinux().is_some_and(|b| b.name_of(ins.imm as u32) == "bpf_throw")
}

impl Env<'_> {
    /// Subprograms that run as callbacks (of helpers, timers, or the
    /// exception callback): bpf_throw may not be reached from one.
    fn runs_as_callback(&self, k: usize) -> bool {
        self.is_cb.get(k).copied().unwrap_or(false) || self.exception_cb == Some(k)
    }

    fn runs_async(&self, k: usize) -> bool {
        self.async_cb.get(k).copied().unwrap_or(false) || self.exception_cb == Some(k)
    }

    /// The kernel's walk of the call graph from the program and from each
    /// async callback (highest index first), in instruction order.
    pub fn check_exception_rules(&self) -> VResult<()> {
        let roots: Vec<usize> = (0..self.cfg.subprogs.len())
            .rev()
            .filter(|&k| k == 0 || self.runs_async(k))
            .collect();
        for root in roots {
            self.walk_calls(root, &mut vec![root])?;
        }
        Ok(())
    }

    fn walk_calls(&self, idx: usize, chain: &mut Vec<usize>) -> VResult<()> {
        let Some(sp) = self.cfg.subprogs.get(idx) else {
            return Ok(());
        };
        for i in sp.start..sp.end {
            let ins = self.insns[i];
            if is_bpf_throw(&ins) {
                if chain.iter().any(|&k| self.runs_as_callback(k)) {
                    return Err(VerifyError::new(
                        None,
                        format!(
                            "bpf_throw kfunc (insn {i}) cannot be called from callback subprog {idx}"
                        ),
                    ));
                }
                continue;
            }
            let call = crate::cfg::is_pseudo_call(&ins);
            if !call && !crate::cfg::is_pseudo_func(&ins) {
                continue;
            }
            let target = i as i64 + ins.imm as i64 + 1;
            let Some(sidx) = usize::try_from(target)
                .ok()
                .and_then(|t| self.cfg.subprog_at(t))
            else {
                continue;
            };
            if self.runs_async(sidx) {
                if !call {
                    continue;
                }
                if self.exception_cb == Some(sidx) {
                    return Err(VerifyError::new(
                        None,
                        format!("insn {i} cannot call exception cb directly"),
                    ));
                }
            }
            // Deeper chains are the stack check's error.
            if chain.len() >= crate::state::MAX_CALL_FRAMES {
                continue;
            }
            chain.push(sidx);
            self.walk_calls(sidx, chain)?;
            chain.pop();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use bpfvet_isa::uapi::ProgType;
    use bpfvet_object::btf::{Btf, Kind};
    use bpfvet_object::{FuncInfo, Object};

    /// BTF for `int main(void)`, `static int cb(void)` and
    /// `int exc_cb(int)`, main naming `exc_cb` its exception callback.
    fn btf() -> (Vec<u8>, [u32; 3]) {
        let strings = b"\0int\0main\0cb\0exc_cb\0exception_callback:exc_cb\0";
        let (int, main, cb, exc, tag) = (1u32, 5u32, 10u32, 13u32, 20u32);
        let mut t: Vec<u32> = Vec::new();
        t.extend([int, 1 << 24, 4, (1 << 24) | 32]); // [1] int
        t.extend([0, 13 << 24, 1]); // [2] int (void)
        t.extend([main, (12 << 24) | 1, 2]); // [3] global main
        t.extend([cb, 12 << 24, 2]); // [4] static cb
        t.extend([exc, (12 << 24) | 1, 7]); // [5] global exc_cb
        t.extend([tag, 17 << 24, 3, u32::MAX]); // [6] decl tag on main
        t.extend([0, (13 << 24) | 1, 1, 0, 1]); // [7] int (int)
        let types: Vec<u8> = t.iter().flat_map(|w| w.to_le_bytes()).collect();
        let raw = bpfvet_object::btf::encode(&types, strings);
        (raw, [3, 4, 5])
    }

    /// Verifies `text` whose subprograms are `funcs`: (0 main, 1 cb,
    /// 2 exc_cb; first instruction).
    fn verify(text: &str, funcs: &[(usize, u32)]) -> Option<crate::Verdict> {
        let vmlinux = crate::btf_walk::vmlinux()?;
        let throw = vmlinux.find_by_name_kind("bpf_throw", Kind::Func)?;
        let text = text.replace("THROW", &throw.to_string());
        let insns = bpfvet_isa::asm::assemble_insns(&text).expect("assembles");
        let mut obj = Object::single_program("main", ProgType::SCHED_CLS, insns);
        let (raw, ids) = btf();
        obj.btf = Some(Btf::from_bytes(&raw).expect("BTF"));
        obj.btf_raw = Some(raw);
        let names = ["main", "cb", "exc_cb"];
        let linkage = [1, 0, 1];
        obj.programs[0].func_info = funcs
            .iter()
            .map(|&(k, start)| FuncInfo {
                insn_off: start,
                type_id: ids[k],
                name: names[k].to_string(),
                linkage: linkage[k],
            })
            .collect();
        Some(crate::verify(&obj, 0, &crate::Options::default()).verdict)
    }

    fn error(v: Option<crate::Verdict>) -> Option<String> {
        match v? {
            crate::Verdict::Rejected { error, .. } => Some(error),
            other => Some(format!("{other:?}")),
        }
    }

    #[test]
    fn bpf_throw_in_a_loop_callback_is_rejected() {
        let text = "r1 = 1\nr2 = func[6]\nr3 = 0\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit\n\
                    r1 = 0\ncall bpf_throw#THROW\nr0 = 0\nexit\n\
                    r0 = r1\nexit\n";
        let Some(e) = error(verify(text, &[(0, 0), (1, 8), (2, 12)])) else {
            return; // no host vmlinux BTF
        };
        assert_eq!(
            e,
            "bpf_throw kfunc (insn 9) cannot be called from callback subprog 1"
        );
    }

    #[test]
    fn the_exception_callback_is_verified_with_the_program() {
        // exc_cb's return value is the program's: a tc program may return
        // anything, so only reading r1 (the cookie) is checked here.
        let text = "r0 = 0\nexit\nr0 = r1\nexit\n";
        let Some(v) = verify(text, &[(0, 0), (2, 2)]) else {
            return;
        };
        assert_eq!(v, crate::Verdict::Accepted);
        let text = "r0 = 0\nexit\nr0 = r2\nexit\n";
        let e = error(verify(text, &[(0, 0), (2, 2)])).expect("verified");
        assert_eq!(e, "R2 !read_ok");
    }

    #[test]
    fn a_dead_subprogram_before_the_exception_callback_is_refused() {
        // cb (insn 5) is called on a path the verifier proves dead: the
        // kernel drops it and JITs with exc_cb's stale subprogram index
        // (the host oopses; this program must never go to the kernel).
        let text = "r0 = 0\nif r0 == 0 goto pc+1\ncall pc+2\nr0 = 0\nexit\n\
                    r0 = 0\nexit\nr0 = r1\nexit\n";
        let Some(v) = verify(text, &[(0, 0), (1, 5), (2, 7)]) else {
            return;
        };
        assert!(
            matches!(&v, crate::Verdict::Unsupported { what, .. } if what.contains("exception callback")),
            "{v:?}"
        );
        // With the call explored, the program is accepted.
        let text = "r0 = 0\nif r0 != 0 goto pc+1\ncall pc+2\nr0 = 0\nexit\n\
                    r0 = 0\nexit\nr0 = r1\nexit\n";
        let v = verify(text, &[(0, 0), (1, 5), (2, 7)]).expect("verified");
        assert_eq!(v, crate::Verdict::Accepted);
    }

    #[test]
    fn calling_the_exception_callback_is_rejected() {
        let text = "r1 = 0\ncall pc+2\nr0 = 0\nexit\nr0 = r1\nexit\n";
        let Some(e) = error(verify(text, &[(0, 0), (2, 4)])) else {
            return;
        };
        assert_eq!(e, "insn 1 cannot call exception cb directly");
    }
}
