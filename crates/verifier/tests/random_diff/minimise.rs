//! Delta debugging on instruction lists: delete ranges of instructions
//! (fixing up the jumps that cross them) while the finding keeps its class
//! and cause.

use super::diff::{cause, classify, object, run_ours, run_theirs, Class, Ours, Result};
use super::gen::GenProgram;
use super::oracle::Oracle;
use bpfvet_isa::opcode::{BPF_PSEUDO_CALL, BPF_PSEUDO_FUNC};
use bpfvet_isa::Insn;
use bpfvet_object::Object;
use std::sync::Arc;

fn is_jump_with_off(i: Insn) -> bool {
    let class = i.class();
    (class == 0x05 || class == 0x06) && !matches!(i.code & 0xf0, 0x80 | 0x90)
}

/// `insns` without `[a, b)`; None when the cut splits an LD_IMM64.
pub fn delete_range(insns: &[Insn], a: usize, b: usize) -> Option<Vec<Insn>> {
    if a >= b || b > insns.len() {
        return None;
    }
    let second_half = |k: usize| k > 0 && k < insns.len() && insns[k - 1].is_ld_imm64();
    if second_half(a) || second_half(b) {
        return None;
    }
    let cut = (b - a) as i64;
    let map = |x: i64| -> i64 {
        if x < a as i64 {
            x
        } else if x < b as i64 {
            a as i64
        } else {
            x - cut
        }
    };
    let mut out = Vec::with_capacity(insns.len() - (b - a));
    for (j, &ins) in insns.iter().enumerate() {
        if (a..b).contains(&j) {
            continue;
        }
        let mut ins = ins;
        let second_slot = j > 0 && insns[j - 1].is_ld_imm64();
        if is_jump_with_off(ins) && !second_slot {
            let target = j as i64 + 1 + i64::from(ins.off);
            let off = map(target) - map(j as i64) - 1;
            ins.off = i16::try_from(off).ok()?;
        }
        // bpf-to-bpf calls and callback addresses: relative in imm.
        let pseudo_call = ins.code == 0x85 && ins.src == BPF_PSEUDO_CALL;
        let func_addr = ins.is_ld_imm64() && ins.src == BPF_PSEUDO_FUNC && !second_slot;
        if pseudo_call || func_addr {
            let target = j as i64 + 1 + i64::from(ins.imm);
            ins.imm = i32::try_from(map(target) - map(j as i64) - 1).ok()?;
        }
        out.push(ins);
    }
    Some(out)
}

/// The smallest program found that keeps `class` and `key` (the cause),
/// trying at most `max_tries` candidates (each one kernel load and one
/// bpfvet run).
pub fn minimise(
    kernel: &Oracle,
    p: &GenProgram,
    class: Class,
    key: &str,
    max_tries: usize,
) -> GenProgram {
    let mut best = p.clone();
    let mut tries = 0;
    let mut chunk = (best.insns.len() / 2).max(1);
    loop {
        let mut progress = false;
        let mut a = 0;
        while a < best.insns.len() && tries < max_tries {
            let b = (a + chunk).min(best.insns.len());
            let Some(cand) = delete_range(&best.insns, a, b) else {
                a += 1;
                continue;
            };
            if cand.is_empty() {
                a += chunk;
                continue;
            }
            tries += 1;
            let Some(funcs) = shift_funcs(&best.funcs, a, b) else {
                a += 1;
                continue;
            };
            let cand = GenProgram {
                prog_type: best.prog_type,
                insns: cand,
                sleepable: best.sleepable,
                prog_btf: best.prog_btf,
                funcs,
                ..best.clone()
            };
            if keeps(kernel, &cand, class, key) {
                best = cand;
                progress = true;
            } else {
                a += chunk;
            }
        }
        if tries >= max_tries {
            break;
        }
        if chunk == 1 && !progress {
            break;
        }
        if !progress {
            chunk = (chunk / 2).max(1);
        }
    }
    eprintln!(
        "minimised {class:?} from {} to {} insns in {tries} tries",
        p.insns.len(),
        best.insns.len()
    );
    best
}

/// Whether `p` still shows the finding. bpfvet runs first: when its side
/// already differs, the kernel (which may spend seconds on a candidate
/// that loops) is not asked.
fn keeps(kernel: &Oracle, p: &GenProgram, class: Class, key: &str) -> bool {
    let obj = Arc::new(object(std::slice::from_ref(p)));
    keeps_in(kernel, &obj, 0, class, key)
}

/// [`keeps`] for program `index` of any object.
pub fn keeps_in(kernel: &Oracle, obj: &Arc<Object>, index: usize, class: Class, key: &str) -> bool {
    let ours = run_ours(obj, index);
    let plausible = match (&ours, class) {
        (Ours::Accepted { .. }, Class::Unsound | Class::Insns) => true,
        (Ours::Rejected(e), Class::Overstrict) => e == key,
        (Ours::Refused(e), Class::Overstrict) => key.strip_prefix("refused: ") == Some(e.as_str()),
        (Ours::Rejected(_) | Ours::Refused(_), Class::Message) => true,
        (Ours::Timeout, Class::Timeout) | (Ours::Panic(_), Class::Panic) => true,
        _ => false,
    };
    if !plausible {
        return false;
    }
    let theirs = run_theirs(kernel, obj, index);
    let r = Result {
        class: classify(&ours, &theirs),
        ours,
        theirs,
    };
    r.class == class && cause(&r) == key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delete_range_keeps_jump_targets() {
        // 0: if r1 > 3 goto +2 (-> 3); 1: r0 = 1; 2: r0 = 2; 3: exit
        let insns = vec![
            Insn::new(0x25, 1, 0, 2, 3),
            Insn::new(0xb7, 0, 0, 0, 1),
            Insn::new(0xb7, 0, 0, 0, 2),
            Insn::new(0x95, 0, 0, 0, 0),
        ];
        let out = delete_range(&insns, 1, 2).unwrap();
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].off, 1);
        assert_eq!(out[2].code, 0x95);
        // Backward jump over a deleted instruction.
        let back = vec![
            Insn::new(0x07, 1, 0, 0, 1),
            Insn::new(0xb7, 0, 0, 0, 1),
            Insn::new(0xa5, 1, 0, -3, 9),
            Insn::new(0x95, 0, 0, 0, 0),
        ];
        let out = delete_range(&back, 1, 2).unwrap();
        assert_eq!(out[1].off, -2);
    }

    #[test]
    fn delete_range_keeps_call_and_callback_targets() {
        // 0: call pc+3 (-> 4); 1-2: r2 = func (-> 4); 3: exit; 4: r0 = 0; 5: exit
        let insns = vec![
            Insn::new(0x85, 0, BPF_PSEUDO_CALL, 0, 3),
            Insn::new(0x18, 2, BPF_PSEUDO_FUNC, 0, 2),
            Insn::new(0, 0, 0, 0, 0),
            Insn::new(0x95, 0, 0, 0, 0),
            Insn::new(0xb7, 0, 0, 0, 0),
            Insn::new(0x95, 0, 0, 0, 0),
        ];
        let out = delete_range(&insns, 1, 3).unwrap();
        // 0: call pc+1 (-> 2); 1: exit; 2: r0 = 0
        assert_eq!(out[0].imm, 1);
        assert_eq!(out[2].code, 0xb7);
        let out = delete_range(&insns, 3, 4).unwrap();
        assert_eq!(out[0].imm, 2);
        assert_eq!(out[1].imm, 1);
        assert_eq!(out[3].code, 0xb7);
    }

    #[test]
    fn delete_range_refuses_to_split_ld_imm64() {
        let insns = vec![
            Insn::new(0x18, 1, 0, 0, 1),
            Insn::new(0, 0, 0, 0, 0),
            Insn::new(0x95, 0, 0, 0, 0),
        ];
        assert!(delete_range(&insns, 1, 2).is_none());
        assert_eq!(delete_range(&insns, 0, 2).unwrap().len(), 1);
    }
}

/// Explicit func_info records after deleting insns `a..b`: later starts
/// move down; a deleted start (other than one the next insn takes over)
/// keeps no record, so such a candidate is not tried.
fn shift_funcs(funcs: &[(usize, u32)], a: usize, b: usize) -> Option<Vec<(usize, u32)>> {
    funcs
        .iter()
        .map(|&(at, ty)| match at {
            _ if at < a || (at == a && a == 0) => Some((at, ty)),
            _ if at >= b => Some((at - (b - a), ty)),
            _ => None,
        })
        .collect()
}
