//! Loads and stores (LDX, STX, ST, atomics, LD_IMM64, LD_ABS/IND): which
//! pointer may be dereferenced where, and what the access leaves in the
//! destination register or stack slot.

use crate::check_alu::tnum_str;
use crate::ctx::{sock_ptr_load_ok, SockPtr};
use crate::error::VResult;
use crate::explore::Env;
use crate::precision::encode_stack;
use crate::regs::{flag, Reg, RegType};
use crate::scalar::Scalar;
use crate::state::{SlotType, MAX_BPF_STACK, REG_SIZE};
use bpfvet_isa::opcode::*;
use bpfvet_isa::Insn;
use bpfvet_object::{MapInit, MapOrigin};

/// Programs may only read the map (BPF_F_RDONLY_PROG; libbpf sets it for
/// .rodata and .kconfig).
pub fn map_is_rdonly_prog(m: &bpfvet_object::MapDef) -> bool {
    m.map_flags & bpfvet_isa::uapi::BPF_F_RDONLY_PROG != 0
        || (m.frozen && matches!(m.origin, MapOrigin::GlobalData | MapOrigin::Kconfig))
}

/// What programs may do with a map's values (bpf_map_flags_to_cap):
/// (read, write).
fn map_prog_caps(m: &bpfvet_object::MapDef) -> (bool, bool) {
    if map_is_rdonly_prog(m) {
        (true, false)
    } else if m.map_flags & bpfvet_isa::uapi::BPF_F_WRONLY_PROG != 0 {
        (false, true)
    } else {
        (true, true)
    }
}

/// Pointers offsets and variable ranges are kept below 2^29.
const MAX_VAR_OFF: u64 = 1 << 29;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

impl Env<'_> {
    pub fn check_ldx(&mut self, insn: &Insn) -> VResult<()> {
        if (mode(insn.code) != BPF_MEM && mode(insn.code) != BPF_MEMSX) || insn.imm != 0 {
            return self.err("BPF_LDX uses reserved fields");
        }
        self.check_read(insn.src)?;
        self.check_write(insn.dst)?;
        let size = size_bytes(insn.code);
        let sx = mode(insn.code) == BPF_MEMSX;
        let src_ty = self.ptr_type_of(insn.src);
        self.check_mem_access(
            insn.src,
            insn.off as i32,
            size,
            Access::Read,
            Some(insn.dst),
            sx,
        )?;
        self.save_aux_ptr_type_merging(src_ty, true)
    }

    pub fn check_stx(&mut self, insn: &Insn) -> VResult<()> {
        self.check_read(insn.src)?;
        self.check_read(insn.dst)?;
        let size = size_bytes(insn.code);
        let dst_ty = self.ptr_type_of(insn.dst);
        self.check_mem_access(
            insn.dst,
            insn.off as i32,
            size,
            Access::Write,
            Some(insn.src),
            false,
        )?;
        self.save_aux_ptr_type(dst_ty)
    }

    pub fn check_st(&mut self, insn: &Insn) -> VResult<()> {
        self.check_read(insn.dst)?;
        let size = size_bytes(insn.code);
        let dst_ty = self.ptr_type_of(insn.dst);
        self.check_mem_access(insn.dst, insn.off as i32, size, Access::Write, None, false)?;
        self.save_aux_ptr_type(dst_ty)
    }

    /// One instruction may not dereference different pointer kinds on
    /// different paths (the kernel rewrites ctx accesses per insn).
    fn save_aux_ptr_type(&mut self, ty: (RegType, u16)) -> VResult<()> {
        self.save_aux_ptr_type_merging(ty, false)
    }

    /// save_aux_ptr_type of the pointer's type and flags before the access:
    /// the kernel compares whole types, flags included; a plain load
    /// (`merge_mem_btf`) may also go through memory or BTF pointers of
    /// any flags on different paths, all read by probe loads.
    fn save_aux_ptr_type_merging(
        &mut self,
        ty: (RegType, u16),
        merge_mem_btf: bool,
    ) -> VResult<()> {
        let idx = self.insn_idx;
        self.aux[idx].accesses = self.aux[idx].accesses.union(crate::AccessKinds::of(ty.0));
        let ctx_like = |t: RegType| {
            matches!(
                t,
                RegType::Ctx
                    | RegType::Sock
                    | RegType::SockCommon
                    | RegType::TcpSock
                    | RegType::Arena
            ) || t.is_btf_id()
        };
        match self.aux[idx].ptr_type {
            None => self.aux[idx].ptr_type = Some(ty),
            Some(prev) if prev != ty && (ctx_like(prev.0) || ctx_like(ty.0)) => {
                let mem_or_btf = |t: RegType| t == RegType::Mem || t.is_btf_id();
                if !(merge_mem_btf && mem_or_btf(prev.0) && mem_or_btf(ty.0)) {
                    return self.err("same insn cannot be used with different pointers");
                }
                self.aux[idx].ptr_type = Some((RegType::Mem, 0));
            }
            _ => {}
        }
        Ok(())
    }

    fn ptr_type_of(&self, regno: u8) -> (RegType, u16) {
        let r = self.cur.reg(regno);
        (r.ty, r.flags)
    }

    pub fn check_atomic(&mut self, insn: &Insn) -> VResult<()> {
        let size = size_bytes(insn.code);
        let imm = insn.imm;
        let known = matches!(
            imm,
            x if x == BPF_ADD as i32 || x == BPF_ADD as i32 | BPF_FETCH
                || x == BPF_AND as i32 || x == BPF_AND as i32 | BPF_FETCH
                || x == BPF_OR as i32 || x == BPF_OR as i32 | BPF_FETCH
                || x == BPF_XOR as i32 || x == BPF_XOR as i32 | BPF_FETCH
                || x == BPF_XCHG || x == BPF_CMPXCHG
        );
        if imm == BPF_LOAD_ACQ || imm == BPF_STORE_REL {
            return self.check_acquire_release(insn);
        }
        if !known {
            return self.err(format!("BPF_ATOMIC uses invalid atomic opcode {imm:02x}"));
        }
        if size != 4 && size != 8 {
            return self.err("invalid atomic operand size");
        }
        self.check_read(insn.src)?;
        self.check_read(insn.dst)?;
        if imm == BPF_CMPXCHG {
            self.check_read(0)?;
        }
        // A loader without CAP_PERFMON may not store pointers this way.
        if !self.caps.allow_ptr_leaks {
            for r in [0, insn.src] {
                if (r == insn.src || imm == BPF_CMPXCHG) && self.cur.reg(r).is_pointer() {
                    return self.err(format!("R{r} leaks addr into mem"));
                }
            }
        }
        let dreg = *self.cur.reg(insn.dst);
        // The x86-64 JIT has no guarded form of the fetching bitwise atomics.
        let fetch_bitwise = imm & BPF_FETCH != 0
            && [BPF_AND, BPF_OR, BPF_XOR].contains(&((imm & !BPF_FETCH) as u8));
        if no_atomics_through(dreg.ty) || (dreg.ty == RegType::Arena && fetch_bitwise) {
            return self.err(format!(
                "BPF_ATOMIC stores into R{} {} is not allowed",
                insn.dst,
                dreg.type_str()
            ));
        }
        // The fetched register is written before memory is read: it
        // becomes unknown, then takes what a fill of that memory gives
        // (a zeroed or constant stack slot gives its value).
        let load_reg = if imm & BPF_FETCH != 0 {
            let r = if imm == BPF_CMPXCHG { 0 } else { insn.src };
            self.check_write(r)?;
            self.set_unknown(r);
            Some(r)
        } else {
            None
        };
        let off = insn.off as i32;
        // Atomics are held to alignment whatever the program's flags.
        self.check_ptr_alignment(insn.dst, off, size, true)?;
        self.check_mem_access(insn.dst, off, size, Access::Read, None, false)?;
        if let Some(r) = load_reg {
            self.check_mem_access(insn.dst, off, size, Access::Read, Some(r), false)?;
        }
        let dst_ty = self.ptr_type_of(insn.dst);
        self.save_aux_ptr_type(dst_ty)?;
        self.check_ptr_alignment(insn.dst, off, size, true)?;
        self.check_mem_access(insn.dst, off, size, Access::Write, None, false)
    }

    /// Load-acquire and store-release (any width): a load or store held to
    /// strict alignment, then refused through pointers the JIT cannot
    /// order (ctx, packet, flow keys, sockets). The kernel looks at the
    /// pointer register after the access, so a load-acquire into its own
    /// address register passes that test.
    fn check_acquire_release(&mut self, insn: &Insn) -> VResult<()> {
        let size = size_bytes(insn.code);
        let off = insn.off as i32;
        let load = insn.imm == BPF_LOAD_ACQ;
        let (ptr, value) = if load {
            self.check_read(insn.src)?;
            self.check_write(insn.dst)?;
            (insn.src, insn.dst)
        } else {
            self.check_read(insn.src)?;
            self.check_read(insn.dst)?;
            (insn.dst, insn.src)
        };
        let ptr_ty = self.ptr_type_of(ptr);
        self.check_ptr_alignment(ptr, off, size, true)?;
        let access = if load { Access::Read } else { Access::Write };
        self.check_mem_access(ptr, off, size, access, Some(value), false)?;
        self.save_aux_ptr_type(ptr_ty)?;
        let now = *self.cur.reg(ptr);
        if no_atomics_through(now.ty) {
            let verb = if load { "loads from" } else { "stores into" };
            return self.err(format!(
                "BPF_ATOMIC {verb} R{ptr} {} is not allowed",
                now.type_str()
            ));
        }
        Ok(())
    }

    /// The program was loaded with BPF_F_STRICT_ALIGNMENT and not
    /// BPF_F_ANY_ALIGNMENT (which wins). Without the flag, x86-64 (which
    /// has efficient unaligned access) checks alignment only where an
    /// access demands it.
    pub(crate) fn strict_alignment(&self) -> bool {
        use bpfvet_isa::uapi::{BPF_F_ANY_ALIGNMENT, BPF_F_STRICT_ALIGNMENT};
        let flags = self.prog.prog_flags;
        flags & BPF_F_STRICT_ALIGNMENT != 0 && flags & BPF_F_ANY_ALIGNMENT == 0
    }

    /// check_ptr_alignment: `size` bytes at `off` from the pointer in
    /// `regno` must be aligned to `size`, its variable offset included,
    /// when the program asks for strict alignment, when the access does
    /// (`strict_once`: atomics, aligned helper memory), and always on the
    /// stack (spill tracking relies on it). Packets are checked as if
    /// they started 2 bytes past an aligned address (NET_IP_ALIGN). The
    /// region's name goes by the whole type: a flagged pointer (maybe
    /// null, read-only ...) is named by none.
    pub(crate) fn check_ptr_alignment(
        &self,
        regno: u8,
        off: i32,
        size: u32,
        strict_once: bool,
    ) -> VResult<()> {
        let reg = self.cur.reg(regno);
        let mut strict = strict_once || self.strict_alignment();
        let plain = reg.flags == 0;
        let (desc, ip_align) = match reg.ty {
            RegType::Arena => return Ok(()),
            RegType::Packet | RegType::PacketMeta if plain => ("packet ", Some(2)),
            RegType::FlowKeys if plain => ("flow keys ", None),
            RegType::MapKey if plain => ("key ", None),
            RegType::MapValue if plain => ("value ", None),
            RegType::Ctx if plain => ("context ", None),
            RegType::Stack if plain => {
                strict = true;
                ("stack ", None)
            }
            RegType::Sock if plain => ("sock ", None),
            RegType::SockCommon if plain => ("sock_common ", None),
            RegType::TcpSock if plain => ("tcp_sock ", None),
            _ => ("", None),
        };
        if !strict || size == 1 {
            return Ok(());
        }
        let fixed = ip_align.unwrap_or(0) + reg.off as i64 + off as i64;
        let total = reg.v.var_off + crate::tnum::Tnum::constant(fixed as u64);
        if total.is_aligned(size as u64) {
            return Ok(());
        }
        let head = match ip_align {
            Some(a) => format!("{a}+"),
            None => String::new(),
        };
        self.err(format!(
            "misaligned {desc}access off {head}{}+{}+{} size {size}",
            var_off_str(&reg.v),
            reg.off,
            off
        ))
    }

    /// A read or write of `size` bytes at `off` into a value of `map` must
    /// be one the map allows programs (check_map_access_type).
    pub(crate) fn check_map_access_type(
        &self,
        map: u32,
        off: i32,
        size: u32,
        access: Access,
    ) -> VResult<()> {
        let Some(m) = self.map_def(map) else {
            return Ok(());
        };
        let (can_read, can_write) = map_prog_caps(m);
        let what = match access {
            Access::Write if !can_write => "write into",
            Access::Read if !can_read => "read from",
            _ => return Ok(()),
        };
        self.err(format!(
            "{what} map forbidden, value_size={} off={off} size={size}",
            m.value_size
        ))
    }

    pub fn check_ld_imm(&mut self, insn: &Insn) -> VResult<()> {
        if insn.code != BPF_LD | BPF_IMM | BPF_DW {
            return self.err("invalid BPF_LD_IMM insn");
        }
        let next = self
            .insns
            .get(self.insn_idx + 1)
            .copied()
            .unwrap_or_default();
        if insn.off != 0 {
            return self.err("BPF_LD_IMM64 uses reserved fields");
        }
        self.check_write(insn.dst)?;
        let d = insn.dst;
        match insn.src {
            0 => {
                let v = (insn.imm as u32 as u64) | ((next.imm as u32 as u64) << 32);
                *self.cur.reg_mut(d) = Reg::known(v);
            }
            BPF_PSEUDO_FUNC => {
                let target = (self.insn_idx as i64 + insn.imm as i64 + 1) as usize;
                let sub = self.cfg.subprog_at(target).unwrap_or(0);
                // Callbacks are known static only from BTF func_info.
                match self.prog.func_info.get(sub) {
                    None => return self.err("missing btf func_info"),
                    Some(f) if f.linkage != 0 => return self.err("callback function not static"),
                    Some(_) => {}
                }
                let mut r = Reg::pointer(RegType::Func);
                r.aux = sub as u32;
                *self.cur.reg_mut(d) = r;
            }
            BPF_PSEUDO_MAP_IDX
            | BPF_PSEUDO_MAP_IDX_VALUE
            | BPF_PSEUDO_MAP_FD
            | BPF_PSEUDO_MAP_VALUE => {
                let idx = insn.imm as u32 as usize;
                let Some(map) = self.obj.maps.get(idx) else {
                    return self.err(format!("fd {} is not pointing to valid bpf_map", insn.imm));
                };
                let value =
                    insn.src == BPF_PSEUDO_MAP_IDX_VALUE || insn.src == BPF_PSEUDO_MAP_VALUE;
                if value && map.map_type == bpfvet_isa::uapi::MapType::ARENA {
                    // An arena global's address is a plain number (its
                    // offset was checked with the program's maps): the
                    // program casts it into the arena's address space.
                    self.set_unknown(d);
                    return Ok(());
                }
                let mut r = if value {
                    let off = next.imm as u32;
                    if off >= map.value_size.max(1) && off != 0 {
                        return self.err(format!(
                            "invalid access to map value pointer, value_size={} off={}",
                            map.value_size, off
                        ));
                    }
                    let mut r = Reg::pointer(RegType::MapValue);
                    r.off = off as i32;
                    r
                } else {
                    Reg::pointer(RegType::MapPtr)
                };
                r.map = idx as u32;
                *self.cur.reg_mut(d) = r;
            }
            BPF_PSEUDO_BTF_ID => {
                *self.cur.reg_mut(d) =
                    crate::ksym::pseudo_btf_id(self.insn_idx, insn.imm as u32, next.imm)?;
            }
            _ => return self.err("unrecognized bpf_ld_imm64 insn"),
        }
        Ok(())
    }

    pub fn check_ld_abs(&mut self, insn: &Insn) -> VResult<()> {
        use bpfvet_isa::uapi::ProgType as P;
        if !matches!(
            self.prog_type,
            P::SOCKET_FILTER | P::SCHED_CLS | P::SCHED_ACT
        ) {
            return self.err("BPF_LD_[ABS|IND] instructions not allowed for this program type");
        }
        if insn.dst != 0
            || insn.off != 0
            || size_bytes(insn.code) == 8
            || (mode(insn.code) == BPF_ABS && insn.src != 0)
        {
            return self.err("BPF_LD_[ABS|IND] uses reserved fields");
        }
        self.check_read(6)?;
        // The load may end the program (see below).
        self.check_resource_leak("BPF_LD_[ABS|IND]", true)?;
        if self.cur.reg(6).ty != RegType::Ctx {
            return self.err("at the time of BPF_LD_ABS|IND R6 != pointer to skb");
        }
        if mode(insn.code) == BPF_IND {
            self.check_read(insn.src)?;
        }
        let r6 = *self.cur.reg(6);
        self.check_ctx_ptr_off(6, &r6)?;
        for r in 1..=5 {
            *self.cur.reg_mut(r) = Reg::not_init();
        }
        // The loaded value is unknown to the kernel, whatever the load's
        // size: no range is given.
        self.set_unknown(0);
        // A failed load returns 0 from the whole function: in a subprogram
        // the loaded value continues on a queued branch and this path
        // returns 0 to the caller.
        if self.cur.curframe() > 0 {
            let idx = self.insn_idx;
            self.push_stack(idx + 1, idx)?;
            *self.cur.reg_mut(0) = Reg::known(0);
            self.update_live_stack();
            self.prepare_func_exit()?;
            // The caller's loop steps past the call site.
            self.insn_idx = self.insn_idx.wrapping_sub(1);
        }
        Ok(())
    }

    /// The rest of check_map_access: no load, store or helper access may
    /// touch any byte of a special field (lock, timer, ...), except a kptr
    /// by a load or store (`direct`) of exactly its 8 bytes. Returns the
    /// kptr field such an access hits.
    pub fn check_map_fields(
        &self,
        reg: &Reg,
        off: i32,
        size: u32,
        direct: bool,
    ) -> VResult<Option<crate::map_record::Field>> {
        let lo = reg.v.smin as i128 + off as i128;
        let hi = reg.v.umax as i128 + off as i128 + size as i128;
        let mut hit = None;
        for f in self.map_fields(reg.map) {
            let p = f.off as i128;
            if !(lo < p + f.size as i128 && p < hi) {
                continue;
            }
            let name = f.name;
            if f.kptr.is_none() {
                return self.err(format!("{name} cannot be accessed directly by load/store"));
            }
            if !direct {
                return self.err(format!("{name} cannot be accessed indirectly by helper"));
            }
            if !reg.v.is_const() {
                return self.err(format!("{name} access cannot have variable offset"));
            }
            let at = off as i128 + reg.v.const_value() as i128;
            if p != at {
                return self.err(format!("{name} access misaligned expected={p} off={at}"));
            }
            if size != 8 {
                return self.err(format!("{name} access size must be BPF_DW"));
            }
            hit = Some(*f);
        }
        Ok(hit)
    }

    /// check_mem_access: `regno` + `off` dereferenced for `size` bytes.
    /// On a read, `value` receives the loaded value; on a write it is the
    /// stored register (None for BPF_ST, which stores insn.imm).
    pub fn check_mem_access(
        &mut self,
        regno: u8,
        off: i32,
        size: u32,
        access: Access,
        value: Option<u8>,
        sx: bool,
    ) -> VResult<()> {
        self.check_ptr_alignment(regno, off, size, false)?;
        let reg = *self.cur.reg(regno);
        let off = off.wrapping_add(reg.off);
        if reg.ty != RegType::Scalar && reg.maybe_null() {
            return self.err(format!("R{regno} invalid mem access '{}'", reg.type_str()));
        }
        match reg.ty {
            RegType::Stack => self.stack_access(regno, &reg, off, size, access, value)?,
            // Any offset and size: the JIT guards every arena access.
            RegType::Arena => {
                if let (Access::Read, Some(d)) = (access, value) {
                    self.set_unknown(d);
                }
            }
            RegType::MapValue => {
                self.check_leak(access, value, "map")?;
                self.check_map_access_type(reg.map, off, size, access)?;
                let vs = self.map_def(reg.map).map_or(0, |m| m.value_size);
                self.check_region(regno, &reg, off, size, vs, "map value", "value_size")?;
                if let Some(f) = self.check_map_fields(&reg, off, size, true)? {
                    self.check_map_kptr_access(&f, value)?;
                } else if access == Access::Read {
                    if let Some(d) = value {
                        let v = self.direct_map_read(&reg, off, size);
                        *self.cur.reg_mut(d) = match v {
                            Some(c) => Reg::known(c),
                            None => Reg::unknown_scalar(),
                        };
                    }
                }
            }
            RegType::MapKey => {
                if access == Access::Write {
                    return self.err(format!("write to change key R{regno} not allowed"));
                }
                let ks = self.map_def(reg.map).map_or(0, |m| m.key_size);
                self.check_region(regno, &reg, off, size, ks, "map key", "key_size")?;
                if access == Access::Read {
                    if let Some(d) = value {
                        self.set_unknown(d);
                    }
                }
            }
            RegType::Buf => {
                if access == Access::Write && reg.flags & flag::RDONLY != 0 {
                    return self.err(format!("R{regno} cannot write into {}", reg.type_str()));
                }
                self.check_buffer_access(regno, &reg, off, size)?;
                if let (Access::Read, Some(d)) = (access, value) {
                    self.set_unknown(d);
                }
            }
            RegType::Mem | RegType::TpBuffer => {
                if access == Access::Write && reg.flags & flag::RDONLY != 0 {
                    return self.err(format!("R{regno} cannot write into {}", reg.type_str()));
                }
                if reg.ty == RegType::Mem {
                    self.check_leak(access, value, "mem")?;
                }
                // Read-only untrusted memory is read through probe loads:
                // no bounds.
                let probed =
                    reg.flags & (flag::RDONLY | flag::UNTRUSTED) == flag::RDONLY | flag::UNTRUSTED;
                if reg.ty == RegType::Mem {
                    if !probed {
                        self.check_region(regno, &reg, off, size, reg.aux, "memory", "mem_size")?;
                    }
                } else {
                    // The buffer's size is checked when the program is
                    // attached; loading only wants a constant, non-negative
                    // offset (check_tp_buffer_access).
                    if off < 0 {
                        return self.err(format!(
                            "R{regno} invalid tracepoint buffer access: off={off}, size={size}"
                        ));
                    }
                    if !reg.v.is_const() || reg.v.const_value() != 0 {
                        return self.err(format!(
                            "R{regno} invalid variable buffer offset: off={off}, var_off={}",
                            tnum_str(&reg.v)
                        ));
                    }
                }
                if access == Access::Read {
                    if let Some(d) = value {
                        self.set_unknown(d);
                    }
                }
            }
            RegType::Packet | RegType::PacketMeta => {
                if access == Access::Write
                    && !crate::ctx::packet::direct_write_allowed(self.prog_type)
                {
                    return self.err(crate::ctx::packet::CANNOT_WRITE_INTO_PACKET);
                }
                self.check_leak(access, value, "packet")?;
                self.packet_access(regno, &reg, off, size)?;
                if access == Access::Read {
                    if let Some(d) = value {
                        self.set_unknown(d);
                    }
                }
            }
            RegType::Ctx => {
                // Context loads and stores, by program type (ctx tables).
                self.check_leak(access, value, "ctx")?;
                self.check_ctx_ptr_off(regno, &reg)?;
                let field = crate::ctx_glue::ctx_field(self, off, size, access, sx)?;
                if let (Access::Read, Some(d)) = (access, value) {
                    *self.cur.reg_mut(d) = field;
                }
            }
            RegType::FlowKeys => {
                self.check_leak(access, value, "flow keys")?;
                if off < 0 || off as u32 + size > 56 {
                    return self.err(format!("invalid access to flow keys off={off} size={size}"));
                }
                if access == Access::Read {
                    if let Some(d) = value {
                        self.set_unknown(d);
                    }
                }
            }
            RegType::Sock | RegType::SockCommon | RegType::TcpSock => {
                if access == Access::Write {
                    return self.err(format!("R{regno} cannot write into {}", reg.type_str()));
                }
                if !reg.v.is_const() {
                    return self.err(format!(
                        "R{regno} variable {} access var_off={} disallowed",
                        reg.type_str(),
                        tnum_str(&reg.v)
                    ));
                }
                if reg.v.smin < 0 {
                    return self.err(format!(
                        "R{regno} min value is negative, either use unsigned index or do a if (index >=0) check."
                    ));
                }
                let kind = match reg.ty {
                    RegType::Sock => SockPtr::Sock,
                    RegType::SockCommon => SockPtr::SockCommon,
                    _ => SockPtr::TcpSock,
                };
                if !sock_ptr_load_ok(kind, off, size) {
                    return self.err(format!(
                        "R{regno} invalid {} access off={off} size={size}",
                        reg.ty.name()
                    ));
                }
                if let Some(d) = value {
                    self.set_unknown(d);
                }
            }
            t if t.is_btf_id() && !self.caps.allow_ptr_leaks => {
                // Kernel structs are named from vmlinux BTF, allocated
                // objects from the program's.
                let btf = match reg.ty {
                    RegType::BtfId => crate::btf_walk::vmlinux(),
                    _ => self.obj.btf.as_ref(),
                };
                let tname = btf.filter(|_| reg.aux != 0).map(|btf| btf.name_of(reg.aux));
                return match tname {
                    Some(tname) => self.err(format!(
                        "'struct {tname}' access is allowed only to CAP_PERFMON and CAP_SYS_ADMIN"
                    )),
                    None => self.unsupported(
                        "access through a BTF pointer by a loader without CAP_PERFMON",
                    ),
                };
            }
            RegType::Alloc => self.alloc_access(regno, &reg, off, size, access, value)?,
            RegType::LocalBtfId => {
                let r = self.local_btf_access(regno, &reg, off, size, access)?;
                if let (Access::Read, Some(d)) = (access, value) {
                    *self.cur.reg_mut(d) = r;
                }
            }
            RegType::BtfId => {
                let mut r = self.btf_load(regno, &reg, off, size, access)?;
                if r.maybe_null() {
                    r.id = self.new_id();
                }
                // On a write (struct_ops programs), `value` is the source.
                if let (Access::Read, Some(d)) = (access, value) {
                    *self.cur.reg_mut(d) = r;
                }
            }
            RegType::MapPtr => {
                // check_ptr_to_map_access: fields of the map's kernel struct,
                // read through vmlinux BTF.
                let name = self
                    .map_def(reg.map)
                    .and_then(|m| map_kernel_struct(m.map_type));
                let Some(name) = name else {
                    return Err(crate::error::VerifyError::unsupported(
                        Some(self.insn_idx),
                        "access through a map pointer of this map type".into(),
                    ));
                };
                if !self.caps.allow_ptr_leaks {
                    return self.err(format!(
                        "'struct {name}' access is allowed only to CAP_PERFMON and CAP_SYS_ADMIN"
                    ));
                }
                if off < 0 {
                    return self.err(format!(
                        "R{regno} is {name} invalid negative access: off={off}"
                    ));
                }
                if access != Access::Read {
                    return self.err(format!("only read from {name} is supported"));
                }
                // Read as through a plain BTF pointer to that struct.
                let id = crate::btf_walk::vmlinux()
                    .and_then(|btf| btf.find_by_name_kind(name, bpfvet_object::btf::Kind::Struct));
                let Some(id) = id else {
                    return Err(crate::error::VerifyError::unsupported(
                        Some(self.insn_idx),
                        format!("loads of struct {name} fields without vmlinux BTF"),
                    ));
                };
                let mut as_btf = Reg::pointer(RegType::BtfId);
                as_btf.aux = id;
                let mut r = self.btf_load(regno, &as_btf, off, size, access)?;
                if r.maybe_null() {
                    r.id = self.new_id();
                }
                if let Some(d) = value {
                    *self.cur.reg_mut(d) = r;
                }
            }
            _ => {
                return self.err(format!("R{regno} invalid mem access '{}'", reg.type_str()));
            }
        }
        if access == Access::Read {
            if let Some(d) = value {
                let idx = self.insn_idx;
                let r = self.cur.reg_mut(d);
                if r.ty == RegType::Scalar && size < 8 {
                    if sx {
                        r.v.coerce_to_size_sx(size as u8);
                    } else {
                        self.alu_memo.coerce_to_size(idx, &mut r.v, size as u8);
                    }
                }
            }
        }
        Ok(())
    }

    /// A load from a frozen read-only global-data map at a constant offset
    /// gives the constant (bpf_map_direct_read).
    fn direct_map_read(&self, reg: &Reg, off: i32, size: u32) -> Option<u64> {
        let m = self.map_def(reg.map)?;
        if !(m.frozen && map_is_rdonly_prog(m) && reg.v.is_const()) {
            return None;
        }
        let MapInit::Data(bytes) = &m.init else {
            return None;
        };
        let start = (off as i64 + reg.v.const_value() as i64) as usize;
        let b = bytes.get(start..start + size as usize)?;
        let mut v = [0u8; 8];
        v[..size as usize].copy_from_slice(b);
        Some(u64::from_le_bytes(v))
    }

    /// Bounds of a fixed-size region (map value, key, helper memory) with
    /// the pointer's variable offset (check_mem_region_access). Constant
    /// offsets take the same path: the failing bound's "invalid access to
    /// ..." line is logged, and the error is the line naming the bound.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn check_region(
        &mut self,
        regno: u8,
        reg: &Reg,
        off: i32,
        size: u32,
        region: u32,
        what: &str,
        size_name: &str,
    ) -> VResult<()> {
        let v = &reg.v;
        let offl = off as i64;
        // No caller allows an empty access here (__check_mem_access with
        // zero_size_allowed off: a helper's empty span got through before).
        let fits = |o: i64| o >= 0 && size > 0 && o + size as i64 <= region as i64;
        if v.smin < 0
            && (v.smin == i64::MIN
                || offl + v.smin != (offl + v.smin) as i32 as i64
                || v.smin + offl < 0)
        {
            return self.err(format!(
                "R{regno} min value is negative, either use unsigned index or do a if (index >=0) check."
            ));
        }
        // The kernel prints the offset as a C int.
        let out_of_range = |o: i64, bound: &str| {
            self.log.before_error(format!(
                "invalid access to {what}, {size_name}={region} off={} size={size}",
                o as i32
            ));
            self.err(format!(
                "R{regno} {bound} value is outside of the allowed memory range"
            ))
        };
        let lo = v.smin + offl;
        if !fits(lo) {
            return out_of_range(lo, "min");
        }
        if v.umax >= MAX_VAR_OFF {
            return self.err(format!(
                "R{regno} unbounded memory access, make sure to bounds check any such access"
            ));
        }
        let hi = v.umax as i64 + offl;
        if !fits(hi) {
            return out_of_range(hi, "max");
        }
        Ok(())
    }

    pub(crate) fn packet_access(
        &mut self,
        regno: u8,
        reg: &Reg,
        off: i32,
        size: u32,
    ) -> VResult<()> {
        if reg.v.smin < 0 {
            return self.err(format!(
                "R{regno} min value is negative, either use unsigned index or do a if (index >=0) check."
            ));
        }
        let range = reg.aux as i32;
        let in_range = off >= 0 && size > 0 && (off as i64 + size as i64) <= range as i64;
        if range >= 0 && !in_range {
            self.log.before_error(format!(
                "invalid access to packet, off={off} size={size}, R{regno}(id={},off={off},r={range})",
                reg.id
            ));
        }
        if range < 0 || !in_range || reg.v.umax >= MAX_VAR_OFF {
            return self.err(format!("R{regno} offset is outside of the packet"));
        }
        Ok(())
    }

    /// check_stack_slot_within_bounds: the lowest offset an access may
    /// touch. Without CAP_PERFMON reads stay within the stack written so
    /// far, at a constant or (once mitigations are off) variable offset.
    fn stack_min_valid(&self, frameno: usize, access: Access) -> i64 {
        if access == Access::Write || self.caps.allow_uninit_stack {
            -(MAX_BPF_STACK as i64)
        } else {
            -((self.cur.frames[frameno].stack.len() * REG_SIZE) as i64)
        }
    }

    /// Stack access at a fixed or variable offset.
    fn stack_access(
        &mut self,
        regno: u8,
        reg: &Reg,
        off: i32,
        size: u32,
        access: Access,
        value: Option<u8>,
    ) -> VResult<()> {
        let v = &reg.v;
        let frameno = reg.frameno as usize;
        if v.is_const() {
            let o = off as i64 + v.const_value() as i64;
            let min_valid = self.stack_min_valid(frameno, access);
            if o < min_valid || o + size as i64 > 0 {
                let what = if access == Access::Write {
                    "write to"
                } else {
                    "read from"
                };
                return self.err(format!("invalid {what} stack R{regno} off={o} size={size}"));
            }
            let o = o as i32;
            self.log.scratch_stack(o as i64, o as i64 + 1);
            self.note_stack_depth(frameno, (-o) as u32);
            // Reads grow the allocated stack too (root may read
            // uninitialised stack), which states_equal compares.
            self.cur.frames[frameno].grow_stack((-o) as usize);
            let (lo, hi) = (o as i64, o as i64 + size as i64);
            match access {
                Access::Write => self.note_stack_write(frameno, lo, hi),
                Access::Read => self.note_stack_read(frameno, lo, hi),
            }
            return match access {
                Access::Write => self.stack_write_fixed(frameno, o, size, value),
                Access::Read => self.stack_read_fixed(frameno, o, size, value),
            };
        }
        let what = if access == Access::Write {
            "write to"
        } else {
            "read from"
        };
        // check_stack_access_within_bounds: bounds past 2^29 either way
        // are "unbounded", before the range is looked at.
        let max_var_off = crate::check_alu::MAX_VAR_OFF;
        if v.smax >= max_var_off || v.smin <= -max_var_off {
            return self.err(format!(
                "invalid unbounded variable-offset {what} stack R{regno}"
            ));
        }
        let min = off as i64 + v.smin;
        let max = off as i64 + v.smax;
        let min_valid = self.stack_min_valid(frameno, access);
        if min < min_valid || max + size as i64 > 0 {
            return self.err(format!(
                "invalid variable-offset {what} stack R{regno} var_off={} off={} size={}",
                tnum_str(v),
                off,
                size
            ));
        }
        // check_stack_read: a read into no register (an atomic's first
        // read) must be at a constant offset.
        if access == Access::Read && value.is_none() {
            return self.err(format!(
                "variable offset stack pointer cannot be passed into helper function; var_off={} off={off} size={size}",
                tnum_str(v)
            ));
        }
        self.log.scratch_stack(min, max + size as i64);
        self.note_stack_depth(frameno, (-min) as u32);
        // A variable-offset write may miss any one slot: it kills none
        // (and reads none).
        if access == Access::Read {
            self.note_stack_read(frameno, min, max + size as i64);
        }
        self.cur.frames[frameno].grow_stack((-min) as usize);
        match access {
            Access::Write => {
                for b in (min..max + size as i64).step_by(REG_SIZE) {
                    self.destroy_if_dynptr_stack_slot(frameno, ((-b - 1) as usize) / REG_SIZE)?;
                }
                let last = max + size as i64 - 1;
                self.destroy_if_dynptr_stack_slot(frameno, ((-last - 1) as usize) / REG_SIZE)?;
                self.check_var_off_write_slots(frameno, min, max + size as i64)?;
                return self.stack_write_var_off(frameno, min, max + size as i64, value);
            }
            Access::Read => {
                // check_stack_range_initialized: every byte the read may
                // touch is data, zero, uninitialised for a loader that may
                // read it, or in a slot holding a spill readable here
                // (by its last byte's type, as the kernel looks).
                let fr = &self.cur.frames[frameno];
                let readable = |b: i64| {
                    let slot = (-b - 1) as usize;
                    let s = &fr.stack[slot / REG_SIZE];
                    match s.types[slot % REG_SIZE] {
                        SlotType::Misc | SlotType::Zero => true,
                        SlotType::Invalid if self.caps.allow_uninit_stack => true,
                        _ => {
                            s.is_spill()
                                && (s.spilled.ty == RegType::Scalar || self.caps.allow_ptr_leaks)
                        }
                    }
                };
                if let Some(b) = (min..max + size as i64).find(|&b| !readable(b)) {
                    return self.err(format!(
                        "invalid read from stack R{regno} var_off {}+{} size {size}",
                        tnum_str(v),
                        b - min
                    ));
                }
            }
        }
        let fr = &mut self.cur.frames[frameno];
        let mut all_zero = true;
        for b in min..max + size as i64 {
            let slot = (-b - 1) as usize;
            let (spi, bi) = (slot / REG_SIZE, slot % REG_SIZE);
            let s = &mut fr.stack[spi];
            if access == Access::Read && s.types[bi] != SlotType::Zero {
                all_zero = false;
            }
        }
        if access == Access::Read {
            if let Some(d) = value {
                *self.cur.reg_mut(d) = if all_zero {
                    Reg::known(0)
                } else {
                    Reg::unknown_scalar()
                };
            }
        }
        Ok(())
    }

    /// check_stack_write_var_off's marking of the bytes `lo..hi` it may
    /// write, byte by byte as the kernel goes: a zero keeps zeroed bytes and
    /// spilled zero scalars; any other byte becomes data and a spill,
    /// iterator or irq flag in its slot is scrubbed whole (dynptrs were
    /// destroyed before).
    fn stack_write_var_off(
        &mut self,
        frameno: usize,
        lo: i64,
        hi: i64,
        value: Option<u8>,
    ) -> VResult<()> {
        let insn = self.insns[self.insn_idx];
        let writing_zero = match value {
            Some(r) => self.cur.reg(r).is_null_const(),
            None => insn.class() == BPF_ST && insn.imm == 0,
        };
        let mut zero_used = false;
        let fr = &mut self.cur.frames[frameno];
        for b in lo..hi {
            let slot = (-b - 1) as usize;
            let (spi, bi) = (slot / REG_SIZE, slot % REG_SIZE);
            let s = &mut fr.stack[spi];
            if writing_zero
                && s.types[bi] == SlotType::Spill
                && s.is_spill()
                && s.spilled.ty == RegType::Scalar
                && s.spilled.v.is_const()
                && s.spilled.v.const_value() == 0
            {
                zero_used = true;
                continue;
            }
            // The slot's spill is scrubbed whole, as at a constant offset
            // (6.18.44; 6.18.15 left the spill's other bytes in place).
            s.scrub_special();
            s.types[bi] = if writing_zero && s.types[bi] == SlotType::Zero {
                zero_used = true;
                SlotType::Zero
            } else {
                SlotType::Misc
            };
        }
        if zero_used {
            if let Some(v) = value {
                self.mark_chain_precision(v)?;
            }
        }
        Ok(())
    }

    /// check_stack_write_var_off: without CAP_PERFMON a variable-offset
    /// write (possible once mitigations are off) may cover only written
    /// data bytes, since it would erase spilled pointers it might miss;
    /// the first byte in `lo..hi` that is not is named.
    fn check_var_off_write_slots(&self, frameno: usize, lo: i64, hi: i64) -> VResult<()> {
        let fr = &self.cur.frames[frameno];
        for b in lo..hi {
            let slot = (-b - 1) as usize;
            let ty = fr.stack[slot / REG_SIZE].types[slot % REG_SIZE];
            if !self.caps.allow_ptr_leaks && !matches!(ty, SlotType::Misc | SlotType::Zero) {
                return self.err(format!(
                    "spilled ptr in range of var-offset stack write; insn {}, ptr off: {b}",
                    self.insn_idx
                ));
            }
            if ty == SlotType::Invalid && !self.caps.allow_uninit_stack {
                return self.err(format!(
                    "uninit stack in range of var-offset write prohibited for !root; insn {}, off: {b}",
                    self.insn_idx
                ));
            }
        }
        Ok(())
    }

    /// A store of a pointer register (`value`) into memory other than the
    /// stack leaks it to a loader without CAP_PERFMON.
    fn check_leak(&self, access: Access, value: Option<u8>, into: &str) -> VResult<()> {
        match value {
            Some(v)
                if access == Access::Write
                    && !self.caps.allow_ptr_leaks
                    && self.cur.reg(v).is_pointer() =>
            {
                self.err(format!("R{v} leaks addr into {into}"))
            }
            _ => Ok(()),
        }
    }

    pub fn note_stack_depth(&mut self, frameno: usize, depth: u32) {
        let sub = self.cur.frames[frameno].subprogno as usize;
        let d = depth.next_multiple_of(8);
        if let Some(x) = self.subprog_stack.get_mut(sub) {
            if d > *x {
                *x = d;
            }
        }
    }

    fn stack_write_fixed(
        &mut self,
        frameno: usize,
        off: i32,
        size: u32,
        value: Option<u8>,
    ) -> VResult<()> {
        let slot = (-off - 1) as usize;
        let spi = slot / REG_SIZE;
        let cur_frame = self.cur.curframe();
        let insn = self.insns[self.insn_idx];
        let vreg = value.map(|r| *self.cur.reg(r));
        self.cur.frames[frameno].grow_stack((-off) as usize);
        let old = self.cur.frames[frameno].stack[spi];
        if !self.caps.allow_ptr_leaks
            && old.is_spill()
            && old.spilled.ty != RegType::Scalar
            && size != REG_SIZE as u32
        {
            return self.err("attempt to corrupt spilled pointer on stack");
        }
        let spills_pointer = vreg.is_some_and(|r| spillable(r.ty));
        self.sanitize_stack_write(frameno, slot, size as usize, spills_pointer);
        self.destroy_if_dynptr_stack_slot(frameno, spi)?;
        // Without CAP_BPF scalars are not tracked through the stack.
        let track_scalars = self.caps.bpf_capable;
        let mut hist = encode_stack(frameno, spi);
        let aligned = off % REG_SIZE as i32 == 0;
        match vreg {
            Some(r) if aligned && r.ty == RegType::Scalar && track_scalars => {
                let fits = r.v.width() <= 8 * size;
                let mut r = r;
                if fits {
                    // The spill and the register stay linked, as a copy
                    // would (a link with a delta is replaced by a new id).
                    if let Some(v) = value {
                        self.link_before_mov(v);
                        r = *self.cur.reg(v);
                    }
                } else {
                    r.id = 0;
                }
                self.save_spill(frameno, spi, r, size);
            }
            None if aligned && insn.class() == BPF_ST && track_scalars => {
                self.save_spill(frameno, spi, Reg::known(insn.imm as i64 as u64), size);
            }
            Some(r) if r.is_pointer() => {
                if size != REG_SIZE as u32 {
                    return self.err("invalid size of register spill");
                }
                if frameno != cur_frame && r.ty == RegType::Stack {
                    return self
                        .err("cannot spill pointers to stack into stack frame of the caller");
                }
                self.save_spill(frameno, spi, r, size);
            }
            _ => {
                let zero = match vreg {
                    Some(r) => r.is_null_const(),
                    // Only BPF_ST stores its imm; an atomic's imm is its
                    // operation (BPF_ADD is 0) and leaves unknown bytes.
                    None => insn.class() == BPF_ST && insn.imm == 0,
                };
                if zero {
                    if let Some(v) = value {
                        self.mark_chain_precision(v)?;
                    }
                }
                let s = &mut self.cur.frames[frameno].stack[spi];
                s.scrub_special();
                let ty = if zero { SlotType::Zero } else { SlotType::Misc };
                for i in 0..size as usize {
                    let b = (slot - i) % REG_SIZE;
                    s.types[b] = ty;
                }
                hist = 0;
            }
        }
        if hist != 0 {
            self.push_history(hist, 0);
        }
        Ok(())
    }

    /// Spectre v4 (check_stack_write_fixed_off): without CAP_PERFMON a
    /// store of `size` bytes down from byte `slot` (-off - 1) that spills
    /// a pointer, or overwrites bytes that were not plain data, is followed
    /// by a barrier; speculative paths end after it. The host kernel
    /// (6.18.44) looks at the bytes written; 6.18.15's source reads the
    /// slot's first `size` type bytes instead, which the host contradicts
    /// (spectre_v4_*.case). Only the length of speculative paths depends on
    /// this, so processed insns; no verdict does.
    pub(crate) fn sanitize_stack_write(
        &mut self,
        frameno: usize,
        slot: usize,
        size: usize,
        spills_pointer: bool,
    ) {
        if self.caps.bypass_spec_v4 {
            return;
        }
        let stack = &self.cur.frames[frameno].stack;
        let plain = (0..size).all(|i| {
            let b = slot.wrapping_sub(i);
            stack
                .get(b / REG_SIZE)
                .is_some_and(|s| matches!(s.types[b % REG_SIZE], SlotType::Misc | SlotType::Zero))
        });
        if spills_pointer || !plain {
            self.aux[self.insn_idx].nospec_result = true;
        }
    }

    fn save_spill(&mut self, frameno: usize, spi: usize, r: Reg, size: u32) {
        let s = &mut self.cur.frames[frameno].stack[spi];
        s.spilled = r;
        let size = size as usize;
        for i in (REG_SIZE - size)..REG_SIZE {
            s.types[i] = SlotType::Spill;
        }
        for i in 0..REG_SIZE - size {
            if s.types[i] != SlotType::Zero && s.types[i] != SlotType::Invalid {
                s.types[i] = SlotType::Misc;
            }
        }
    }

    fn stack_read_fixed(
        &mut self,
        frameno: usize,
        off: i32,
        size: u32,
        value: Option<u8>,
    ) -> VResult<()> {
        let slot = (-off - 1) as usize;
        let spi = slot / REG_SIZE;
        let fr = &self.cur.frames[frameno];
        let Some(s) = fr.stack.get(spi).copied() else {
            // Never written: uninitialised stack reads are allowed for root.
            if let Some(d) = value {
                self.set_unknown(d);
            }
            return Ok(());
        };
        let hist = encode_stack(frameno, spi);
        let byte = |i: usize| s.types[(slot - i) % REG_SIZE];
        if s.is_spill() {
            let spill_size = s
                .types
                .iter()
                .rev()
                .take_while(|t| **t == SlotType::Spill)
                .count() as u32;
            if size != 8 || spill_size != 8 {
                if s.spilled.ty != RegType::Scalar {
                    return self.err("invalid size of register fill");
                }
                let Some(d) = value else { return Ok(()) };
                let narrow_ok = {
                    // Little-endian: the low bytes of the spill sit at its lowest address.
                    let spill_lo = -(spi as i32 + 1) * 8;
                    off == spill_lo
                };
                let mut keep_hist = true;
                if size <= spill_size && narrow_ok {
                    let mut r = s.spilled;
                    if r.v.width() > size * 8 {
                        r.id = 0;
                    }
                    *self.cur.reg_mut(d) = r;
                } else {
                    let (mut spill_cnt, mut zero_cnt) = (0, 0);
                    for i in 0..size as usize {
                        match byte(i) {
                            SlotType::Spill => spill_cnt += 1,
                            SlotType::Zero => zero_cnt += 1,
                            SlotType::Invalid if !self.caps.allow_uninit_stack => {
                                return self.err(format!(
                                    "invalid read from stack off {off}+{i} size {size}"
                                ));
                            }
                            _ => {}
                        }
                    }
                    if spill_cnt == size && s.spilled.v.is_const() && s.spilled.v.const_value() == 0
                    {
                        *self.cur.reg_mut(d) = Reg::known(0);
                    } else if zero_cnt == size {
                        *self.cur.reg_mut(d) = Reg::known(0);
                        keep_hist = false;
                    } else {
                        self.set_unknown(d);
                        keep_hist = false;
                    }
                }
                if keep_hist {
                    self.push_history(hist, 0);
                }
                return Ok(());
            }
            match value {
                Some(d) => *self.cur.reg_mut(d) = s.spilled,
                None if !self.caps.allow_ptr_leaks && s.spilled.is_pointer() => {
                    return self.err(format!("leaking pointer from stack off {off}"));
                }
                None => {}
            }
            self.push_history(hist, 0);
            return Ok(());
        }
        let unreadable = |t: SlotType| {
            matches!(t, SlotType::Iter | SlotType::Dynptr | SlotType::IrqFlag)
                || (t == SlotType::Invalid && !self.caps.allow_uninit_stack)
        };
        if let Some(i) = (0..size as usize).find(|&i| unreadable(byte(i))) {
            return self.err(format!("invalid read from stack off {off}+{i} size {size}"));
        }
        let Some(d) = value else { return Ok(()) };
        let all_zero = (0..size as usize).all(|i| byte(i) == SlotType::Zero);
        *self.cur.reg_mut(d) = if all_zero {
            Reg::known(0)
        } else {
            Reg::unknown_scalar()
        };
        Ok(())
    }

    /// A ctx pointer is dereferenced (or passed to a helper) only as the
    /// program got it: no fixed and no variable offset.
    /// Arithmetic on it is allowed; this check is what refuses the result.
    pub fn check_ctx_ptr_off(&self, regno: u8, reg: &Reg) -> VResult<()> {
        self.check_ptr_off_reg(regno, reg, false)
    }

    /// A pointer used in its original form (__check_ptr_off_reg): never a
    /// negative or variable offset, a fixed one only if `fixed_off_ok`.
    /// An iterator buffer takes any constant, non-negative offset; the
    /// largest access is checked against the map when the program is
    /// attached (check_buffer_access).
    pub(crate) fn check_buffer_access(
        &self,
        regno: u8,
        reg: &Reg,
        off: i32,
        size: u32,
    ) -> VResult<()> {
        let info = if reg.flags & flag::RDONLY != 0 {
            "rdonly"
        } else {
            "rdwr"
        };
        if off < 0 {
            return self.err(format!(
                "R{regno} invalid {info} buffer access: off={off}, size={size}"
            ));
        }
        if !reg.v.is_const() || reg.v.const_value() != 0 {
            return self.err(format!(
                "R{regno} invalid variable buffer offset: off={off}, var_off={}",
                tnum_str(&reg.v)
            ));
        }
        Ok(())
    }

    pub fn check_ptr_off_reg(&self, regno: u8, reg: &Reg, fixed_off_ok: bool) -> VResult<()> {
        // Only an error message needs the type name.
        let ty = || reg.type_str();
        if reg.off < 0 {
            return self.err(format!(
                "negative offset {ty} ptr R{regno} off={} disallowed",
                reg.off,
                ty = ty()
            ));
        }
        if !fixed_off_ok && reg.off != 0 {
            return self.err(format!(
                "dereference of modified {ty} ptr R{regno} off={} disallowed",
                reg.off,
                ty = ty()
            ));
        }
        if !reg.v.is_const() || reg.v.const_value() != 0 {
            return self.err(format!(
                "variable {ty} access var_off={} disallowed",
                tnum_str(&reg.v),
                ty = ty()
            ));
        }
        Ok(())
    }
}

/// The kernel struct behind a map pointer (`map_ops->map_btf_id`), for
/// the map types whose loads bpfvet names.
fn map_kernel_struct(t: bpfvet_isa::uapi::MapType) -> Option<&'static str> {
    use bpfvet_isa::uapi::MapType as M;
    Some(match t {
        M::ARRAY
        | M::PERCPU_ARRAY
        | M::PROG_ARRAY
        | M::PERF_EVENT_ARRAY
        | M::CGROUP_ARRAY
        | M::ARRAY_OF_MAPS => "bpf_array",
        M::HASH | M::PERCPU_HASH | M::LRU_HASH | M::LRU_PERCPU_HASH | M::HASH_OF_MAPS => "bpf_htab",
        M::STACK_TRACE => "bpf_stack_map",
        M::REUSEPORT_SOCKARRAY => "reuseport_array",
        M::DEVMAP | M::DEVMAP_HASH => "bpf_dtab",
        M::RINGBUF | M::USER_RINGBUF => "bpf_ringbuf_map",
        M::LPM_TRIE => "lpm_trie",
        M::BLOOM_FILTER => "bpf_bloom_filter",
        M::CGROUP_STORAGE | M::PERCPU_CGROUP_STORAGE => "bpf_cgroup_storage_map",
        M::QUEUE | M::STACK => "bpf_queue_stack",
        M::CPUMAP => "bpf_cpu_map",
        M::ARENA => "bpf_arena",
        M::STRUCT_OPS => "bpf_struct_ops_map",
        M::SOCKMAP => "bpf_stab",
        M::SOCKHASH => "bpf_shtab",
        M::XSKMAP => "xsk_map",
        M::SK_STORAGE | M::INODE_STORAGE | M::TASK_STORAGE | M::CGRP_STORAGE => {
            "bpf_local_storage_map"
        }
        _ => return None,
    })
}

/// A pointer's variable offset in the alignment messages: a constant as a
/// number, otherwise the tnum.
/// is_spillable_regtype: the pointers a stack slot can hold.
fn spillable(ty: RegType) -> bool {
    !matches!(
        ty,
        RegType::NotInit | RegType::Scalar | RegType::TpBuffer | RegType::ConstPtrToDynptr
    )
}

fn var_off_str(v: &Scalar) -> String {
    // A constant prints in decimal up to 65535 and in hex above (a
    // negative offset is a large u64), as measured on 6.18.
    if v.is_const() {
        let c = v.const_value();
        if c <= 0xffff {
            c.to_string()
        } else {
            format!("{c:#x}")
        }
    } else {
        tnum_str(v)
    }
}

/// Pointers no atomic instruction may go through: ctx, packet, flow keys
/// and sockets (the kernel's ctx/pkt/flow_key/sk register tests).
fn no_atomics_through(ty: RegType) -> bool {
    matches!(
        ty,
        RegType::Ctx
            | RegType::Packet
            | RegType::PacketMeta
            | RegType::FlowKeys
            | RegType::Sock
            | RegType::SockCommon
            | RegType::TcpSock
    )
}
