//! Register and stack state in the kernel's log notation (print_reg_state
//! and print_verifier_state of Linux 6.18): ` R1=ctx() R6=fp-8
//! fp-16=mmmmscalar(id=2)`, the frame prefix, references and callback marks.

use crate::regs::{Reg, RegType};
use crate::scalar::ScalarLogInfo;
use crate::state::{SlotType, State, REG_SIZE};
use crate::tnum::{write_snum, write_unum};
use std::fmt::Write;

/// What the log shows of a map: its name (15 characters, as the kernel
/// keeps it), key and value sizes, and those of its inner map template.
#[derive(Clone, Debug, Default)]
pub struct MapInfo {
    pub name: String,
    pub key_size: u32,
    pub value_size: u32,
    pub inner: Option<(u32, u32)>,
}

/// The log's view of the object's maps.
pub fn map_infos(obj: &bpfvet_object::Object) -> Vec<MapInfo> {
    obj.maps
        .iter()
        .map(|m| MapInfo {
            // The kernel keeps 15 characters of a map's name.
            name: m.name.chars().take(15).collect(),
            key_size: m.key_size,
            value_size: m.value_size,
            inner: m.inner.as_deref().map(|i| (i.key_size, i.value_size)),
        })
        .collect()
}

/// Which registers and stack slots to print: all of them, or the
/// scratched ones (bit i: register Ri / slot fp-(i+1)*8).
#[derive(Clone, Copy)]
pub struct Selection {
    pub all: bool,
    pub regs: u16,
    pub slots: u64,
}

/// Writes ` frameN: R0=... fp-8=... refs=1 cb` (no newline) for frame
/// `frameno` of `st`.
pub fn write_frame_state(
    out: &mut String,
    st: &State,
    frameno: usize,
    sel: Selection,
    maps: &[MapInfo],
) {
    let Some(f) = st.frames.get(frameno) else {
        return;
    };
    if frameno > 0 {
        let _ = write!(out, " frame{frameno}:");
    }
    for (i, r) in f.regs.iter().enumerate() {
        if r.ty == RegType::NotInit || (!sel.all && sel.regs & (1 << i) == 0) {
            continue;
        }
        let _ = write!(out, " R{i}=");
        write_reg(out, r, frameno, maps);
    }
    for (spi, slot) in f.stack.iter().enumerate() {
        if !sel.all && (spi >= 64 || sel.slots & (1 << spi) == 0) {
            continue;
        }
        if slot.types.iter().all(|t| *t == SlotType::Invalid) {
            continue;
        }
        let off = -((spi as i32 + 1) * REG_SIZE as i32);
        if let Some(d) = crate::dynptr::slot_dynptr(slot) {
            // A dynptr prints once, at its first slot.
            if d.first {
                let _ = write!(out, " fp{off}={}", crate::dynptr::dynptr_log_str(&d));
            }
            continue;
        }
        if slot.is_iter() {
            if let Some(it) = crate::iter::slot_str(slot) {
                let _ = write!(out, " fp{off}={it}");
            }
            continue;
        }
        let _ = write!(out, " fp{off}=");
        if slot.types[REG_SIZE - 1] == SlotType::Spill {
            // The bytes below a narrow spill, then the spilled register.
            for t in slot.types.iter().take_while(|t| **t != SlotType::Spill) {
                out.push(t.ch());
            }
            write_reg(out, &slot.spilled, frameno, maps);
        } else {
            out.extend(slot.types.iter().map(|t| t.ch()));
        }
    }
    // As the kernel prints them: nothing when the first (a lock in a
    // global variable) has id 0, then the nonzero ids.
    if let Some(first) = st.refs.first().filter(|r| r.id != 0) {
        let _ = write!(out, " refs={}", first.id);
        for r in st.refs[1..].iter().filter(|r| r.id != 0) {
            let _ = write!(out, ",{}", r.id);
        }
    }
    if f.in_callback_fn {
        out.push_str(" cb");
    }
    if f.in_async_callback_fn {
        out.push_str(" async_cb");
    }
}

/// One register as the log shows it after `R1=`: `ctx()`, `fp-8`,
/// `map_value(map=m,ks=4,vs=8)`, `P5`, `scalar(id=1,umax=255,...)`.
pub fn write_reg(out: &mut String, r: &Reg, frameno: usize, maps: &[MapInfo]) {
    let add_const = r.id & crate::prune::ADD_CONST != 0;
    let id = r.id & !crate::prune::ADD_CONST;
    if r.ty == RegType::Scalar {
        let _ = crate::scalar::write_reg_scalar(
            out,
            &r.v,
            ScalarLogInfo {
                precise: r.precise,
                id,
                linked_off: add_const.then_some(r.off),
            },
        );
        return;
    }
    out.push_str(&r.type_str());
    if r.ty == RegType::Arena {
        return;
    }
    if r.ty == RegType::BtfId {
        if let Some(btf) = crate::btf_walk::vmlinux() {
            out.push_str(btf.name_of(r.aux));
        }
    }
    if r.ty == RegType::Stack {
        if r.frameno as usize != frameno {
            let _ = write!(out, "[{}]", r.frameno);
        }
        if r.v.is_const() {
            let _ = write_snum(out, (r.v.const_value() as i64).wrapping_add(r.off as i64));
            return;
        }
    }
    out.push('(');
    let mut sep = "";
    let attr = |out: &mut String, sep: &mut &str| {
        out.push_str(sep);
        *sep = ",";
    };
    if id != 0 {
        attr(out, &mut sep);
        let _ = write!(out, "id={id}");
    }
    if add_const {
        let _ = write!(out, "{:+}", r.off);
    }
    if r.ref_obj_id != 0 {
        attr(out, &mut sep);
        let _ = write!(out, "ref_obj_id={}", r.ref_obj_id);
    }
    if matches!(r.ty, RegType::MapPtr | RegType::MapKey | RegType::MapValue) {
        let inner = r.map & crate::explore::INNER_MAP != 0;
        if let Some(m) = maps.get((r.map & !crate::explore::INNER_MAP) as usize) {
            let (ks, vs) = match (inner, m.inner) {
                (true, Some(sizes)) => sizes,
                _ => (m.key_size, m.value_size),
            };
            if !inner && !m.name.is_empty() {
                attr(out, &mut sep);
                let _ = write!(out, "map={}", m.name);
            }
            attr(out, &mut sep);
            let _ = write!(out, "ks={ks},vs={vs}");
        }
    }
    if r.off != 0 {
        attr(out, &mut sep);
        out.push_str("off=");
        let _ = write_snum(out, r.off as i64);
    }
    if r.ty.is_pkt() {
        attr(out, &mut sep);
        out.push_str("r=");
        // The range is signed (negative: beyond the packet end).
        let _ = write_unum(out, r.aux as i32 as i64 as u64);
    }
    if r.ty == RegType::Mem {
        attr(out, &mut sep);
        out.push_str("sz=");
        let _ = write_unum(out, r.aux as u64);
    } else if let Some(kind) = crate::dynptr::const_dynptr_kind(r) {
        attr(out, &mut sep);
        let _ = write!(out, "type={kind}");
    }
    if r.v.is_const() {
        if r.v.const_value() != 0 {
            attr(out, &mut sep);
            out.push_str("imm=");
            let _ = write_snum(out, r.v.const_value() as i64);
        }
    } else {
        // The variable part prints as a scalar's bounds and var_off.
        let sc = r.v.log_string(ScalarLogInfo::default());
        if let Some(inner) = sc.strip_prefix("scalar(").and_then(|x| x.strip_suffix(')')) {
            if !inner.is_empty() {
                attr(out, &mut sep);
                out.push_str(inner);
            }
        }
    }
    out.push(')');
}
