//! Saved interrupt flags (`bpf_local_irq_save` / `bpf_local_irq_restore`):
//! the save kfunc writes the flags into one 8-byte stack slot, which then
//! has type [`SlotType::IrqFlag`] and holds, in its `spilled` register, the
//! id of an irq reference ([`RefKind::Irq`]). `State::active_irq_id` names
//! the innermost saved region; restores must come in the reverse order of
//! the saves, and the region may not be left, nor sleep, while any flag is
//! saved (checked where the program exits and where it may sleep).

use crate::error::VResult;
use crate::explore::Env;
use crate::kfunc::KfuncMeta;
use crate::prune::IdMap;
use crate::regs::{Reg, RegType};
use crate::state::{RefKind, RefState, Slot, SlotType, REG_SIZE};

/// Where the flag at `regno` lives, as stack_slot_obj_get_spi decides.
enum FlagSlot {
    /// Not a constant, aligned slot: the message is logged before the
    /// caller's own.
    Invalid(String),
    /// Beyond the stack allocated so far.
    Unallocated,
    At(usize),
}

/// The kfuncs that saved a flag (its `spilled.aux`): a flag saved by
/// bpf_local_irq_save is restored by bpf_local_irq_restore, one saved
/// with a resilient lock by the lock's unlock.
const NATIVE_KFUNC: u32 = 0;
const LOCK_KFUNC: u32 = 1;

fn class_name(class: u32) -> &'static str {
    if class == NATIVE_KFUNC {
        "native"
    } else {
        "lock"
    }
}

/// stacksafe for an irq flag slot: corresponding references, saved by the
/// same class of kfunc.
pub fn slots_equal(old: &Reg, cur: &Reg, m: &mut IdMap) -> bool {
    m.check(old.ref_obj_id, cur.ref_obj_id) && old.aux == cur.aux
}

impl Env<'_> {
    fn irq_flag_slot(&self, regno: u8) -> FlagSlot {
        let r = self.cur.reg(regno);
        if !r.v.is_const() {
            return FlagSlot::Invalid("irq_flag has to be at a constant offset".into());
        }
        let off = r.off as i64 + r.v.const_value() as i64;
        if off % REG_SIZE as i64 != 0 || off > 0 {
            // A positive offset gives a negative slot index, reported like
            // a misaligned one.
            return FlagSlot::Invalid(format!("cannot pass in irq_flag at an offset={off}"));
        }
        // The kernel's division truncates: offset 0 names the slot at fp-8.
        let spi = ((-off - 1) / REG_SIZE as i64).max(0) as usize;
        let allocated = self.cur.frames[r.frameno as usize].stack.len();
        if spi < allocated {
            FlagSlot::At(spi)
        } else {
            FlagSlot::Unallocated
        }
    }

    /// The flag argument of bpf_local_irq_save/restore (process_irq_flag).
    pub fn process_irq_flag(&mut self, regno: u8, meta: &KfuncMeta) -> VResult<()> {
        let argno = regno - 1;
        let frameno = self.cur.reg(regno).frameno as usize;
        let class = if meta.name.starts_with("bpf_res_spin") {
            LOCK_KFUNC
        } else {
            NATIVE_KFUNC
        };
        match meta.name.as_str() {
            "bpf_local_irq_save" | "bpf_res_spin_lock_irqsave" => {
                let uninit = match self.irq_flag_slot(regno) {
                    FlagSlot::Invalid(msg) => {
                        self.log.line(&msg);
                        false
                    }
                    FlagSlot::Unallocated => true,
                    FlagSlot::At(spi) => self.cur.frames[frameno].stack[spi]
                        .types
                        .iter()
                        .all(|t| *t != SlotType::IrqFlag),
                };
                if !uninit {
                    return self.err(format!("expected uninitialized irq flag as arg#{argno}"));
                }
                self.check_mem_access(
                    regno,
                    0,
                    REG_SIZE as u32,
                    crate::check_mem::Access::Write,
                    None,
                    false,
                )?;
                let spi = match self.irq_flag_slot(regno) {
                    FlagSlot::At(spi) => spi,
                    FlagSlot::Invalid(msg) => return self.err(msg),
                    FlagSlot::Unallocated => {
                        return self.err("verifier internal error: irq flag slot not allocated")
                    }
                };
                let id = self.new_id();
                self.cur.refs.push(RefState {
                    kind: RefKind::Irq,
                    id,
                    insn_idx: self.insn_idx,
                    lock_ptr: 0,
                });
                self.cur.active_irq_id = id;
                let mut flag = Reg::pointer(RegType::Stack);
                flag.ref_obj_id = id;
                flag.aux = class;
                self.cur.frames[frameno].stack[spi] = Slot {
                    spilled: flag,
                    types: [SlotType::IrqFlag; REG_SIZE],
                };
                let lo = -(((spi + 1) * REG_SIZE) as i64);
                self.note_stack_write(frameno, lo, lo + REG_SIZE as i64);
                Ok(())
            }
            "bpf_local_irq_restore" | "bpf_res_spin_unlock_irqrestore" => {
                let valid = match self.irq_flag_slot(regno) {
                    FlagSlot::Invalid(msg) => {
                        self.log.line(&msg);
                        None
                    }
                    FlagSlot::Unallocated => None,
                    FlagSlot::At(spi) => {
                        let s = &self.cur.frames[frameno].stack[spi];
                        (s.spilled.ref_obj_id != 0
                            && s.types.iter().all(|t| *t == SlotType::IrqFlag))
                        .then_some(spi)
                    }
                };
                let Some(spi) = valid else {
                    return self.err(format!("expected an initialized irq flag as arg#{argno}"));
                };
                let lo = -(((spi + 1) * REG_SIZE) as i64);
                self.note_stack_read(frameno, lo, lo + REG_SIZE as i64);
                let saved = self.cur.frames[frameno].stack[spi].spilled;
                if saved.aux != class {
                    return self.err(format!(
                        "irq flag acquired by {} kfuncs cannot be restored with {} kfuncs",
                        class_name(saved.aux),
                        class_name(class)
                    ));
                }
                self.release_irq_state(saved.ref_obj_id)?;
                self.cur.frames[frameno].stack[spi] = Slot::default();
                self.note_stack_write(frameno, lo, lo + REG_SIZE as i64);
                Ok(())
            }
            other => self.unsupported(format!("irq flag kfunc {other}")),
        }
    }

    /// Ends the innermost irq-disabled region; the one before it (the
    /// previous irq reference, references keeping their order) becomes
    /// active.
    fn release_irq_state(&mut self, id: u32) -> VResult<()> {
        let active = self.cur.active_irq_id;
        if id != active {
            let at = self
                .cur
                .refs
                .iter()
                .find(|r| r.id == active)
                .map_or(0, |r| r.insn_idx);
            return self.err(format!(
                "cannot restore irq state out of order, expected id={active} acquired at insn_idx={at}"
            ));
        }
        let irqs: Vec<usize> = (0..self.cur.refs.len())
            .filter(|&i| self.cur.refs[i].kind == RefKind::Irq)
            .collect();
        let Some(k) = irqs.iter().position(|&i| self.cur.refs[i].id == id) else {
            return self.err("verifier internal error: irq reference not found");
        };
        let prev = if k > 0 {
            self.cur.refs[irqs[k - 1]].id
        } else {
            0
        };
        self.cur.refs.remove(irqs[k]);
        self.cur.active_irq_id = prev;
        Ok(())
    }
}
