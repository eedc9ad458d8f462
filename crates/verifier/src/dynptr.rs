//! Dynptrs on the stack: a `struct bpf_dynptr` is 16 bytes, two whole
//! stack slots typed `SlotType::Dynptr`. Helpers with an uninitialised
//! dynptr argument create one (a ringbuf dynptr also takes a reference),
//! the others require an initialised dynptr of the right kind, a release
//! helper destroys it with every slice `bpf_dynptr_data` returned from it,
//! and a plain stack write over either slot destroys an unreferenced one
//! (the kernel's process_dynptr_func and the functions around it).

use crate::error::VResult;
use crate::explore::Env;
use crate::helpers::{ArgType, TypeFlags};
use crate::prune::IdMap;
use crate::regs::{flag, Reg, RegType};
use crate::state::{RefKind, RefState, Slot, SlotType, REG_SIZE};

/// `enum bpf_dynptr_type` (0 is the kernel's invalid type).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DynptrKind {
    Local = 1,
    Ringbuf = 2,
    Skb = 3,
    Xdp = 4,
    SkbMeta = 5,
}

impl DynptrKind {
    /// The kind a helper argument names with its DYNPTR_TYPE_* flag; None
    /// for an argument that takes any kind.
    fn of_arg(at: ArgType) -> Option<DynptrKind> {
        [
            (TypeFlags::DYNPTR_TYPE_LOCAL, DynptrKind::Local),
            (TypeFlags::DYNPTR_TYPE_RINGBUF, DynptrKind::Ringbuf),
            (TypeFlags::DYNPTR_TYPE_SKB, DynptrKind::Skb),
            (TypeFlags::DYNPTR_TYPE_XDP, DynptrKind::Xdp),
        ]
        .into_iter()
        .find(|(f, _)| at.flags.contains(*f))
        .map(|(_, k)| k)
    }

    fn from_code(code: u32) -> Option<DynptrKind> {
        Some(match code {
            1 => DynptrKind::Local,
            2 => DynptrKind::Ringbuf,
            3 => DynptrKind::Skb,
            4 => DynptrKind::Xdp,
            5 => DynptrKind::SkbMeta,
            _ => return None,
        })
    }

    /// The kernel's dynptr_type_str.
    pub fn name(self) -> &'static str {
        match self {
            DynptrKind::Local => "local",
            DynptrKind::Ringbuf => "ringbuf",
            DynptrKind::Skb => "skb",
            DynptrKind::Xdp => "xdp",
            DynptrKind::SkbMeta => "skb_meta",
        }
    }

    /// The register flag a slice of this kind carries.
    pub fn slice_flag(self) -> u16 {
        match self {
            DynptrKind::Local => flag::DYNPTR_LOCAL,
            DynptrKind::Ringbuf => flag::DYNPTR_RINGBUF,
            DynptrKind::Skb => flag::DYNPTR_SKB,
            DynptrKind::Xdp => flag::DYNPTR_XDP,
            DynptrKind::SkbMeta => flag::DYNPTR_SKB_META,
        }
    }

    /// Ringbuf dynptrs own a reservation: they must be released, and
    /// cannot be overwritten.
    fn refcounted(self) -> bool {
        self == DynptrKind::Ringbuf
    }
}

/// Bit of the slot register's `aux` marking the dynptr's first slot (the
/// one at the lower address, higher spi); the low byte holds the kind.
const FIRST_SLOT: u32 = 1 << 8;

/// What a dynptr stack slot says about its dynptr.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DynptrSlot {
    pub kind: DynptrKind,
    pub first: bool,
    /// Shared by both slots and by the slices taken from the dynptr.
    pub id: u32,
    /// The reference a ringbuf dynptr holds (0 for local ones).
    pub ref_obj_id: u32,
}

/// The two slots of a dynptr whose upper slot is `spi`, as a slot mask.
fn dynptr_slots(spi: usize) -> u64 {
    slot_bit(spi) | slot_bit(spi.wrapping_sub(1))
}

/// Bit `spi` of a frame's slot mask (none past the 64 slots).
pub fn slot_bit(spi: usize) -> u64 {
    u32::try_from(spi)
        .ok()
        .and_then(|s| 1u64.checked_shl(s))
        .unwrap_or(0)
}

/// The dynptr a slot belongs to, if it holds one. STACK_DYNPTR is always
/// set on all 8 bytes, so the first byte decides.
pub fn slot_dynptr(s: &Slot) -> Option<DynptrSlot> {
    if s.types[0] != SlotType::Dynptr {
        return None;
    }
    Some(DynptrSlot {
        kind: DynptrKind::from_code(s.spilled.aux & 0xff)?,
        first: s.spilled.aux & FIRST_SLOT != 0,
        id: s.spilled.id,
        ref_obj_id: s.spilled.ref_obj_id,
    })
}

fn dynptr_slot(d: DynptrSlot) -> Slot {
    Slot {
        spilled: Reg {
            aux: d.kind as u32 | if d.first { FIRST_SLOT } else { 0 },
            id: d.id,
            ref_obj_id: d.ref_obj_id,
            ..Reg::not_init()
        },
        types: [SlotType::Dynptr; REG_SIZE],
    }
}

/// stacksafe for a dynptr slot whose bytes are dynptr in both states: same
/// kind and half, and references that correspond. The dynptr id itself is
/// not compared (slices compare it exactly in regsafe).
pub fn dynptr_slot_safe(old: &Slot, cur: &Slot, m: &mut IdMap) -> bool {
    match (slot_dynptr(old), slot_dynptr(cur)) {
        (Some(o), Some(c)) => {
            o.kind == c.kind && o.first == c.first && m.check(o.ref_obj_id, c.ref_obj_id)
        }
        _ => false,
    }
}

/// The log's notation of a dynptr at its first slot. The kernel prints
/// `dynptr_id` from a field the slot's `first_slot` flag overlays, so it
/// reads 1 there.
pub fn dynptr_log_str(d: &DynptrSlot) -> String {
    let mut parts = Vec::new();
    if d.id != 0 {
        parts.push(format!("id={}", d.id));
    }
    if d.ref_obj_id != 0 {
        parts.push(format!("ref_id={}", d.ref_obj_id));
    }
    if d.first {
        parts.push("dynptr_id=1".to_string());
    }
    format!("dynptr_{}({})", d.kind.name(), parts.join(","))
}

/// The kind of dynptr a `dynptr_ptr` register points to, for the log.
pub fn const_dynptr_kind(r: &Reg) -> Option<&'static str> {
    (r.ty == RegType::ConstPtrToDynptr)
        .then(|| DynptrKind::from_code(r.aux).map(DynptrKind::name))
        .flatten()
}

/// Why a register does not name the first slot of a dynptr place.
enum SpiError {
    /// Not a constant, slot-aligned offset with room for two slots; the
    /// kernel logs the message before its verdict on the argument.
    Invalid(String),
    /// Past the frame's allocated stack (fine for a dynptr about to be
    /// created: the write grows the stack).
    Range,
}

/// A dynptr on the stack: frame and spi of its first slot.
#[derive(Clone, Copy)]
struct Place {
    frameno: usize,
    spi: usize,
    /// Offset of the dynptr's lowest byte from the frame pointer.
    off: i64,
}

impl Env<'_> {
    /// The kernel's dynptr_get_spi for a stack pointer register.
    fn dynptr_place(&self, reg: &Reg) -> Result<Place, SpiError> {
        if !reg.v.is_const() {
            return Err(SpiError::Invalid(
                "dynptr has to be at a constant offset".into(),
            ));
        }
        let off = (reg.off as i64).wrapping_add(reg.v.const_value() as i64) as i32 as i64;
        let bad = || SpiError::Invalid(format!("cannot pass in dynptr at an offset={off}"));
        if off % REG_SIZE as i64 != 0 {
            return Err(bad());
        }
        // Integer division truncating toward zero, as the kernel's.
        let spi = (-off - 1) / REG_SIZE as i64;
        if spi + 1 < 2 {
            return Err(bad());
        }
        let frameno = reg.frameno as usize;
        let allocated = self.cur.frames.get(frameno).map_or(0, |f| f.stack.len()) as i64;
        if spi >= allocated {
            return Err(SpiError::Range);
        }
        Ok(Place {
            frameno,
            spi: spi as usize,
            off,
        })
    }

    fn log_spi_error(&mut self, e: &SpiError) {
        if let SpiError::Invalid(msg) = e {
            self.log.line(msg);
        }
    }

    fn dynptr_at(&self, p: Place) -> Option<DynptrSlot> {
        self.cur.frames[p.frameno]
            .stack
            .get(p.spi)
            .and_then(slot_dynptr)
    }

    /// An initialised dynptr starts at `p`: both slots wholly dynptr, the
    /// first marked first (is_dynptr_reg_valid_init).
    fn valid_init_dynptr(&self, p: Place) -> Option<DynptrSlot> {
        let stack = &self.cur.frames[p.frameno].stack;
        let d = slot_dynptr(stack.get(p.spi)?)?;
        let whole = |s: &Slot| s.types.iter().all(|t| *t == SlotType::Dynptr);
        (d.first && whole(&stack[p.spi]) && whole(stack.get(p.spi - 1)?)).then_some(d)
    }

    /// A helper argument of type ARG_PTR_TO_DYNPTR, checked in the kernel's
    /// order: register type, release of an unacquired dynptr, then
    /// creation (MEM_UNINIT) or use of an initialised dynptr of the kind
    /// the argument names.
    pub fn check_dynptr_arg(&mut self, regno: u8, at: ArgType) -> VResult<()> {
        let r = *self.cur.reg(regno);
        if r.ty == RegType::ConstPtrToDynptr {
            return self.check_const_dynptr_arg(regno, &r, at);
        }
        if r.ty != RegType::Stack {
            return self.err(format!(
                "R{regno} type={} expected=fp, dynptr_ptr",
                r.type_str()
            ));
        }
        if at.flags.contains(TypeFlags::OBJ_RELEASE) {
            let acquired = match self.dynptr_place(&r) {
                Ok(p) => self.cur.frames[p.frameno].stack[p.spi].spilled.ref_obj_id != 0,
                Err(e) => {
                    self.log_spi_error(&e);
                    false
                }
            };
            if !acquired {
                return self.err(format!("arg {regno} is an unacquired reference"));
            }
        }
        if at.flags.contains(TypeFlags::MEM_UNINIT) {
            let kind = DynptrKind::of_arg(at).unwrap_or(DynptrKind::Local);
            return self.create_dynptr(regno, &r, kind, None);
        }
        let place = self.dynptr_place(&r);
        if let Err(e) = &place {
            self.log_spi_error(e);
        }
        let Some((p, d)) = place
            .ok()
            .and_then(|p| self.valid_init_dynptr(p).map(|d| (p, d)))
        else {
            return self.err(format!(
                "Expected an initialized dynptr as arg #{}",
                regno - 1
            ));
        };
        if let Some(want) = DynptrKind::of_arg(at) {
            if d.kind != want {
                return self.err(format!(
                    "Expected a dynptr of type {} as arg #{}",
                    want.name(),
                    regno - 1
                ));
            }
        }
        self.note_stack_read(p.frameno, p.off, p.off + 2 * REG_SIZE as i64);
        Ok(())
    }

    /// A kfunc's `struct bpf_dynptr *` argument (KF_ARG_PTR_TO_DYNPTR):
    /// `create` is the kind of dynptr an `__uninit` argument receives
    /// (with the parent's reference for a clone); otherwise an
    /// initialised dynptr of any kind, returned as the kernel's
    /// initialized_dynptr. A `const` callback dynptr is read-only to the
    /// kfunc whatever its prototype says.
    pub fn check_kfunc_dynptr_arg(
        &mut self,
        regno: u8,
        create: Option<(DynptrKind, Option<u32>)>,
    ) -> VResult<Option<DynptrSlot>> {
        let r = *self.cur.reg(regno);
        let no_arg_type = ArgType {
            base: crate::helpers::ArgBase::DontCare,
            flags: TypeFlags::default(),
        };
        self.check_func_arg_reg_off(regno, &r, no_arg_type)?;
        if !matches!(r.ty, RegType::Stack | RegType::ConstPtrToDynptr) {
            return self.err(format!(
                "arg#{} expected pointer to stack or const struct bpf_dynptr",
                regno - 1
            ));
        }
        if let Some((kind, clone_ref)) = create {
            if r.ty == RegType::ConstPtrToDynptr {
                return self.err("Dynptr has to be an uninitialized dynptr");
            }
            self.create_dynptr(regno, &r, kind, clone_ref)?;
            return Ok(None);
        }
        if r.ty == RegType::ConstPtrToDynptr {
            let Some(kind) = DynptrKind::from_code(r.aux) else {
                return self.err("verifier internal error: invalid dynptr type");
            };
            return Ok(Some(DynptrSlot {
                kind,
                first: true,
                id: r.id,
                ref_obj_id: r.ref_obj_id,
            }));
        }
        let place = self.dynptr_place(&r);
        if let Err(e) = &place {
            self.log_spi_error(e);
        }
        let Some((p, d)) = place
            .ok()
            .and_then(|p| self.valid_init_dynptr(p).map(|d| (p, d)))
        else {
            return self.err(format!(
                "Expected an initialized dynptr as arg #{}",
                regno - 1
            ));
        };
        self.note_stack_read(p.frameno, p.off, p.off + 2 * REG_SIZE as i64);
        Ok(Some(d))
    }

    /// A callback's `const struct bpf_dynptr *`: it may only be read.
    fn check_const_dynptr_arg(&mut self, regno: u8, r: &Reg, at: ArgType) -> VResult<()> {
        if r.off < 0 {
            return self.err(format!(
                "negative offset dynptr_ptr ptr R{regno} off={} disallowed",
                r.off
            ));
        }
        if r.off != 0 {
            return self.err(format!(
                "dereference of modified dynptr_ptr ptr R{regno} off={} disallowed",
                r.off
            ));
        }
        if !r.v.is_const() || r.v.const_value() != 0 {
            return self.err(format!(
                "variable dynptr_ptr access var_off={} disallowed",
                crate::check_alu::tnum_str(&r.v)
            ));
        }
        if at.flags.contains(TypeFlags::OBJ_RELEASE) {
            return self.err("cannot release unowned const bpf_dynptr");
        }
        if at.flags.contains(TypeFlags::MEM_UNINIT) {
            return self.err("Dynptr has to be an uninitialized dynptr");
        }
        if !at.flags.contains(TypeFlags::MEM_RDONLY) {
            return self.err("cannot pass pointer to const bpf_dynptr, the helper mutates it");
        }
        if let Some(want) = DynptrKind::of_arg(at) {
            if DynptrKind::from_code(r.aux) != Some(want) {
                return self.err(format!(
                    "Expected a dynptr of type {} as arg #{}",
                    want.name(),
                    regno - 1
                ));
            }
        }
        Ok(())
    }

    /// A global function's `struct bpf_dynptr *` argument: an initialised
    /// dynptr on the stack, or one the caller itself received.
    pub fn check_global_dynptr_arg(&mut self, regno: u8) -> VResult<()> {
        let r = *self.cur.reg(regno);
        if !matches!(r.ty, RegType::Stack | RegType::ConstPtrToDynptr) {
            return self.err(format!(
                "arg#{} expected pointer to stack or const struct bpf_dynptr",
                regno - 1
            ));
        }
        let at = ArgType {
            base: crate::helpers::ArgBase::PtrToDynptr,
            flags: TypeFlags::MEM_RDONLY,
        };
        self.check_dynptr_arg(regno, at)
    }

    /// The `const struct bpf_dynptr *` a user ringbuf callback or a global
    /// function receives: a local dynptr with an id of its own
    /// (mark_dynptr_cb_reg).
    pub fn const_local_dynptr(&mut self) -> Reg {
        Reg {
            ty: RegType::ConstPtrToDynptr,
            aux: DynptrKind::Local as u32,
            id: self.new_id(),
            ..Reg::pointer(RegType::ConstPtrToDynptr)
        }
    }

    /// MEM_UNINIT: the helper writes a new dynptr over two slots, as two
    /// 8-byte stack writes, destroying unreferenced dynptrs there. A
    /// clone shares its parent's reference (`clone_ref`) instead of
    /// acquiring one.
    fn create_dynptr(
        &mut self,
        regno: u8,
        r: &Reg,
        kind: DynptrKind,
        clone_ref: Option<u32>,
    ) -> VResult<()> {
        let p = match self.dynptr_place(r) {
            Ok(p) => p,
            Err(SpiError::Range) => {
                let off = (r.off as i64).wrapping_add(r.v.const_value() as i64) as i32 as i64;
                Place {
                    frameno: r.frameno as usize,
                    spi: ((-off - 1) / REG_SIZE as i64) as usize,
                    off,
                }
            }
            Err(e) => {
                self.log_spi_error(&e);
                return self.err("Dynptr has to be an uninitialized dynptr");
            }
        };
        if p.off < -(crate::state::MAX_BPF_STACK as i64) {
            return self.err(format!(
                "invalid write to stack R{regno} off={} size={REG_SIZE}",
                p.off
            ));
        }
        if p.frameno >= self.cur.frames.len() {
            return self.err(format!("R{regno} invalid stack frame"));
        }
        self.note_stack_depth(p.frameno, (-p.off) as u32);
        self.cur.frames[p.frameno].grow_stack((-p.off) as usize);
        // Written 8 bytes at a time, lowest slot first (Spectre v4).
        let top = (-p.off - 1) as usize;
        self.sanitize_stack_write(p.frameno, top, REG_SIZE, false);
        self.sanitize_stack_write(p.frameno, top.wrapping_sub(REG_SIZE), REG_SIZE, false);
        self.destroy_if_dynptr_stack_slot(p.frameno, p.spi)?;
        self.destroy_if_dynptr_stack_slot(p.frameno, p.spi - 1)?;
        self.note_stack_slots_written(p.frameno, dynptr_slots(p.spi));
        let id = self.new_id();
        let ref_obj_id = if let Some(rid) = clone_ref.filter(|_| kind.refcounted()) {
            rid
        } else if kind.refcounted() {
            let rid = self.new_id();
            self.cur.refs.push(RefState {
                kind: RefKind::Ptr,
                id: rid,
                insn_idx: self.insn_idx,
                lock_ptr: 0,
            });
            rid
        } else {
            0
        };
        let stack = &mut self.cur.frames[p.frameno].stack;
        for (spi, first) in [(p.spi, true), (p.spi - 1, false)] {
            stack[spi] = dynptr_slot(DynptrSlot {
                kind,
                first,
                id,
                ref_obj_id,
            });
        }
        Ok(())
    }

    /// The kind of the initialised dynptr register `regno` points to.
    pub fn dynptr_kind(&self, regno: u8) -> Option<DynptrKind> {
        let r = self.cur.reg(regno);
        if r.ty == RegType::ConstPtrToDynptr {
            return DynptrKind::from_code(r.aux);
        }
        let p = self.dynptr_place(r).ok()?;
        self.dynptr_at(p).map(|d| d.kind)
    }

    /// (id, ref_obj_id) of the initialised dynptr register `regno` points
    /// to, for the slice `bpf_dynptr_data` returns.
    pub fn dynptr_ids(&self, regno: u8) -> Option<(u32, u32)> {
        let r = self.cur.reg(regno);
        if r.ty == RegType::ConstPtrToDynptr {
            return Some((r.id, r.ref_obj_id));
        }
        let p = self.dynptr_place(r).ok()?;
        self.dynptr_at(p).map(|d| (d.id, d.ref_obj_id))
    }

    /// A release helper consumed the dynptr `regno` points to: its
    /// reference goes (and with it every slice and every other dynptr
    /// holding it), and its slots become invalid
    /// (unmark_stack_slots_dynptr).
    pub fn release_dynptr(&mut self, regno: u8) -> VResult<()> {
        let r = *self.cur.reg(regno);
        let Ok(p) = self.dynptr_place(&r) else {
            return self.err("verifier internal error: released dynptr has no slot");
        };
        let Some(d) = self.dynptr_at(p) else {
            return self.err("verifier internal error: released dynptr has no slot");
        };
        self.note_stack_slots_written(p.frameno, dynptr_slots(p.spi));
        if !d.kind.refcounted() {
            self.invalidate_dynptr(p.frameno, p.spi);
            return Ok(());
        }
        self.release_reference(d.ref_obj_id)?;
        let clones: Vec<usize> = self.cur.frames[p.frameno]
            .stack
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                slot_dynptr(s).is_some_and(|o| o.first && o.ref_obj_id == d.ref_obj_id)
            })
            .map(|(spi, _)| spi)
            .collect();
        for spi in clones {
            self.invalidate_dynptr(p.frameno, spi);
        }
        Ok(())
    }

    fn invalidate_dynptr(&mut self, frameno: usize, spi: usize) {
        let stack = &mut self.cur.frames[frameno].stack;
        for s in [spi, spi.wrapping_sub(1)] {
            if let Some(slot) = stack.get_mut(s) {
                *slot = Slot::default();
            }
        }
    }

    /// A stack write touches slot `spi`: a dynptr there is destroyed with
    /// both its slots and its slices; a referenced one may not be.
    pub fn destroy_if_dynptr_stack_slot(&mut self, frameno: usize, spi: usize) -> VResult<()> {
        let stack = &self.cur.frames[frameno].stack;
        let Some(d) = stack.get(spi).and_then(slot_dynptr) else {
            return Ok(());
        };
        let first = if d.first { spi } else { spi + 1 };
        let Some(d) = stack.get(first).and_then(slot_dynptr) else {
            return Ok(());
        };
        if d.kind.refcounted() {
            return self.err("cannot overwrite referenced dynptr");
        }
        self.invalidate_dynptr(frameno, first);
        self.note_stack_slots_written(frameno, dynptr_slots(first));
        let invalid = self.invalid_reg();
        self.cur.for_each_reg_mut(|r| {
            if r.ty == RegType::Mem && r.flags & !flag::MAYBE_NULL == 0 && r.dynptr_id == d.id {
                *r = invalid;
            }
        });
        Ok(())
    }

    /// Helper memory on the stack may not overlap a dynptr. `lo..hi` are
    /// the bytes the helper may touch, `min_off` where the access starts;
    /// `raw` for memory the helper only writes at a constant offset
    /// (check_stack_range_initialized).
    pub fn check_helper_stack_no_dynptr(
        &self,
        regno: u8,
        frameno: usize,
        (lo, hi): (i64, i64),
        size: u64,
        raw: bool,
    ) -> VResult<()> {
        let Some(f) = self.cur.frames.get(frameno) else {
            return Ok(());
        };
        let Some(b) = first_dynptr_byte(&f.stack, lo, hi) else {
            return Ok(());
        };
        if raw {
            return self.err(format!("potential write to dynptr at off={b} disallowed"));
        }
        self.err_helper_stack_unreadable(regno, lo, b, size)
    }
}

/// The first offset from the frame pointer in `lo..hi` whose stack byte is
/// part of a dynptr. Slots without any dynptr byte are passed over whole:
/// helpers are handed buffers of hundreds of bytes.
fn first_dynptr_byte(stack: &[Slot], lo: i64, hi: i64) -> Option<i64> {
    let dynptr_word = u64::from_ne_bytes([SlotType::Dynptr as u8; REG_SIZE]);
    let mut b = lo;
    while b < hi {
        // Offsets at or above the frame pointer hold no stack slot.
        let Ok(idx) = usize::try_from(-b - 1) else {
            return None;
        };
        let spi = idx / REG_SIZE;
        let has_dynptr = stack.get(spi).is_some_and(|s| {
            let same = !(s.type_word() ^ dynptr_word);
            // A byte equal to Dynptr has all eight bits of `same` set.
            let all = same & (same >> 4);
            let all = all & (all >> 2);
            let all = all & (all >> 1);
            all & 0x0101_0101_0101_0101 != 0
        });
        if !has_dynptr {
            // On to the next slot up: offset -(spi * 8).
            b = -((spi * REG_SIZE) as i64);
            continue;
        }
        if stack[spi].types[idx % REG_SIZE] == SlotType::Dynptr {
            return Some(b);
        }
        b += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_dynptr_byte_is_the_first_of_the_byte_scan() {
        let mut x = 0x853c_49e6_748f_ea9bu64;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..20_000 {
            let mut stack = vec![Slot::default(); next(10) as usize];
            for s in stack.iter_mut() {
                for t in s.types.iter_mut() {
                    *t = match next(6) {
                        0 => SlotType::Dynptr,
                        1 => SlotType::Misc,
                        2 => SlotType::Spill,
                        _ => SlotType::Invalid,
                    };
                }
            }
            let lo = -(next(96) as i64) + 8;
            let hi = lo + next(80) as i64;
            let scan = (lo..hi).find(|&b| {
                let slot = (-b - 1) as usize;
                stack
                    .get(slot / REG_SIZE)
                    .is_some_and(|s| s.types[slot % REG_SIZE] == SlotType::Dynptr)
            });
            assert_eq!(first_dynptr_byte(&stack, lo, hi), scan, "{lo}..{hi}");
        }
    }

    fn ringbuf(first: bool, id: u32, ref_obj_id: u32) -> Slot {
        dynptr_slot(DynptrSlot {
            kind: DynptrKind::Ringbuf,
            first,
            id,
            ref_obj_id,
        })
    }

    #[test]
    fn log_notation_is_the_kernels() {
        // As the 6.18 host prints a fresh ringbuf dynptr at fp-32 in
        // xdp_ringbuf_dynptr (tests/progs/ringbuf.bpf.c).
        let d = slot_dynptr(&ringbuf(true, 1, 2)).expect("a dynptr slot");
        assert_eq!(
            dynptr_log_str(&d),
            "dynptr_ringbuf(id=1,ref_id=2,dynptr_id=1)"
        );
        assert!(slot_dynptr(&Slot::default()).is_none());
    }

    #[test]
    fn slots_match_by_kind_half_and_reference() {
        let mut m = IdMap::new(false);
        m.reset(100);
        assert!(dynptr_slot_safe(
            &ringbuf(true, 1, 2),
            &ringbuf(true, 5, 6),
            &mut m
        ));
        // Reference 2 now stands for 6: it cannot also stand for 7.
        assert!(!dynptr_slot_safe(
            &ringbuf(true, 1, 2),
            &ringbuf(true, 5, 7),
            &mut m
        ));
        m.reset(100);
        assert!(!dynptr_slot_safe(
            &ringbuf(true, 1, 2),
            &ringbuf(false, 1, 2),
            &mut m
        ));
        let local = dynptr_slot(DynptrSlot {
            kind: DynptrKind::Local,
            first: true,
            id: 1,
            ref_obj_id: 0,
        });
        assert!(!dynptr_slot_safe(&ringbuf(true, 1, 2), &local, &mut m));
        assert!(!dynptr_slot_safe(
            &ringbuf(true, 1, 2),
            &Slot::default(),
            &mut m
        ));
    }
}
