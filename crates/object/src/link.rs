//! Builds one entry program's final instruction stream the way libbpf does:
//! the entry function first, then each called (or address-taken) function
//! appended on first use, depth first; calls, function addresses, map,
//! global data and extern references relocated; func_info, line_info and
//! CO-RE failures rebased onto the new positions.

use std::collections::HashMap;

use bpfvet_isa::opcode::{
    self as op, BPF_PSEUDO_BTF_ID, BPF_PSEUDO_CALL, BPF_PSEUDO_FUNC, BPF_PSEUDO_KFUNC_CALL,
    BPF_PSEUDO_MAP_IDX, BPF_PSEUDO_MAP_IDX_VALUE,
};
use bpfvet_isa::Insn;

use crate::btf::Btf;
use crate::btf_ext::BtfExt;
use crate::error::{ErrorKind, LResult, Located};
use crate::externs::ExternValue;
use crate::types::{CoreFailure, FuncInfo, LineInfo, Placement};

pub struct Func {
    pub name: String,
    /// First instruction and length, in section instruction indexes.
    pub start: usize,
    pub len: usize,
    pub entry: bool,
    pub global: bool,
}

#[derive(Clone, Debug)]
pub enum Reloc {
    /// bpf-to-bpf call to instruction `insn` of section `sec`.
    Call {
        sec: usize,
        insn: i64,
    },
    /// LD_IMM64 of a function's address (callback).
    SubprogAddr {
        sec: usize,
        insn: i64,
    },
    /// A map by index into Object::maps.
    Map(usize),
    /// An address inside a global data map's value.
    Data {
        map: usize,
        off: i64,
    },
    ExternLd(usize),
    ExternCall(usize),
    /// A relocation the loader cannot apply: only the programs that reach
    /// this instruction are refused, with this reason.
    Bad(String),
}

pub struct CodeSec {
    pub shndx: usize,
    pub name: String,
    /// The section's instructions, with CO-RE relocations applied.
    pub insns: Vec<Insn>,
    /// Functions sorted by start.
    pub funcs: Vec<Func>,
    pub relos: HashMap<usize, Reloc>,
    /// CO-RE relocations that failed, by section instruction index.
    pub core_failures: Vec<(usize, String)>,
}

#[derive(Default)]
pub struct Linked {
    pub insns: Vec<Insn>,
    pub func_info: Vec<FuncInfo>,
    pub line_info: Vec<LineInfo>,
    pub placement: Vec<Placement>,
    pub core_unresolved: Vec<CoreFailure>,
}

fn rel_err(section: &str, msg: String) -> Located {
    Located {
        section: Some(section.to_owned()),
        kind: ErrorKind::Relocation(msg),
    }
}

/// libbpf's marker for a call to an unresolved weak kfunc.
const POISON_CALL_KFUNC_BASE: i32 = 2002000000;

struct Frame {
    sec: usize,
    func: usize,
    base: usize,
    next: usize,
}

/// What every program of an object is linked from.
pub struct Inputs<'a> {
    pub code: &'a [CodeSec],
    pub btf: Option<&'a Btf>,
    pub ext: Option<&'a BtfExt>,
    pub externs: &'a [ExternValue],
    pub kconfig_map: Option<usize>,
}

/// Links the entry function `func` of code section `sec`; `exception_cb`
/// is the (section, function) of its exception callback, if it names one.
pub fn link(
    inp: &Inputs,
    sec: usize,
    func: usize,
    exception_cb: Option<(usize, usize)>,
) -> LResult<Linked> {
    let (code, btf, ext, externs, kconfig_map) =
        (inp.code, inp.btf, inp.ext, inp.externs, inp.kconfig_map);
    let mut out = Linked {
        insns: Vec::new(),
        func_info: Vec::new(),
        line_info: Vec::new(),
        placement: Vec::new(),
        core_unresolved: Vec::new(),
    };
    let mut placed: HashMap<(usize, usize), usize> = HashMap::new();
    let mut stack = vec![place(code, sec, func, &mut out, &mut placed, btf, ext)?];
    // The exception callback is appended after everything the entry
    // program reaches, as libbpf does.
    let mut pending_cb = exception_cb;
    loop {
        while let Some(top) = stack.last_mut() {
            let c = &code[top.sec];
            let f = &c.funcs[top.func];
            if top.next >= f.len {
                stack.pop();
                continue;
            }
            let i = top.next;
            let at = top.base + i;
            let sec_idx = f.start + i;
            let insn = out.insns[at];
            top.next += if insn.is_ld_imm64() { 2 } else { 1 };
            let relo = c.relos.get(&sec_idx);
            if let Some(Reloc::ExternLd(e) | Reloc::ExternCall(e)) = relo {
                if let Some(ExternValue::Bad(why)) = externs.get(*e) {
                    return Err(Located {
                        section: Some(c.name.clone()),
                        kind: ErrorKind::Extern(why.clone()),
                    });
                }
            }
            let is_pseudo_call =
                insn.code == op::BPF_JMP | op::BPF_CALL && insn.src == BPF_PSEUDO_CALL;
            let is_pseudo_func = insn.is_ld_imm64() && insn.src == BPF_PSEUDO_FUNC;
            let cur_sec = top.sec;
            let target = match relo {
                Some(Reloc::Bad(why)) => return Err(rel_err(&c.name, why.clone())),
                Some(Reloc::Call { sec, insn }) | Some(Reloc::SubprogAddr { sec, insn }) => {
                    Some((*sec, *insn))
                }
                Some(Reloc::ExternCall(_)) => None,
                Some(_) if is_pseudo_call || is_pseudo_func => {
                    return Err(rel_err(
                        &c.name,
                        format!("unexpected relocation for call at insn {sec_idx}"),
                    ))
                }
                None if is_pseudo_func => {
                    return Err(rel_err(
                        &c.name,
                        format!("function address at insn {sec_idx} has no relocation"),
                    ))
                }
                // A static callee in the same section needs no ELF relocation.
                None if is_pseudo_call => Some((c.shndx, sec_idx as i64 + insn.imm as i64 + 1)),
                _ => None,
            };
            if let Some((tshndx, tinsn)) = target {
                let tsec = code.iter().position(|s| s.shndx == tshndx).ok_or_else(|| {
                    rel_err(
                        &c.name,
                        format!("call at insn {sec_idx} into a section without code"),
                    )
                })?;
                let tfunc = find_func(&code[tsec], tinsn).ok_or_else(|| {
                    rel_err(
                        &c.name,
                        format!(
                            "call at insn {sec_idx} targets insn {tinsn} of '{}', where no function is",
                            code[tsec].name
                        ),
                    )
                })?;
                let tbase = match placed.get(&(tsec, tfunc)) {
                    Some(b) => *b,
                    None => {
                        let frame = place(code, tsec, tfunc, &mut out, &mut placed, btf, ext)?;
                        let b = frame.base;
                        stack.push(frame);
                        b
                    }
                };
                let dest = tbase as i64 + (tinsn - code[tsec].funcs[tfunc].start as i64);
                let imm = dest - at as i64 - 1;
                out.insns[at].imm = i32::try_from(imm).map_err(|_| {
                    rel_err(
                        &code[cur_sec].name,
                        format!("call at insn {sec_idx} too far"),
                    )
                })?;
                continue;
            }
            match relo {
                Some(Reloc::Map(m)) => {
                    out.insns[at].src = BPF_PSEUDO_MAP_IDX;
                    out.insns[at].imm = *m as i32;
                }
                Some(Reloc::Data { map, off }) => {
                    let value_off = insn.imm as i64 + off;
                    out.insns[at].src = BPF_PSEUDO_MAP_IDX_VALUE;
                    out.insns[at].imm = *map as i32;
                    out.insns[at + 1].imm = value_off as i32;
                }
                Some(Reloc::ExternLd(e)) => match &externs[*e] {
                    ExternValue::Kconfig { offset } => {
                        let Some(km) = kconfig_map else {
                            return Err(rel_err(
                                &c.name,
                                "kconfig extern without a kconfig map".into(),
                            ));
                        };
                        out.insns[at].src = BPF_PSEUDO_MAP_IDX_VALUE;
                        out.insns[at].imm = km as i32;
                        out.insns[at + 1].imm = *offset as i32;
                    }
                    ExternValue::KsymBtf { btf_id } => {
                        out.insns[at].src = BPF_PSEUDO_BTF_ID;
                        out.insns[at].imm = *btf_id as i32;
                        out.insns[at + 1].imm = 0;
                    }
                    ExternValue::KsymAddr { addr } => {
                        out.insns[at].src = 0;
                        out.insns[at].imm = *addr as u32 as i32;
                        out.insns[at + 1].imm = (*addr >> 32) as u32 as i32;
                    }
                    ExternValue::Kfunc { .. } | ExternValue::Unresolved | ExternValue::Bad(_) => {
                        out.insns[at].src = 0;
                        out.insns[at].imm = 0;
                        out.insns[at + 1].imm = 0;
                    }
                },
                Some(Reloc::ExternCall(e)) => match &externs[*e] {
                    ExternValue::Kfunc { btf_id } => {
                        out.insns[at].src = BPF_PSEUDO_KFUNC_CALL;
                        out.insns[at].imm = *btf_id as i32;
                        out.insns[at].off = 0;
                    }
                    _ => {
                        out.insns[at].src = 0;
                        out.insns[at].off = 0;
                        out.insns[at].imm = POISON_CALL_KFUNC_BASE + *e as i32;
                    }
                },
                _ => {}
            }
        }
        match pending_cb.take() {
            Some((s, f)) if !placed.contains_key(&(s, f)) => {
                stack.push(place(code, s, f, &mut out, &mut placed, btf, ext)?)
            }
            Some(_) => {}
            None => break,
        }
    }
    Ok(out)
}

fn find_func(c: &CodeSec, insn: i64) -> Option<usize> {
    if insn < 0 {
        return None;
    }
    let insn = insn as usize;
    let k = c.funcs.partition_point(|f| f.start <= insn);
    let f = k.checked_sub(1)?;
    (insn < c.funcs[f].start + c.funcs[f].len).then_some(f)
}

/// Appends a function's code and its rebased func/line info and CO-RE
/// failures; returns the frame that will walk its instructions.
fn place(
    code: &[CodeSec],
    sec: usize,
    func: usize,
    out: &mut Linked,
    placed: &mut HashMap<(usize, usize), usize>,
    btf: Option<&Btf>,
    ext: Option<&BtfExt>,
) -> LResult<Frame> {
    let c = &code[sec];
    let f = &c.funcs[func];
    let base = out.insns.len();
    out.insns
        .extend_from_slice(&c.insns[f.start..f.start + f.len]);
    placed.insert((sec, func), base);
    out.placement.push(Placement {
        section: c.name.clone(),
        section_insn: f.start,
        len: f.len,
        insn: base,
    });
    let range = f.start..f.start + f.len;
    let rebase = |off: u32, what: &str| -> LResult<Option<u32>> {
        if !off.is_multiple_of(8) {
            return Err(Located {
                section: Some(".BTF.ext".into()),
                kind: ErrorKind::BtfExt(format!(
                    "{what} of '{}' at unaligned offset {off}",
                    c.name
                )),
            });
        }
        let idx = off as usize / 8;
        Ok(range.contains(&idx).then(|| (base + idx - f.start) as u32))
    };
    if let (Some(ext), Some(btf)) = (ext, btf) {
        if let Some(s) = ext.func_info.iter().find(|s| s.sec_name == c.name) {
            for r in &s.records {
                if let Some(insn_off) = rebase(r.insn_off, "func_info")? {
                    let t = btf.type_by_id(r.type_id);
                    out.func_info.push(FuncInfo {
                        insn_off,
                        type_id: r.type_id,
                        name: t.map(|t| btf.name(t).to_owned()).unwrap_or_default(),
                        linkage: t.map(|t| t.linkage()).unwrap_or(0),
                    });
                }
            }
        }
        if let Some(s) = ext.line_info.iter().find(|s| s.sec_name == c.name) {
            for r in &s.records {
                if let Some(insn_off) = rebase(r.insn_off, "line_info")? {
                    out.line_info.push(LineInfo {
                        insn_off,
                        file_name_off: r.file_name_off,
                        line_off: r.line_off,
                        file_name: btf.str_at(r.file_name_off).unwrap_or("").to_owned(),
                        line_text: btf.str_at(r.line_off).unwrap_or("").to_owned(),
                        line: r.line_col >> 10,
                        column: r.line_col & 0x3ff,
                    });
                }
            }
        }
    }
    for (idx, reason) in &c.core_failures {
        if range.contains(idx) {
            out.core_unresolved.push(CoreFailure {
                insn_off: (base + idx - f.start) as u32,
                reason: reason.clone(),
            });
        }
    }
    Ok(Frame {
        sec,
        func,
        base,
        next: 0,
    })
}
