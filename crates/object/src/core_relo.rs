//! CO-RE relocations: each BTF.ext record names a local type and an access
//! path ("0:1:2"); the path is resolved in the object's BTF, matched against
//! same-named types of the target BTF (ignoring `___flavour` suffixes), and
//! the instruction's immediate / offset patched with the target's value.
//! A relocation without a usable target is poisoned as libbpf does (a call
//! to helper 0xbad2310) and reported.

use std::collections::HashMap;

use bpfvet_isa::opcode as op;
use bpfvet_isa::Insn;

use crate::btf::{essential_name, Btf, BtfType, Kind, BTF_INT_SIGNED, MAX_RESOLVE_DEPTH};
use crate::btf_ext::{BtfExt, CoreReloRec};
use crate::error::{ErrorKind, LResult, Located};
use crate::link::CodeSec;

const FIELD_BYTE_OFFSET: u32 = 0;
const FIELD_BYTE_SIZE: u32 = 1;
const FIELD_EXISTS: u32 = 2;
const FIELD_SIGNED: u32 = 3;
const FIELD_LSHIFT_U64: u32 = 4;
const FIELD_RSHIFT_U64: u32 = 5;
const TYPE_ID_LOCAL: u32 = 6;
const TYPE_ID_TARGET: u32 = 7;
const TYPE_EXISTS: u32 = 8;
const TYPE_SIZE: u32 = 9;
const ENUMVAL_EXISTS: u32 = 10;
const ENUMVAL_VALUE: u32 = 11;
const TYPE_MATCHES: u32 = 12;

/// libbpf's poison: `call 0xbad2310`.
const POISON_IMM: i32 = 195896080;

fn kind_name(k: u32) -> &'static str {
    match k {
        FIELD_BYTE_OFFSET => "byte_off",
        FIELD_BYTE_SIZE => "byte_sz",
        FIELD_EXISTS => "field_exists",
        FIELD_SIGNED => "signed",
        FIELD_LSHIFT_U64 => "lshift_u64",
        FIELD_RSHIFT_U64 => "rshift_u64",
        TYPE_ID_LOCAL => "local_type_id",
        TYPE_ID_TARGET => "target_type_id",
        TYPE_EXISTS => "type_exists",
        TYPE_SIZE => "type_size",
        ENUMVAL_EXISTS => "enumval_exists",
        ENUMVAL_VALUE => "enumval_value",
        TYPE_MATCHES => "type_matches",
        _ => "unknown",
    }
}

fn is_field(k: u32) -> bool {
    k <= FIELD_RSHIFT_U64
}
fn is_enumval(k: u32) -> bool {
    k == ENUMVAL_EXISTS || k == ENUMVAL_VALUE
}

/// One step of an access path: a named member (in composite `type_id`,
/// member `idx`) or an array index (`name` None).
#[derive(Clone, Debug)]
struct Acc {
    type_id: u32,
    idx: u32,
    name: Option<String>,
}

#[derive(Clone, Debug)]
struct Spec {
    root: u32,
    acc: Vec<Acc>,
    bit_offset: u64,
}

fn skip(btf: &Btf, id: u32) -> Option<(u32, &BtfType)> {
    btf.skip_mods_and_typedefs(id)
}

fn kinds_compat(a: Kind, b: Kind) -> bool {
    a == b || (a.is_enum() && b.is_enum())
}

fn parse_access(s: &str) -> Option<Vec<u32>> {
    if s.is_empty() {
        return None;
    }
    s.split(':').map(|p| p.parse().ok()).collect()
}

/// The local spec of a relocation; Err is a malformed record.
fn local_spec(btf: &Btf, rec: &CoreReloRec, raw: &[u32]) -> Result<Spec, String> {
    let root = rec.type_id;
    let mut spec = Spec {
        root,
        acc: Vec::new(),
        bit_offset: 0,
    };
    let (_, t) = skip(btf, root).ok_or("root type missing or cyclic")?;
    if !is_field(rec.kind) && !is_enumval(rec.kind) {
        if raw != [0] {
            return Err("type relocation with an access path".into());
        }
        return Ok(spec);
    }
    if is_enumval(rec.kind) {
        if !t.kind.is_enum() || raw.len() != 1 {
            return Err("enum value relocation not against an enum".into());
        }
        let e = btf
            .enum_values(t)
            .get(raw[0] as usize)
            .ok_or("enumerator index out of range")?;
        spec.acc.push(Acc {
            type_id: root,
            idx: raw[0],
            name: Some(btf.str_at(e.name_off).unwrap_or("").to_owned()),
        });
        return Ok(spec);
    }
    let root_sz = btf.resolve_size(root).map_err(|e| e.to_string())?;
    spec.bit_offset = (raw[0] as u64)
        .checked_mul(root_sz)
        .and_then(|v| v.checked_mul(8))
        .ok_or("offset overflows")?;
    spec.acc.push(Acc {
        type_id: root,
        idx: raw[0],
        name: None,
    });
    let mut id = root;
    for &idx in &raw[1..] {
        let (tid, t) = skip(btf, id).ok_or("type missing or cyclic")?;
        if t.kind.is_composite() {
            let m = btf
                .members(t)
                .get(idx as usize)
                .ok_or("member index out of range")?;
            spec.bit_offset += m.bit_offset as u64;
            let name = btf.str_at(m.name_off).unwrap_or("");
            if !name.is_empty() {
                spec.acc.push(Acc {
                    type_id: tid,
                    idx,
                    name: Some(name.to_owned()),
                });
            }
            id = m.type_id;
        } else if let Some((elem, _, _)) = t.array_info() {
            let esz = btf.resolve_size(elem).map_err(|e| e.to_string())?;
            spec.bit_offset = (idx as u64)
                .checked_mul(esz * 8)
                .and_then(|v| v.checked_add(spec.bit_offset))
                .ok_or("offset overflows")?;
            spec.acc.push(Acc {
                type_id: elem,
                idx,
                name: None,
            });
            id = elem;
        } else {
            return Err(format!("access step into a {}", t.kind.name()));
        }
    }
    Ok(spec)
}

fn fields_compat(l: &Btf, lid: u32, t: &Btf, tid: u32, depth: usize) -> bool {
    let (Some((_, lt)), Some((_, tt))) = (skip(l, lid), skip(t, tid)) else {
        return false;
    };
    if depth > MAX_RESOLVE_DEPTH {
        return false;
    }
    if lt.kind.is_composite() && tt.kind.is_composite() {
        return true;
    }
    if !kinds_compat(lt.kind, tt.kind) {
        return false;
    }
    match lt.kind {
        Kind::Ptr | Kind::Float => true,
        Kind::Fwd | Kind::Enum | Kind::Enum64 => {
            essential_name(l.name(lt)) == essential_name(t.name(tt))
        }
        Kind::Int => lt.int_info().map(|i| i.1) == Some(0) && tt.int_info().map(|i| i.1) == Some(0),
        Kind::Array => {
            let (le, _, _) = lt.array_info().unwrap_or_default();
            let (te, _, _) = tt.array_info().unwrap_or_default();
            fields_compat(l, le, t, te, depth + 1)
        }
        _ => false,
    }
}

fn types_compat(l: &Btf, lid: u32, t: &Btf, tid: u32, depth: usize) -> bool {
    let (Some((_, lt)), Some((_, tt))) = (skip(l, lid), skip(t, tid)) else {
        return false;
    };
    if depth > MAX_RESOLVE_DEPTH || !kinds_compat(lt.kind, tt.kind) {
        return false;
    }
    match lt.kind {
        Kind::Struct | Kind::Union | Kind::Fwd | Kind::Enum | Kind::Enum64 | Kind::Float => true,
        Kind::Int => lt.int_info().map(|i| i.1) == Some(0) && tt.int_info().map(|i| i.1) == Some(0),
        Kind::Ptr => types_compat(l, lt.size_or_type, t, tt.size_or_type, depth + 1),
        Kind::Array => {
            let (le, _, _) = lt.array_info().unwrap_or_default();
            let (te, _, _) = tt.array_info().unwrap_or_default();
            types_compat(l, le, t, te, depth + 1)
        }
        Kind::FuncProto => {
            let (lp, tp) = (l.params(lt), t.params(tt));
            lp.len() == tp.len()
                && types_compat(l, lt.size_or_type, t, tt.size_or_type, depth + 1)
                && lp
                    .iter()
                    .zip(tp)
                    .all(|(a, b)| types_compat(l, a.type_id, t, b.type_id, depth + 1))
        }
        _ => false,
    }
}

/// Finds member `name` in target composite `tid`, looking through anonymous
/// members; returns (composite id, member index, bit offset from `tid`).
fn match_member(
    l: &Btf,
    local_member_type: u32,
    name: &str,
    t: &Btf,
    tid: u32,
    depth: usize,
) -> Option<(u32, u32, u64)> {
    if depth > MAX_RESOLVE_DEPTH {
        return None;
    }
    let (cid, ct) = skip(t, tid)?;
    if !ct.kind.is_composite() {
        return None;
    }
    for (i, m) in t.members(ct).iter().enumerate() {
        let mname = t.str_at(m.name_off).unwrap_or("");
        if mname.is_empty() {
            if let Some((id, idx, off)) =
                match_member(l, local_member_type, name, t, m.type_id, depth + 1)
            {
                return Some((id, idx, off + m.bit_offset as u64));
            }
        } else if mname == name {
            if !fields_compat(l, local_member_type, t, m.type_id, 0) {
                return None;
            }
            return Some((cid, i as u32, m.bit_offset as u64));
        }
    }
    None
}

/// Matches the local spec against candidate `cand`; None when it does not fit.
fn match_spec(l: &Btf, local: &Spec, kind: u32, t: &Btf, cand: u32, raw: &[u32]) -> Option<Spec> {
    let mut spec = Spec {
        root: cand,
        acc: Vec::new(),
        bit_offset: 0,
    };
    if !is_field(kind) && !is_enumval(kind) {
        // TYPE_MATCHES is checked with the same compatibility rule as
        // TYPE_EXISTS (libbpf's stricter matcher is not implemented).
        return types_compat(l, local.root, t, cand, 0).then_some(spec);
    }
    if is_enumval(kind) {
        let (_, tt) = skip(t, cand)?;
        let want = essential_name(local.acc[0].name.as_deref()?);
        let i = t
            .enum_values(tt)
            .iter()
            .position(|e| essential_name(t.str_at(e.name_off).unwrap_or("")) == want)?;
        spec.acc.push(Acc {
            type_id: cand,
            idx: i as u32,
            name: local.acc[0].name.clone(),
        });
        return Some(spec);
    }
    let root_sz = t.resolve_size(cand).ok()?;
    spec.bit_offset = (raw[0] as u64).checked_mul(root_sz)?.checked_mul(8)?;
    spec.acc.push(Acc {
        type_id: cand,
        idx: raw[0],
        name: None,
    });
    let mut id = cand;
    for la in &local.acc[1..] {
        match &la.name {
            Some(name) => {
                let lt = l.type_by_id(la.type_id)?;
                let lm = l.members(lt).get(la.idx as usize)?;
                let (cid, idx, off) = match_member(l, lm.type_id, name, t, id, 0)?;
                spec.bit_offset += off;
                let ct = t.type_by_id(cid)?;
                let m = t.members(ct).get(idx as usize)?;
                spec.acc.push(Acc {
                    type_id: cid,
                    idx,
                    name: Some(name.clone()),
                });
                id = m.type_id;
            }
            None => {
                let (_, tt) = skip(t, id)?;
                let (elem, _, n) = tt.array_info()?;
                // Flexible arrays (zero length) accept any index.
                if n != 0 && la.idx >= n {
                    return None;
                }
                let esz = t.resolve_size(elem).ok()?;
                spec.bit_offset += (la.idx as u64).checked_mul(esz * 8)?;
                spec.acc.push(Acc {
                    type_id: elem,
                    idx: la.idx,
                    name: None,
                });
                id = elem;
            }
        }
    }
    Some(spec)
}

/// The relocated value, and for byte offsets the accessed field's size
/// (to adjust load/store width). `validate` is false for bitfields.
struct Value {
    val: u64,
    field_sz: u32,
    validate: bool,
}

fn field_value(btf: &Btf, spec: &Spec, kind: u32) -> Result<Value, String> {
    let acc = spec.acc.last().ok_or("empty spec")?;
    let elem_size = |id: u32| -> Result<u32, String> {
        let mut id = id;
        for _ in 0..MAX_RESOLVE_DEPTH {
            let (sid, t) = skip(btf, id).ok_or("type missing")?;
            match t.array_info() {
                Some((e, _, _)) => id = e,
                None => {
                    return btf
                        .resolve_size(sid)
                        .map(|s| s as u32)
                        .map_err(|e| e.to_string())
                }
            }
        }
        Err("array chain too deep".into())
    };
    if acc.name.is_none() {
        return match kind {
            FIELD_BYTE_OFFSET => Ok(Value {
                val: spec.bit_offset / 8,
                field_sz: elem_size(acc.type_id)?,
                validate: true,
            }),
            FIELD_BYTE_SIZE => Ok(Value {
                val: btf.resolve_size(acc.type_id).map_err(|e| e.to_string())?,
                field_sz: 0,
                validate: true,
            }),
            _ => Err(format!("{} on an array element", kind_name(kind))),
        };
    }
    let t = btf.type_by_id(acc.type_id).ok_or("type missing")?;
    let m = btf
        .members(t)
        .get(acc.idx as usize)
        .ok_or("member missing")?;
    let (ftype, mt) = skip(btf, m.type_id).ok_or("member type missing")?;
    let bit_off = spec.bit_offset;
    let bit_sz = m.bitfield_size as u64;
    let bitfield = bit_sz > 0;
    let (byte_off, byte_sz, bit_sz) = if bitfield {
        let mut byte_sz = (mt.size_or_type as u64).max(1);
        let mut byte_off = bit_off / 8 / byte_sz * byte_sz;
        while bit_off + bit_sz - byte_off * 8 > byte_sz * 8 {
            if byte_sz >= 8 {
                return Err("bitfield cannot be read with a 64-bit load".into());
            }
            byte_sz *= 2;
            byte_off = bit_off / 8 / byte_sz * byte_sz;
        }
        (byte_off, byte_sz, bit_sz)
    } else {
        let sz = btf.resolve_size(ftype).map_err(|e| e.to_string())?;
        (bit_off / 8, sz, sz * 8)
    };
    let mut v = Value {
        val: 0,
        field_sz: 0,
        validate: !bitfield,
    };
    match kind {
        FIELD_BYTE_OFFSET => {
            v.val = byte_off;
            if !bitfield {
                v.field_sz = elem_size(ftype)?;
            }
        }
        FIELD_BYTE_SIZE => v.val = byte_sz,
        FIELD_SIGNED => {
            v.val = ((mt.kind.is_enum() && mt.kind_flag)
                || mt.int_info().is_some_and(|i| i.0 & BTF_INT_SIGNED != 0))
                as u64;
            v.validate = true;
        }
        FIELD_LSHIFT_U64 => v.val = 64u64.wrapping_sub(bit_off + bit_sz - byte_off * 8),
        FIELD_RSHIFT_U64 => {
            v.val = 64 - bit_sz;
            v.validate = true;
        }
        _ => return Err("not a field relocation".into()),
    }
    Ok(v)
}

/// Value of a relocation given a matched spec (None: no target match).
fn value(btf: &Btf, spec: Option<&Spec>, kind: u32) -> Result<Option<Value>, String> {
    let plain = |val: u64| {
        Ok(Some(Value {
            val,
            field_sz: 0,
            validate: true,
        }))
    };
    match kind {
        FIELD_EXISTS | TYPE_EXISTS | TYPE_MATCHES | ENUMVAL_EXISTS => plain(spec.is_some() as u64),
        _ => {
            let Some(spec) = spec else { return Ok(None) };
            match kind {
                TYPE_ID_LOCAL | TYPE_ID_TARGET => plain(spec.root as u64),
                TYPE_SIZE => plain(btf.resolve_size(spec.root).map_err(|e| e.to_string())?),
                ENUMVAL_VALUE => {
                    let (_, t) = skip(btf, spec.root).ok_or("enum missing")?;
                    let e = btf
                        .enum_values(t)
                        .get(spec.acc[0].idx as usize)
                        .ok_or("enumerator missing")?;
                    plain(e.value as u64)
                }
                k if is_field(k) => field_value(btf, spec, k).map(Some),
                k => Err(format!("unknown relocation kind {k}")),
            }
        }
    }
}

fn poison(insns: &mut [Insn], idx: usize) {
    let p = Insn::new(op::BPF_JMP | op::BPF_CALL, 0, 0, 0, POISON_IMM);
    if insns[idx].is_ld_imm64() && idx + 1 < insns.len() {
        insns[idx + 1] = p;
    }
    insns[idx] = p;
}

fn size_code(bytes: u32) -> Option<u8> {
    Some(match bytes {
        1 => op::BPF_B,
        2 => op::BPF_H,
        4 => op::BPF_W,
        8 => op::BPF_DW,
        _ => return None,
    })
}

/// Patches one instruction; Err explains why it cannot take the value.
fn patch(insns: &mut [Insn], idx: usize, orig: &Value, new: &Value) -> Result<(), String> {
    let insn = &mut insns[idx];
    match insn.class() {
        op::BPF_ALU | op::BPF_ALU64 => {
            if op::source(insn.code) != op::BPF_K {
                return Err("ALU instruction with a register operand".into());
            }
            if orig.validate
                && insn.imm as i64 as u64 != orig.val
                && insn.imm as u32 as u64 != orig.val
            {
                return Err(format!("imm {} is not the expected {}", insn.imm, orig.val));
            }
            insn.imm = i32::try_from(new.val as i64)
                .map_err(|_| format!("value {} does not fit imm", new.val))?;
        }
        op::BPF_LDX | op::BPF_ST | op::BPF_STX => {
            if orig.validate && insn.off as i64 != orig.val as i64 {
                return Err(format!(
                    "offset {} is not the expected {}",
                    insn.off, orig.val
                ));
            }
            insn.off =
                i16::try_from(new.val).map_err(|_| format!("offset {} does not fit", new.val))?;
            if new.field_sz != orig.field_sz && orig.field_sz != 0 {
                if op::size_bytes(insn.code) != orig.field_sz {
                    return Err("load size does not match the field".into());
                }
                let sz = size_code(new.field_sz).ok_or("target field size cannot be loaded")?;
                insn.code = (insn.code & !0x18) | sz;
            }
        }
        op::BPF_LD if insn.is_ld_imm64() => {
            if idx + 1 >= insns.len() {
                return Err("truncated LD_IMM64".into());
            }
            let cur = (insns[idx].imm as u32 as u64) | ((insns[idx + 1].imm as u32 as u64) << 32);
            if orig.validate && cur != orig.val {
                return Err(format!("imm64 {cur} is not the expected {}", orig.val));
            }
            insns[idx].imm = new.val as u32 as i32;
            insns[idx + 1].imm = (new.val >> 32) as u32 as i32;
        }
        _ => {
            return Err(format!(
                "instruction {:#04x} cannot be relocated",
                insn.code
            ))
        }
    }
    Ok(())
}

fn type_label(btf: &Btf, id: u32) -> String {
    match btf.type_by_id(id) {
        Some(t) => format!("{} {}", t.kind.name().to_lowercase(), btf.name(t)),
        None => format!("[{id}]"),
    }
}

fn resolve_one(
    local: &Btf,
    target: Option<&Btf>,
    rec: &CoreReloRec,
    raw: &[u32],
    cache: &mut HashMap<u32, Vec<u32>>,
) -> Result<Option<(Value, Value)>, String> {
    let lspec = local_spec(local, rec, raw)?;
    let orig = match rec.kind {
        TYPE_ID_TARGET => Value {
            val: rec.type_id as u64,
            field_sz: 0,
            validate: true,
        },
        _ => value(local, Some(&lspec), rec.kind)?.ok_or("local value")?,
    };
    if rec.kind == TYPE_ID_LOCAL {
        return Ok(Some((
            Value {
                val: orig.val,
                field_sz: 0,
                validate: true,
            },
            orig,
        )));
    }
    let Some(target) = target else {
        return Err("no target BTF".into());
    };
    let lt = local.type_by_id(lspec.root).ok_or("root missing")?;
    let lname = essential_name(local.name(lt));
    if lname.is_empty() {
        return Err("anonymous type cannot be relocated".into());
    }
    let lkind = lt.kind;
    let cands = cache.entry(lspec.root).or_insert_with(|| {
        target
            .ids_by_essential_name(lname)
            .filter(|&id| kinds_compat(target.type_by_id(id).expect("indexed").kind, lkind))
            .collect()
    });
    let mut result: Option<Value> = None;
    for &cand in cands.iter() {
        let Some(tspec) = match_spec(local, &lspec, rec.kind, target, cand, raw) else {
            continue;
        };
        let v = value(target, Some(&tspec), rec.kind)?.ok_or("target value")?;
        if let Some(prev) = &result {
            if prev.val != v.val {
                return Err(format!(
                    "ambiguous: candidates give {} and {}",
                    prev.val, v.val
                ));
            }
        } else {
            result = Some(v);
        }
    }
    match result {
        Some(v) => Ok(Some((orig, v))),
        None => match value(target, None, rec.kind)? {
            Some(zero) => Ok(Some((orig, zero))),
            None => Ok(None),
        },
    }
}

/// Applies every CO-RE record of every code section.
pub fn apply_all(
    local: &Btf,
    target: Option<&Btf>,
    ext: &BtfExt,
    code: &mut [CodeSec],
) -> LResult<()> {
    if ext.core_relos.is_empty() {
        return Ok(());
    }
    let mut cache = HashMap::new();
    for sec in &ext.core_relos {
        let Some(c) = code.iter_mut().find(|c| c.name == sec.sec_name) else {
            continue;
        };
        for rec in &sec.records {
            let idx = (rec.insn_off / 8) as usize;
            if rec.insn_off % 8 != 0 || idx >= c.insns.len() {
                return Err(Located {
                    section: Some(".BTF.ext".into()),
                    kind: ErrorKind::BtfExt(format!(
                        "CO-RE relocation at bad offset {} of '{}'",
                        rec.insn_off, c.name
                    )),
                });
            }
            let access = local.str_at(rec.access_str_off).unwrap_or("");
            let Some(raw) = parse_access(access) else {
                return Err(Located {
                    section: Some(".BTF.ext".into()),
                    kind: ErrorKind::BtfExt(format!("CO-RE access string '{access}' is malformed")),
                });
            };
            let label = format!(
                "{} {access} ({})",
                type_label(local, rec.type_id),
                kind_name(rec.kind)
            );
            let outcome = resolve_one(local, target, rec, &raw, &mut cache).and_then(|r| match r {
                Some((orig, new)) => patch(&mut c.insns, idx, &orig, &new),
                None => Err("not found in target".into()),
            });
            if let Err(why) = outcome {
                poison(&mut c.insns, idx);
                c.core_failures.push((idx, format!("{label}: {why}")));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flavour_suffix_is_ignored() {
        assert_eq!(essential_name("task_struct___v2"), "task_struct");
        assert_eq!(essential_name("task_struct"), "task_struct");
        assert_eq!(essential_name("a____b"), "a____b");
        assert_eq!(essential_name("x___"), "x___");
    }
}
