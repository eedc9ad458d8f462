//! ALU and ALU64 instructions: operand checks, moves, scalar arithmetic
//! (delegated to `scalar`) and pointer arithmetic rules.

use crate::error::VResult;
use crate::explore::Env;
use crate::prune::ADD_CONST;
use crate::regs::{flag, Reg, RegType};
use crate::scalar::{AluOp, EndianOp, Link, Scalar};
use bpfvet_isa::opcode::*;
use bpfvet_isa::Insn;

/// The kernel's BPF_MAX_VAR_OFF: pointer offsets are kept below 2^29.
pub(crate) const MAX_VAR_OFF: i64 = 1 << 29;

fn op_name(op: u8) -> &'static str {
    match op {
        BPF_ADD => "+=",
        BPF_SUB => "-=",
        BPF_MUL => "*=",
        BPF_DIV => "/=",
        BPF_OR => "|=",
        BPF_AND => "&=",
        BPF_LSH => "<<=",
        BPF_RSH => ">>=",
        BPF_NEG => "neg",
        BPF_MOD => "%=",
        BPF_XOR => "^=",
        BPF_MOV => "=",
        BPF_ARSH => "s>>=",
        _ => "?",
    }
}

impl Env<'_> {
    /// check_reg_arg(SRC_OP): the register must be initialised. Runs for
    /// most instructions: the test is inlined, the error built out of line.
    #[inline(always)]
    pub fn check_read(&self, r: u8) -> VResult<()> {
        if (r as usize) < 11 && self.cur.reg(r).ty != RegType::NotInit {
            return Ok(());
        }
        self.check_read_failed(r)
    }

    #[cold]
    #[inline(never)]
    fn check_read_failed(&self, r: u8) -> VResult<()> {
        if r as usize >= 11 {
            return self.err(format!("R{r} is invalid"));
        }
        self.err(format!("R{r} !read_ok"))
    }

    /// check_reg_arg(DST_OP): the register may be written.
    #[inline(always)]
    pub fn check_write(&self, r: u8) -> VResult<()> {
        if r < 10 {
            return Ok(());
        }
        self.check_write_failed(r)
    }

    #[cold]
    #[inline(never)]
    fn check_write_failed(&self, r: u8) -> VResult<()> {
        if r as usize >= 11 {
            return self.err(format!("R{r} is invalid"));
        }
        self.err("frame pointer is read only")
    }

    pub fn set_unknown(&mut self, r: u8) {
        *self.cur.reg_mut(r) = Reg::unknown_scalar();
    }

    /// Gives an unlinked scalar an id before it is copied, so the copies
    /// stay linked (assign_scalar_id_before_mov).
    pub(crate) fn link_before_mov(&mut self, src: u8) {
        let r = self.cur.reg(src);
        if r.ty == RegType::Scalar && r.id & ADD_CONST != 0 {
            // A copy of a linked-with-offset value starts a new link.
            let id = self.new_id();
            let r = self.cur.reg_mut(src);
            r.id = id;
            r.off = 0;
            return;
        }
        if r.ty == RegType::Scalar && r.id == 0 && !r.v.is_const() {
            let id = self.new_id();
            self.cur.reg_mut(src).id = id;
        }
    }

    pub fn check_alu(&mut self, insn: &Insn) -> VResult<()> {
        let o = op(insn.code);
        let alu64 = insn.class() == BPF_ALU64;
        let (d, s) = (insn.dst, insn.src);
        if o == BPF_END || o == BPF_NEG {
            if o == BPF_NEG {
                if source(insn.code) != BPF_K || s != 0 || insn.off != 0 || insn.imm != 0 {
                    return self.err("BPF_NEG uses reserved fields");
                }
            } else if s != 0
                || insn.off != 0
                || !matches!(insn.imm, 16 | 32 | 64)
                || (alu64 && source(insn.code) != BPF_TO_LE)
            {
                return self.err("BPF_END uses reserved fields");
            }
            self.check_read(d)?;
            if !self.caps.allow_ptr_leaks && self.cur.reg(d).is_pointer() {
                return self.err(format!("R{d} pointer arithmetic prohibited"));
            }
            self.check_write(d)?;
            let r = self.cur.reg_mut(d);
            if r.ty == RegType::Scalar {
                if o == BPF_NEG {
                    r.v.neg(!alu64);
                    r.id = 0;
                    r.off = 0;
                } else if r
                    .v
                    .byte_swap(EndianOp::from_code(insn.code), insn.imm as u32)
                {
                    r.id = 0;
                    r.off = 0;
                }
            } else {
                *r = Reg::unknown_scalar();
            }
            return Ok(());
        }
        if o == BPF_MOV {
            self.check_mov(insn)?;
            return self.check_moved_pointer_bounds(d);
        }
        if o > BPF_END {
            return self.err(format!("invalid BPF_ALU opcode {:x}", o));
        }
        let bad_off =
            (insn.off != 0 && insn.off != 1) || (insn.off == 1 && o != BPF_MOD && o != BPF_DIV);
        if source(insn.code) == BPF_X {
            if insn.imm != 0 || bad_off {
                return self.err("BPF_ALU uses reserved fields");
            }
            self.check_read(s)?;
        } else if s != 0 || bad_off {
            return self.err("BPF_ALU uses reserved fields");
        }
        self.check_read(d)?;
        if (o == BPF_MOD || o == BPF_DIV) && source(insn.code) == BPF_K && insn.imm == 0 {
            return self.err("div by zero");
        }
        if matches!(o, BPF_LSH | BPF_RSH | BPF_ARSH) && source(insn.code) == BPF_K {
            let size = if alu64 { 64 } else { 32 };
            if insn.imm < 0 || insn.imm >= size {
                return self.err(format!("invalid shift {}", insn.imm));
            }
        }
        self.check_write(d)?;
        self.adjust_reg_min_max_vals(insn)
    }

    /// reg_bounds_sanity_check("alu") on a pointer a move copied: its
    /// bounds are in sync but in one case, the copy of a pointer that
    /// sanitize_ptr_alu pushed onto a speculative path after its 32-bit
    /// bounds were forgotten (the arithmetic's reg_bounds_sync never ran
    /// on it). The kernel then logs the violation and forgets the 64-bit
    /// bounds too, which later pointer arithmetic refuses. Scalars leave
    /// every ALU operation in sync.
    fn check_moved_pointer_bounds(&mut self, d: u8) -> VResult<()> {
        let r = self.cur.reg_mut(d);
        if r.ty == RegType::Scalar {
            return Ok(());
        }
        if let Err(v) = r.v.sanitize() {
            self.log.line(&v.message("alu"));
        }
        Ok(())
    }

    fn check_mov(&mut self, insn: &Insn) -> VResult<()> {
        let alu64 = insn.class() == BPF_ALU64;
        let (d, s) = (insn.dst, insn.src);
        if source(insn.code) == BPF_X {
            if !alu64 {
                if !matches!(insn.off, 0 | 8 | 16) || insn.imm != 0 {
                    return self.err("BPF_MOV uses reserved fields");
                }
            } else if insn.off == BPF_ADDR_SPACE_CAST as i16 {
                if insn.imm != 1 && insn.imm != 1 << 16 {
                    return self.err(
                        "addr_space_cast insn can only convert between address space 1 and 0",
                    );
                }
                if !self.arena {
                    return self.err("addr_space_cast insn can only be used in a program that has an associated arena");
                }
            } else if !matches!(insn.off, 0 | 8 | 16 | 32) || insn.imm != 0 {
                return self.err("BPF_MOV uses reserved fields");
            }
            self.check_read(s)?;
        } else if s != 0 || insn.off != 0 {
            return self.err("BPF_MOV uses reserved fields");
        }
        self.check_write(d)?;
        if source(insn.code) == BPF_K {
            let v = if alu64 {
                insn.imm as i64 as u64
            } else {
                insn.imm as u32 as u64
            };
            *self.cur.reg_mut(d) = Reg::known(v);
            return Ok(());
        }
        let src = *self.cur.reg(s);
        // Without CAP_PERFMON a pointer is copied whole or not at all.
        if !self.caps.allow_ptr_leaks
            && src.is_pointer()
            && (!alu64 || (insn.off != 0 && insn.imm == 0))
        {
            let what = if alu64 {
                "sign-extension part of"
            } else {
                "partial copy of"
            };
            return self.err(format!("R{s} {what} pointer"));
        }
        if alu64 && insn.imm != 0 {
            // addr_space_cast: from the arena's address space (1) the result
            // is an arena pointer; into it, a plain number.
            self.set_unknown(d);
            if insn.imm == 1 {
                self.cur.reg_mut(d).ty = RegType::Arena;
            }
            return Ok(());
        }
        if alu64 {
            if insn.off == 0 {
                self.link_before_mov(s);
                let src = *self.cur.reg(s);
                *self.cur.reg_mut(d) = src;
            } else if src.ty == RegType::Scalar {
                let bits = insn.off as u8;
                let keep = Scalar::movsx_keeps_value(&src.v, bits);
                if keep {
                    self.link_before_mov(s);
                }
                let mut r = *self.cur.reg(s);
                if !keep {
                    r.id = 0;
                    r.off = 0;
                }
                r.v = Scalar::movsx64(&src.v, bits);
                *self.cur.reg_mut(d) = r;
            } else {
                self.set_unknown(d);
            }
        } else if src.ty == RegType::Scalar {
            let keep = if insn.off == 0 {
                src.v.width() <= 32
            } else {
                Scalar::movsx_keeps_value(&src.v, insn.off as u8)
            };
            if keep {
                self.link_before_mov(s);
            }
            let mut r = *self.cur.reg(s);
            if !keep {
                r.id = 0;
                r.off = 0;
            }
            r.v = if insn.off == 0 {
                self.alu_memo.mov32(self.insn_idx, &src.v)
            } else {
                Scalar::movsx32(&src.v, insn.off as u8)
            };
            *self.cur.reg_mut(d) = r;
        } else {
            // A 32-bit copy of a pointer (root may leak it): unknown, then
            // zero-extended like any 32-bit result.
            self.set_unknown(d);
            let r = self.cur.reg_mut(d);
            r.v = Scalar::mov32(&r.v);
        }
        Ok(())
    }

    fn adjust_reg_min_max_vals(&mut self, insn: &Insn) -> VResult<()> {
        let o = op(insn.code);
        let alu64 = insn.class() == BPF_ALU64;
        let (d, s) = (insn.dst, insn.src);
        let src_is_reg = source(insn.code) == BPF_X;
        // The scalar path, by far the most common, needs only these: the
        // registers themselves are copied for the pointer paths alone.
        let (dst_ty, dst_precise) = {
            let r = self.cur.reg(d);
            (r.ty, r.precise)
        };
        let (src_ty, src_v) = if src_is_reg {
            let r = self.cur.reg(s);
            (r.ty, r.v)
        } else {
            (RegType::Scalar, Scalar::constant(insn.imm as i64 as u64))
        };
        // Any arithmetic with an arena pointer gives an arena pointer, whatever
        // the other operand (the host kernel, 6.18.44): every access through
        // it is guarded at run time.
        if dst_ty == RegType::Arena {
            return Ok(());
        }
        if src_ty == RegType::Arena {
            self.set_unknown(d);
            self.cur.reg_mut(d).ty = RegType::Arena;
            return Ok(());
        }
        if dst_ty.is_pointer() || src_ty.is_pointer() {
            let dst = *self.cur.reg(d);
            let src = if src_is_reg {
                *self.cur.reg(s)
            } else {
                Reg::known(insn.imm as i64 as u64)
            };
            return self.adjust_ptr_operands(insn, d, s, &dst, &src);
        }
        // scalar op scalar: a precise result needs a precise operand.
        if dst_precise && src_is_reg {
            self.mark_chain_precision(s)?;
        }
        if o == BPF_ADD || o == BPF_SUB {
            self.sanitize_val_alu(insn)?;
        }
        let Some(aop) = AluOp::from_insn(insn.code, insn.off) else {
            return self.err(format!("invalid BPF_ALU opcode {:x}", o));
        };
        let src_is_dst = src_is_reg && s == d;
        let tracks_deltas = self.caps.bpf_capable;
        let idx = self.insn_idx;
        let r = self.cur.reg_mut(d);
        let umax_before = r.v.umax;
        let fork = self.alu_memo.alu(idx, &mut r.v, aop, &src_v, !alu64);
        // A constant added to or subtracted from a linked scalar keeps the
        // link with the delta (BPF_ADD_CONST64/32); anything else drops it.
        let link =
            Link::from_reg(r.id, r.off).after_alu(aop, &src_v, src_is_dst, !alu64, umax_before);
        // Without CAP_BPF no delta links are made (BPF_ADD_CONST).
        if tracks_deltas {
            r.id = link.reg_id();
            r.off = link.off;
        } else {
            r.id = 0;
            r.off = 0;
        }
        if let Some(other) = fork {
            let idx = self.insn_idx;
            let st = self.push_stack(idx, idx)?;
            let fr = st.frame_mut();
            fr.regs[d as usize].v = other;
            fr.regs[d as usize].id = 0;
            fr.regs[d as usize].off = 0;
        }
        Ok(())
    }

    /// adjust_reg_min_max_vals with a pointer operand: two pointers only
    /// subtract (with pointer leaks allowed); otherwise the pointer rules
    /// decide.
    fn adjust_ptr_operands(
        &mut self,
        insn: &Insn,
        d: u8,
        s: u8,
        dst: &Reg,
        src: &Reg,
    ) -> VResult<()> {
        let o = op(insn.code);
        if dst.is_pointer() && src.is_pointer() {
            if o == BPF_SUB && self.caps.allow_ptr_leaks {
                self.set_unknown(d);
                return Ok(());
            }
            return self.err(format!("R{d} pointer {} pointer prohibited", op_name(o)));
        }
        if dst.is_pointer() {
            if source(insn.code) == BPF_X && src.is_scalar() {
                // The offset decides where the pointer points.
                self.mark_chain_precision(s)?;
            }
            return self.adjust_ptr(insn, d, dst, src, false);
        }
        // scalar OP pointer: the kernel treats the scalar as the offset
        // of the pointer for every operator, so the pointer rules
        // (offset sanity, then the operator) decide, as for ptr OP scalar.
        self.mark_chain_precision(d)?;
        self.adjust_ptr(insn, d, src, dst, true)
    }

    /// Pointer OP scalar (adjust_ptr_min_max_vals). `off_is_dst` is the
    /// `scalar OP= pointer` form, where the result replaces the offset.
    /// The checks run in the kernel's order, so the first failing one gives
    /// the kernel's message.
    fn adjust_ptr(
        &mut self,
        insn: &Insn,
        d: u8,
        ptr: &Reg,
        off_reg: &Reg,
        off_is_dst: bool,
    ) -> VResult<()> {
        let o = op(insn.code);
        let alu64 = insn.class() == BPF_ALU64;
        let ov = off_reg.v;
        if ov.smin > ov.smax || ov.umin > ov.umax {
            // Bounds made impossible by a dead branch: the kernel taints
            // the result instead of reasoning from them.
            self.set_unknown(d);
            return Ok(());
        }
        if !alu64 {
            if o == BPF_SUB && self.caps.allow_ptr_leaks {
                self.set_unknown(d);
                return Ok(());
            }
            return self.err(format!("R{d} 32-bit pointer arithmetic prohibited"));
        }
        // Only an error message needs the type name.
        let ts = || ptr.type_str();
        if ptr.maybe_null() {
            return self.err(format!(
                "R{d} pointer arithmetic on {ts} prohibited, null-check it first",
                ts = ts()
            ));
        }
        // Offsets into untrusted memory are not tracked (its loads are
        // probe reads): the destination is left as it was.
        if ptr.ty == RegType::Mem && ptr.flags & flag::UNTRUSTED != 0 {
            return Ok(());
        }
        let known = ov.is_const();
        let prohibited = match ptr.ty {
            // A map pointer may only be "moved" by a constant 0.
            RegType::MapPtr => !(known && ov.smin == 0 && o == BPF_ADD),
            RegType::FlowKeys => !known,
            _ => false,
        };
        if prohibited {
            return self.err(format!(
                "R{d} pointer arithmetic on {ts} prohibited",
                ts = ts()
            ));
        }
        match ptr.ty {
            RegType::PacketEnd
            | RegType::Sock
            | RegType::SockCommon
            | RegType::TcpSock
            | RegType::Func => {
                return self.err(format!(
                    "R{d} pointer arithmetic on {ts} prohibited",
                    ts = ts()
                ));
            }
            _ => {}
        }
        self.check_sane_offset(&ov, off_reg.off, known, ptr)?;
        self.check_sane_offset(&ptr.v, ptr.off, false, ptr)?;
        let sanitize = o == BPF_ADD || o == BPF_SUB;
        let info = if sanitize {
            self.sanitize_ptr_alu(insn, d, ptr, off_reg, off_is_dst)
                .map_err(|r| self.sanitize_err(insn, r, off_is_dst))??
        } else {
            None
        };
        match o {
            BPF_ADD => {}
            BPF_SUB if off_is_dst => {
                return self.err(format!("R{d} tried to subtract pointer from scalar"));
            }
            // JITs may not cope with a frame pointer moved by subtraction;
            // `r += -8` is the allowed form.
            BPF_SUB if ptr.ty == RegType::Stack => {
                return self.err(format!("R{d} subtraction from stack pointer prohibited"));
            }
            BPF_SUB => {}
            BPF_AND | BPF_OR | BPF_XOR => {
                return self.err(format!(
                    "R{d} bitwise operator {} on pointer prohibited",
                    op_name(o)
                ));
            }
            _ => {
                return self.err(format!(
                    "R{d} pointer arithmetic with {} operator prohibited",
                    op_name(o)
                ));
            }
        }
        let mut r = *ptr;
        r.precise = false;
        if known {
            let c = ov.const_value() as i64;
            let new_off = if o == BPF_ADD {
                ptr.off as i64 + c
            } else {
                ptr.off as i64 - c
            };
            if new_off.abs() >= MAX_VAR_OFF {
                return self.err(format!(
                    "{ts} pointer offset {new_off} is not allowed",
                    ts = ts()
                ));
            }
            r.off = new_off as i32;
        } else {
            let aop = if o == BPF_ADD { AluOp::Add } else { AluOp::Sub };
            let _ = r.v.alu(aop, &ov, false);
            if r.ty.is_pkt() {
                r.id = self.new_id();
                r.aux = 0;
            }
        }
        self.check_sane_offset(&r.v, r.off, false, ptr)?;
        if !self.caps.bypass_spec_v1 {
            self.sanitize_check_bounds(d, &r)?;
        }
        if let Some(info) = info {
            self.commit_alu_limit(&r, &info)
                .map_err(|reason| self.sanitize_err(insn, reason, off_is_dst))?;
        }
        *self.cur.reg_mut(d) = r;
        Ok(())
    }

    /// can_skip_alu_sanitation: only register operands are masked, and
    /// only while the instruction has no speculation barrier.
    fn can_skip_alu_sanitation(&self, insn: &Insn) -> bool {
        self.caps.bypass_spec_v1 || source(insn.code) == BPF_K || self.aux[self.insn_idx].nospec
    }

    /// sanitize_val_alu: scalar +/- scalar in a register marks the
    /// instruction as masking nothing, which every path must agree with.
    fn sanitize_val_alu(&mut self, insn: &Insn) -> VResult<()> {
        if self.can_skip_alu_sanitation(insn) {
            return Ok(());
        }
        self.update_alu_state(alu_state::NON_POINTER, 0)
            .map_err(|r| self.sanitize_err(insn, r, false))
    }

    /// update_alu_sanitation_state: the instruction's masking, the same on
    /// every path that reaches it.
    fn update_alu_state(&mut self, state: u8, limit: u32) -> Result<(), SanitizeReason> {
        if state == 0 {
            return Ok(());
        }
        let entry = self
            .alu_sanitation
            .entry(self.insn_idx)
            .or_insert((state, limit));
        if *entry != (state, limit) {
            return Err(SanitizeReason::Paths);
        }
        Ok(())
    }

    /// The first half of sanitize_ptr_alu, before the pointer moves: the
    /// offset's sign must be known and the pointer within its limit, and
    /// for an offset not known the path where masking truncates it to 0 (the
    /// pointer unmoved) is explored as speculative execution. Returns the
    /// masking to commit once the result is known (None: no masking, as for
    /// a constant operand or on a speculative path).
    fn sanitize_ptr_alu(
        &mut self,
        insn: &Insn,
        d: u8,
        ptr: &Reg,
        off_reg: &Reg,
        off_is_dst: bool,
    ) -> Result<VResult<Option<SanitizeInfo>>, SanitizeReason> {
        if self.can_skip_alu_sanitation(insn) {
            return Ok(Ok(None));
        }
        let ov = &off_reg.v;
        let off_is_imm = ov.is_const();
        let mut info = None;
        // A speculative path only looks for bad accesses: its masking was
        // set by the paths that really run.
        if !self.cur.speculative {
            if !off_is_imm && (ov.smin < 0) != (ov.smax < 0) {
                return Err(SanitizeReason::Bounds);
            }
            let off_is_neg = ov.smin < 0;
            let mask_to_left = (op(insn.code) == BPF_ADD) == off_is_neg;
            let limit = retrieve_ptr_limit(self, ptr, mask_to_left)?;
            let mut state = if off_is_dst {
                alu_state::SANITIZE_DST
            } else {
                alu_state::SANITIZE_SRC
            };
            if off_is_neg {
                state |= alu_state::NEG_VALUE;
            }
            if off_is_imm {
                state |= alu_state::IMMEDIATE;
            } else {
                // Scalars must now match exactly for pruning, so that paths
                // with other limits are explored.
                self.idmap.explore_alu_limits = true;
            }
            info = Some(SanitizeInfo {
                state,
                limit,
                mask_to_left,
            });
        }
        // A constant operand is rewritten as an immediate: nothing is
        // masked, so nothing is truncated.
        if off_is_imm {
            return Ok(Ok(info));
        }
        let mut unmoved = *ptr;
        if !off_is_dst {
            // The destination already took the pointer's type and lost its
            // 32-bit bounds when the kernel copies the state.
            unmoved.v.mark_unbounded32();
        }
        match self.push_speculative(self.insn_idx + 1, self.insn_idx) {
            Ok(st) => st.frame_mut().regs[d as usize] = unmoved,
            Err(e) if e.limit.is_some() => {
                let msg = format!(
                    "R{d} could not be pushed for speculative verification, {SANITIZE_ERR}"
                );
                self.log.line(&msg);
                return Ok(Err(crate::error::VerifyError::limit(
                    Some(self.insn_idx),
                    crate::Limit::JumpSequence,
                    msg,
                )));
            }
            Err(e) => return Ok(Err(e)),
        }
        Ok(Ok(info))
    }

    /// The second half of sanitize_ptr_alu: the masking window narrowed to
    /// how far the pointer moved, recorded for the instruction.
    fn commit_alu_limit(
        &mut self,
        result: &Reg,
        info: &SanitizeInfo,
    ) -> Result<(), SanitizeReason> {
        let limit = retrieve_ptr_limit(self, result, info.mask_to_left)?;
        let window = (info.limit.wrapping_sub(limit) as i32).unsigned_abs();
        self.update_alu_state(info.state, window)
    }

    /// sanitize_err: the message of a failed sanitation, always EACCES.
    fn sanitize_err(
        &self,
        insn: &Insn,
        reason: SanitizeReason,
        off_is_dst: bool,
    ) -> crate::error::VerifyError {
        let (d, s) = (insn.dst, insn.src);
        let op = if op(insn.code) == BPF_ADD {
            "add"
        } else {
            "sub"
        };
        let msg = match reason {
            SanitizeReason::Bounds => format!(
                "R{} has unknown scalar with mixed signed bounds, {SANITIZE_ERR}",
                if off_is_dst { d } else { s }
            ),
            SanitizeReason::Type => format!(
                "R{} has pointer with unsupported alu operation, {SANITIZE_ERR}",
                if off_is_dst { s } else { d }
            ),
            SanitizeReason::Paths => {
                format!("R{d} tried to {op} from different maps, paths or scalars, {SANITIZE_ERR}")
            }
            SanitizeReason::Limit => {
                format!("R{d} tried to {op} beyond pointer bounds, {SANITIZE_ERR}")
            }
        };
        crate::error::VerifyError::new(Some(self.insn_idx), msg)
    }

    /// Without CAP_PERFMON a moved stack or map value pointer must stay in
    /// bounds, so that its later accesses can be masked.
    fn sanitize_check_bounds(&mut self, d: u8, r: &Reg) -> VResult<()> {
        match r.ty {
            RegType::Stack => {
                if !r.v.is_const() {
                    return self.err(format!(
                        "R{d} variable stack access prohibited for !root, var_off={} off={}",
                        tnum_str(&r.v),
                        r.off as i64 + r.v.var_off.value as i64
                    ));
                }
                let off = r.off as i64 + r.v.const_value() as i64;
                if off >= 0 || off < -(crate::state::MAX_BPF_STACK as i64) {
                    return self.err(format!(
                        "R{d} stack pointer arithmetic goes out of range, prohibited for !root; off={}",
                        off as i32
                    ));
                }
            }
            RegType::MapValue => {
                let vs = self.map_def(r.map).map_or(0, |m| m.value_size);
                let inside = self
                    .check_region(d, r, r.off, 1, vs, "map value", "value_size")
                    .and_then(|()| self.check_map_fields(r, r.off, 1, false).map(|_| ()));
                if let Err(e) = inside {
                    if e.unsupported || e.limit.is_some() {
                        return Err(e);
                    }
                    self.log.also_before_error(e.msg);
                    return self.err(format!(
                        "R{d} pointer arithmetic of map value goes out of range, prohibited for !root"
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// check_reg_sane_offset: a constant, the register's fixed offset
    /// `off` (for a scalar, the delta of a linked `rX += const`) and the
    /// minimum of a variable offset must stay within BPF_MAX_VAR_OFF. Only
    /// the minimum is checked; a large maximum is caught later by the
    /// access itself.
    fn check_sane_offset(&self, v: &Scalar, off: i32, known: bool, ptr: &Reg) -> VResult<()> {
        // Only an error message needs the type name.
        let ts = || ptr.type_str();
        if known {
            let c = v.const_value() as i64;
            if c >= MAX_VAR_OFF || c <= -MAX_VAR_OFF {
                return self.err(format!(
                    "math between {ts} pointer and {c} is not allowed",
                    ts = ts()
                ));
            }
        }
        if off as i64 >= MAX_VAR_OFF || off as i64 <= -MAX_VAR_OFF {
            return self.err(format!(
                "{ts} pointer offset {off} is not allowed",
                ts = ts()
            ));
        }
        if v.smin == i64::MIN {
            return self.err(format!(
                "math between {ts} pointer and register with unbounded min value is not allowed",
                ts = ts()
            ));
        }
        if v.smin >= MAX_VAR_OFF || v.smin <= -MAX_VAR_OFF {
            return self.err(format!(
                "value {} makes {ts} pointer be out of bounds",
                v.smin,
                ts = ts()
            ));
        }
        Ok(())
    }
}

/// The tail of every sanitize_err message.
const SANITIZE_ERR: &str = "pointer arithmetic with it prohibited for !root";

/// The kinds of masking an instruction's aux records (BPF_ALU_* of the
/// kernel's bpf_verifier.h).
pub(crate) mod alu_state {
    pub const SANITIZE_SRC: u8 = 1 << 0;
    pub const SANITIZE_DST: u8 = 1 << 1;
    pub const NEG_VALUE: u8 = 1 << 2;
    pub const NON_POINTER: u8 = 1 << 3;
    pub const IMMEDIATE: u8 = 1 << 4;
}

/// Why Spectre v1 masking cannot be set up (the kernel's REASON_*; its
/// REASON_STACK, a failed push, is a limit here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SanitizeReason {
    Bounds,
    Type,
    Paths,
    Limit,
}

/// The masking worked out before a pointer moves (bpf_sanitize_info).
struct SanitizeInfo {
    state: u8,
    limit: u32,
    mask_to_left: bool,
}

/// retrieve_ptr_limit: how far a stack or map value pointer may move in
/// the masked direction; only those two types can be masked.
fn retrieve_ptr_limit(env: &Env, ptr: &Reg, mask_to_left: bool) -> Result<u32, SanitizeReason> {
    let fixed = ptr.off as i64 as u64;
    let (max, limit) = match ptr.ty {
        RegType::Stack if ptr.flags == 0 => (
            crate::state::MAX_BPF_STACK as u32 + mask_to_left as u32,
            ptr.v.var_off.value.wrapping_add(fixed).wrapping_neg() as u32,
        ),
        RegType::MapValue if ptr.flags == 0 => {
            let var = if mask_to_left {
                ptr.v.smin as u64
            } else {
                ptr.v.umax
            };
            (
                env.map_def(ptr.map).map_or(0, |m| m.value_size),
                var.wrapping_add(fixed) as u32,
            )
        }
        _ => return Err(SanitizeReason::Type),
    };
    if limit >= max {
        return Err(SanitizeReason::Limit);
    }
    Ok(limit)
}

pub fn tnum_str(v: &Scalar) -> String {
    format!("(0x{:x}; 0x{:x})", v.var_off.value, v.var_off.mask)
}
