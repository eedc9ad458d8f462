//! Conditional jumps: dead-branch detection, refinement of both edges,
//! null checks, packet range checks, linked scalars, and may_goto.

use crate::error::VResult;
use crate::explore::Env;
use crate::linked_regs::{member, LinkedRegs, Member};
use crate::prune::ADD_CONST;
use crate::regs::{flag, Reg, RegType};
use crate::scalar::{self, sync_linked, JmpOp, Link};
use crate::state::State;
use bpfvet_isa::opcode::*;
use bpfvet_isa::uapi::MapType;
use bpfvet_isa::Insn;

const MAX_PACKET_OFF: u64 = 0xffff;

/// Pointer types that are never NULL (reg_not_null).
fn not_null(r: &Reg) -> bool {
    if r.maybe_null() {
        return false;
    }
    // A BTF pointer is non-NULL when trusted: referenced, or marked
    // trusted with no other modifier (is_trusted_reg).
    if r.ty == RegType::BtfId {
        return r.ref_obj_id != 0 || r.flags == crate::regs::flag::TRUSTED;
    }
    // MEM_ALLOC is a trusted modifier.
    if r.ty == RegType::Alloc {
        return r.ref_obj_id != 0 || r.flags == 0;
    }
    // Untrusted memory may be anything, NULL included.
    if r.ty == RegType::Mem && r.flags & crate::regs::flag::UNTRUSTED != 0 {
        return false;
    }
    // Stack, ctx, packet and func pointers are not on the kernel's list:
    // comparing them with 0 explores both branches.
    matches!(
        r.ty,
        RegType::Sock
            | RegType::TcpSock
            | RegType::MapValue
            | RegType::MapKey
            | RegType::SockCommon
            | RegType::Mem
            | RegType::MapPtr
    )
}

impl Env<'_> {
    pub fn check_cond_jmp(&mut self, insn: &Insn) -> VResult<()> {
        let o = op(insn.code);
        let idx = self.insn_idx;
        if insn.code == BPF_JMP | BPF_JCOND {
            return self.check_may_goto(insn);
        }
        let Some(jop) = JmpOp::from_code(insn.code) else {
            return self.err(format!("invalid BPF_JMP/JMP32 opcode {:x}", o));
        };
        let is32 = insn.class() == BPF_JMP32;
        let (d, s) = (insn.dst, insn.src);
        // The destination is checked first, then the source (6.18 order).
        self.check_read(d)?;
        if source(insn.code) == BPF_X {
            if insn.imm != 0 {
                return self.err("BPF_JMP/JMP32 uses reserved fields");
            }
            self.check_read(s)?;
            let (dr, sr) = (self.cur.reg(d), self.cur.reg(s));
            let pkt_pair = dr.ty.is_pkt_any() && sr.ty.is_pkt_any();
            if !self.caps.allow_ptr_leaks && sr.is_pointer() && !pkt_pair {
                return self.err(format!("R{s} pointer comparison prohibited"));
            }
        } else if s != 0 {
            return self.err("BPF_JMP/JMP32 uses reserved fields");
        }
        // Stack pointers compared are kept in the history: backtracking
        // asks no precision of them.
        let mut jmp_stack = 0;
        if source(insn.code) == BPF_X && self.cur.reg(s).ty == RegType::Stack {
            jmp_stack |= crate::state::JMP_SRC_STACK;
        }
        if self.cur.reg(d).ty == RegType::Stack {
            jmp_stack |= crate::state::JMP_DST_STACK;
        }
        if jmp_stack != 0 {
            self.push_history_entry(0, 0, jmp_stack);
        }
        let dst = *self.cur.reg(d);
        let src = if source(insn.code) == BPF_X {
            *self.cur.reg(s)
        } else {
            Reg::known(if is32 {
                insn.imm as u32 as u64
            } else {
                insn.imm as i64 as u64
            })
        };

        let pred = self.branch_taken(&dst, &src, jop, is32);
        if let Some(taken) = pred {
            let src_asked = source(insn.code) == BPF_X && src.is_scalar();
            if dst.is_scalar() && src_asked {
                self.mark_chain_precision_pair(d, s)?;
            } else if dst.is_scalar() {
                self.mark_chain_precision(d)?;
            } else if src_asked {
                self.mark_chain_precision(s)?;
            }
            // Spectre v1: the edge not taken is explored as a speculative
            // path, knowing nothing of the compared registers
            // (sanitize_speculative_path).
            if !self.caps.bypass_spec_v1 {
                let other = if taken {
                    idx + 1
                } else {
                    (idx as i64 + insn.off as i64 + 1) as usize
                };
                let precise = !self.caps.bpf_capable;
                let st = self.push_speculative(other, idx)?;
                let regs = &mut st.frame_mut().regs;
                let mut forget = |r: u8| {
                    regs[r as usize] = Reg::unknown_scalar();
                    regs[r as usize].precise = precise;
                };
                forget(d);
                if source(insn.code) == BPF_X {
                    forget(s);
                }
            }
            if taken {
                self.insn_idx = (idx as i64 + insn.off as i64) as usize;
            }
            return Ok(());
        }

        let target = (idx as i64 + insn.off as i64 + 1) as usize;
        self.push_stack(target, idx)?;
        let other_i = self.pending.len() - 1;
        // A compare that is neither a null check nor one of packet
        // pointers leaks the pointer to a loader without CAP_PERFMON.
        let mut pointer_compare_ok = false;

        if dst.is_scalar() && src.is_scalar() {
            let same = source(insn.code) == BPF_X && s == d;
            if same {
                let mut r = scalar::set_min_max_same(&dst.v, jop, is32);
                // An edge the compare makes impossible keeps a register
                // whose bounds contradict; the kernel forgets them.
                let _ = r.sanitize();
                self.pending[other_i].st.frame_mut().regs[d as usize].v = r.taken[0];
                self.cur.frame_mut().regs[d as usize].v = r.fall[0];
            } else {
                let mut refined = scalar::set_min_max(&dst.v, &src.v, jop, is32);
                let _ = refined.sanitize();
                {
                    let ost = &mut self.pending[other_i].st;
                    ost.frame_mut().regs[d as usize].v = refined.taken[0];
                    if source(insn.code) == BPF_X {
                        ost.frame_mut().regs[s as usize].v = refined.taken[1];
                    }
                }
                self.cur.frame_mut().regs[d as usize].v = refined.fall[0];
                if source(insn.code) == BPF_X {
                    self.cur.frame_mut().regs[s as usize].v = refined.fall[1];
                }
            }
            // Registers sharing an id (the ones 6.18 collects) learn the
            // same facts and share precision.
            let mut linked = LinkedRegs::default();
            let mut order = [None, None];
            if source(insn.code) == BPF_X && src.is_scalar() && src.id != 0 {
                order[0] = Some((s, src.id));
            }
            if dst.is_scalar() && dst.id != 0 {
                order[1] = Some((d, dst.id));
            }
            for (_, id) in order.iter().flatten() {
                let other = &mut self.pending[other_i].st;
                linked.collect(&mut self.cur, other, *id, &self.cfg.live_regs_before, idx);
            }
            if linked.len() > 1 {
                self.push_history(0, linked.pack());
                let e = *self.cur.jmp_history.last().expect("just pushed");
                let oh = &mut self.pending[other_i].st.jmp_history;
                match oh.last_mut() {
                    Some(l) if l.idx == e.idx => l.linked = e.linked,
                    _ => oh.push(e),
                }
            }
            for (r, _) in order.iter().flatten() {
                let at = Member {
                    frame: self.cur.curframe() as u8,
                    idx: *r,
                    is_reg: true,
                };
                let known = *self.cur.reg(*r);
                if known.is_scalar() && known.id != 0 {
                    sync_linked_regs(&mut self.cur, &known, at, &linked);
                    let okn = *self.pending[other_i].st.reg(*r);
                    sync_linked_regs(&mut self.pending[other_i].st, &okn, at, &linked);
                }
            }
        } else if !is32
            && source(insn.code) == BPF_K
            && insn.imm == 0
            && (jop == JmpOp::Eq || jop == JmpOp::Ne)
            && dst.maybe_null()
        {
            // Null check: on the "== 0" edge every copy is NULL.
            pointer_compare_ok = true;
            let eq = jop == JmpOp::Eq;
            let id = dst.id;
            let rid = dst.ref_obj_id;
            // A map value's id also names its lock: kept when it has one.
            // So does an allocated object's (all copies share its type).
            let alloc_lock = dst.ty == RegType::Alloc && self.alloc_has_spin_lock(dst.aux);
            let fields = &self.map_fields;
            let keeps_id = |r: &Reg| {
                (r.ty == RegType::MapValue
                    && crate::map_record::lock_field(crate::map_record::fields_of(fields, r.map))
                        .is_some())
                    || (r.ty == RegType::Alloc && alloc_lock)
            };
            mark_ptr_or_null(self.obj, fields, &mut self.cur, id, rid, !eq, &keeps_id);
            mark_ptr_or_null(
                self.obj,
                fields,
                &mut self.pending[other_i].st,
                id,
                rid,
                eq,
                &keeps_id,
            );
        } else if source(insn.code) == BPF_X && !is32 {
            pointer_compare_ok = self.try_match_pkt_pointers(jop, d, s, &dst, &src, other_i);
        }
        if !self.caps.allow_ptr_leaks && !pointer_compare_ok && dst.is_pointer() {
            return self.err(format!("R{d} pointer comparison prohibited"));
        }
        // Two pointers found equal: a maybe-NULL one equal to a non-NULL
        // one is not NULL on that edge (BTF pointers, NULL-able without
        // the flag, are left alone).
        if source(insn.code) == BPF_X
            && !is32
            && (jop == JmpOp::Eq || jop == JmpOp::Ne)
            && dst.is_pointer()
            && src.is_pointer()
            && !dst.ty.is_btf_id()
            && !src.ty.is_btf_id()
        {
            let (obj, fields) = (self.obj, &self.map_fields);
            let eq_state = if jop == JmpOp::Eq {
                &mut self.pending[other_i].st
            } else {
                &mut self.cur
            };
            for (known, maybe) in [(&dst, s), (&src, d)] {
                let r = eq_state.reg_mut(maybe);
                if not_null(known) && r.maybe_null() {
                    r.flags &= !flag::MAYBE_NULL;
                    map_lookup_non_null(obj, fields, r);
                }
            }
        }
        Ok(())
    }

    fn branch_taken(&self, dst: &Reg, src: &Reg, op: JmpOp, is32: bool) -> Option<bool> {
        if dst.is_scalar() && src.is_scalar() {
            return scalar::is_branch_taken(&dst.v, &src.v, op, is32);
        }
        let pkt_any = |r: &Reg| r.ty.is_pkt() || r.ty == RegType::PacketEnd;
        if pkt_any(dst) && pkt_any(src) && !is32 {
            return pkt_end_branch_taken(dst, src, op);
        }
        // A pointer compared with NULL.
        let (p, k) = if dst.is_pointer() && src.is_scalar() {
            (dst, src)
        } else if src.is_pointer() && dst.is_scalar() {
            (src, dst)
        } else {
            return None;
        };
        if !k.v.is_const_in(is32) || k.v.const_value_in(is32) != 0 || !not_null(p) {
            return None;
        }
        match op {
            JmpOp::Eq => Some(false),
            JmpOp::Ne => Some(true),
            _ => None,
        }
    }

    fn try_match_pkt_pointers(
        &mut self,
        op: JmpOp,
        d: u8,
        s: u8,
        dst: &Reg,
        src: &Reg,
        other_i: usize,
    ) -> bool {
        // Packet data bounds the metadata only from its very start
        // (reg_is_init_pkt_pointer).
        let pkt_start = |b: &Reg| {
            b.ty == RegType::Packet
                && b.id == 0
                && b.off == 0
                && b.v.is_const()
                && b.v.const_value() == 0
        };
        let pair = |a: &Reg, b: &Reg| {
            (a.ty == RegType::Packet && b.ty == RegType::PacketEnd)
                || (a.ty == RegType::PacketMeta && pkt_start(b))
        };
        // (pointer register, its value, whether it is on the left)
        let (preg, p, left) = if pair(dst, src) {
            (d, *dst, true)
        } else if pair(src, dst) {
            (s, *src, false)
        } else {
            return false;
        };
        // Normalise to "pkt OP end".
        let op = if left { op } else { op.flip() };
        // (edge is the taken branch?, range right-open?)
        let good = match op {
            JmpOp::Gt => Some((false, false)),
            JmpOp::Lt => Some((true, true)),
            JmpOp::Ge => Some((false, true)),
            JmpOp::Le => Some((true, false)),
            _ => None,
        };
        let Some((on_taken, open)) = good else {
            return false;
        };
        // On the other edge the pointer is at (`>=`) or past (`>`) the
        // packet's end: nothing may be read through it, and a later
        // compare with the end is decided (mark_pkt_end).
        if p.ty == RegType::Packet {
            let at_or_beyond = if open { AT_PKT_END } else { BEYOND_PKT_END };
            let st = if on_taken {
                &mut self.cur
            } else {
                &mut self.pending[other_i].st
            };
            st.reg_mut(preg).aux = at_or_beyond as u32;
        }
        if p.off < 0 || (p.off == 0 && open) {
            return true;
        }
        if p.v.umax > MAX_PACKET_OFF || p.v.umax + p.off as u64 > MAX_PACKET_OFF {
            return true;
        }
        let range = p.off as u32 + if open { 1 } else { 0 };
        let st = if on_taken {
            &mut self.pending[other_i].st
        } else {
            &mut self.cur
        };
        find_good_pkt_pointers(st, &p, range);
        true
    }

    fn check_may_goto(&mut self, insn: &Insn) -> VResult<()> {
        if insn.src != BPF_MAY_GOTO || insn.imm != 0 || insn.dst != 0 {
            return self.err(format!("invalid may_goto imm {}", insn.imm));
        }
        let idx = self.insn_idx;
        // Compared from the checkpoint just saved at this instruction.
        let depth = match self.cur.parent {
            Some(p) if self.pool.get(p).state.insn_idx == idx => self.pool.get(p).state.dfs_depth,
            _ => self.cur.dfs_depth,
        };
        let prev = self.find_prev_entry(idx, depth);
        let st = self.push_stack(idx + 1, idx)?;
        st.may_goto_depth += 1;
        if let Some(prev) = prev {
            // Widen the queued fall-through state, as the kernel does.
            let last = self.pending.len() - 1;
            std::mem::swap(&mut self.cur, &mut self.pending[last].st);
            self.widen_imprecise_scalars(prev);
            std::mem::swap(&mut self.cur, &mut self.pending[last].st);
        }
        self.insn_idx = (idx as i64 + insn.off as i64) as usize;
        Ok(())
    }
}

/// Copies what is known about `known` to every scalar with the same id,
/// shifted by the constant delta of linked-with-offset registers.
fn sync_linked_regs(st: &mut State, known: &Reg, known_at: Member, linked: &LinkedRegs) {
    let known_link = Link::from_reg(known.id, known.off);
    for &m in linked.members() {
        if m == known_at {
            continue;
        }
        let r = member(st, m);
        if r.ty != RegType::Scalar || r.id == 0 || r.id & !ADD_CONST != known_link.id {
            continue;
        }
        if let Some((v, link)) = sync_linked(&known.v, known_link, Link::from_reg(r.id, r.off)) {
            r.v = v;
            r.id = link.reg_id();
            r.off = link.off;
        }
    }
}

/// What a map lookup's result points to once it is known not NULL: the
/// inner map of a map of maps, the socket of a sockmap or sockhash, else
/// the value itself.
pub(crate) fn map_lookup_non_null(
    obj: &bpfvet_object::Object,
    fields: &[[Vec<crate::map_record::Field>; 2]],
    r: &mut Reg,
) {
    if r.ty != RegType::MapValue || r.map & crate::explore::INNER_MAP != 0 {
        return;
    }
    let Some(m) = obj.maps.get(r.map as usize) else {
        return;
    };
    match m.map_type {
        MapType::ARRAY_OF_MAPS | MapType::HASH_OF_MAPS => {
            r.ty = RegType::MapPtr;
            r.map |= crate::explore::INNER_MAP;
            let inner = crate::map_record::fields_of(fields, r.map);
            if inner.iter().any(|f| TIMER_LIKE_FIELDS.contains(&f.name)) {
                r.map_uid = r.id;
            }
        }
        // The socket keeps the map it came from (the kernel's map_ptr):
        // pruning tells it from a socket of a lookup helper.
        MapType::SOCKMAP | MapType::SOCKHASH => r.ty = RegType::Sock,
        _ => {}
    }
}

/// Special fields whose helpers must be given the very map they live in.
const TIMER_LIKE_FIELDS: [&str; 3] = ["bpf_timer", "bpf_wq", "bpf_task_work"];

fn mark_ptr_or_null(
    obj: &bpfvet_object::Object,
    fields: &[[Vec<crate::map_record::Field>; 2]],
    st: &mut State,
    id: u32,
    ref_obj_id: u32,
    is_null: bool,
    keeps_id: &dyn Fn(&Reg) -> bool,
) {
    if id == 0 {
        return;
    }
    st.for_each_reg_mut(|r| {
        if r.id != id || !r.maybe_null() {
            return;
        }
        if is_null {
            *r = Reg::known(0);
        } else {
            r.flags &= !flag::MAYBE_NULL;
            map_lookup_non_null(obj, fields, r);
            // The id served the null check, unless it also names a map
            // value's lock.
            if !keeps_id(r) {
                r.id = 0;
            }
        }
    });
    // Only a pointer that is itself the reference (not a slice or cast of
    // it) drops the reference when NULL.
    if is_null && ref_obj_id != 0 && ref_obj_id == id {
        st.refs
            .retain(|x| !(x.kind == crate::state::RefKind::Ptr && x.id == ref_obj_id));
    }
}

/// The range of a packet pointer known to be at, or past, the packet's end
/// (negative: no byte is readable through it).
const AT_PKT_END: i32 = -1;
const BEYOND_PKT_END: i32 = -2;

/// A compare of a packet pointer with the packet's end that an earlier
/// compare decided (is_pkt_ptr_branch_taken).
fn pkt_end_branch_taken(dst: &Reg, src: &Reg, op: JmpOp) -> Option<bool> {
    let (pkt, op) = if src.ty == RegType::PacketEnd {
        (dst, op)
    } else if dst.ty == RegType::PacketEnd {
        (src, op.flip())
    } else {
        return None;
    };
    let range = pkt.aux as i32;
    if range >= 0 || !pkt.ty.is_pkt() {
        return None;
    }
    match op {
        // Past the end: "pkt > end" holds, "pkt <= end" does not.
        JmpOp::Gt | JmpOp::Le if range == BEYOND_PKT_END => Some(op == JmpOp::Gt),
        // At or past the end: "pkt >= end" holds, "pkt < end" does not.
        JmpOp::Ge | JmpOp::Lt => Some(op == JmpOp::Ge),
        _ => None,
    }
}

fn find_good_pkt_pointers(st: &mut State, p: &Reg, range: u32) {
    let (ty, id) = (p.ty, p.id);
    st.for_each_reg_mut(|r| {
        if r.ty == ty && r.id == id {
            let cur = r.aux as i32;
            if cur < range as i32 {
                r.aux = range;
            }
        }
    });
}
