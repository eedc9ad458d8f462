//! Calls: helper prototypes and their arguments, reference acquire and
//! release, spin locks, callbacks (bpf_loop, for_each_map_elem, timers),
//! bpf-to-bpf calls and returns, and the program's return code.

use crate::check_mem::Access;
use crate::error::VResult;
use crate::explore::Env;
use crate::helpers::{self, id, ArgBase, ArgType, HelperError, HelperProto, RetBase, TypeFlags};
use crate::regs::{flag, Reg, RegType};
use crate::scalar::Scalar;
use crate::state::{Frame, RefKind, RefState, MAX_CALL_FRAMES};
use bpfvet_isa::uapi::{MapType, ProgType};
use bpfvet_isa::Insn;

/// Size limit of a helper's variable memory argument.
const MAX_VAR_SIZ: u64 = 1 << 29;
/// The register types a helper's map key or value argument takes
/// (check_reg_type's map_key_value_types); its memory arguments take
/// trusted BTF pointers too (mem_types).
const MAP_KEY_VALUE_TYPES: [RegType; 7] = [
    RegType::Stack,
    RegType::Packet,
    RegType::PacketMeta,
    RegType::MapKey,
    RegType::MapValue,
    RegType::Mem,
    RegType::Buf,
];
/// The register types a helper memory argument takes, as the kernel lists
/// them when none matches.
const MEM_ARG_TYPES: &str =
    "fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_";

/// What the arguments told us, for the return value and side effects.
#[derive(Default)]
struct ArgMeta {
    map: Option<u32>,
    /// The map_uid of that map (see `Reg::map_uid`).
    map_uid: u32,
    /// Constant size given for memory (ringbuf_reserve's size, etc.).
    mem_size: Option<u64>,
    release_ref: Option<u32>,
    callback: Option<u32>,
    /// A map key known to be this constant (array lookups cannot fail).
    const_key: Option<u64>,
    /// Register of a dynptr the helper releases.
    release_dynptr: Option<u8>,
    /// (id, ref_obj_id) of the dynptr argument, for the slice
    /// `bpf_dynptr_data` returns.
    dynptr: Option<(u32, u32)>,
    /// The reference an argument holds, shared by what a cast returns.
    ref_obj_id: Option<u32>,
    /// The largest value of the last size argument (msize_max_value).
    size_max: u64,
    /// `bpf_kptr_xchg`: the kptr field its destination points to.
    kptr_field: Option<crate::map_record::Field>,
    /// bpf_this_cpu_ptr / bpf_per_cpu_ptr of an RCU-protected per-CPU
    /// kptr: the struct (program BTF) of the allocation returned.
    percpu_alloc: Option<u32>,
}

impl Env<'_> {
    /// check_stack_range_initialized for a loader without CAP_PERFMON:
    /// every byte a helper may read is written, and spilled pointers are
    /// not read as data.
    fn check_helper_stack_readable(
        &self,
        regno: u8,
        frameno: usize,
        lo: i64,
        hi: i64,
        size: u64,
    ) -> VResult<()> {
        use crate::state::SlotType;
        let fr = &self.cur.frames[frameno];
        for b in lo..hi {
            let slot = (-b - 1) as usize;
            let Some(s) = fr.stack.get(slot / 8) else {
                continue;
            };
            let ok = match s.types[slot % 8] {
                SlotType::Misc | SlotType::Zero => true,
                SlotType::Invalid if self.caps.allow_uninit_stack => true,
                _ => s.is_spill() && (s.spilled.ty == RegType::Scalar || self.caps.allow_ptr_leaks),
            };
            if !ok {
                return self.err_helper_stack_unreadable(regno, lo, b, size);
            }
        }
        Ok(())
    }

    /// The byte at `b` of a helper's stack range starting at `lo` may not
    /// be read: the kernel names a constant start, or the variable offset.
    pub(crate) fn err_helper_stack_unreadable<T>(
        &self,
        regno: u8,
        lo: i64,
        b: i64,
        size: u64,
    ) -> VResult<T> {
        let r = self.cur.reg(regno);
        let at = if r.v.is_const() {
            format!("off {lo}")
        } else {
            format!("var_off {}", crate::check_alu::tnum_str(&r.v))
        };
        self.err(format!(
            "invalid read from stack R{regno} {at}+{} size {size}",
            b - lo
        ))
    }

    fn arg_type_err<T>(&self, regno: u8, expected: &str) -> VResult<T> {
        let r = self.cur.reg(regno);
        self.err(format!(
            "R{regno} type={} expected={expected}",
            r.type_str()
        ))
    }

    /// Memory [reg, reg+size) must be accessible (check_helper_mem_access).
    /// `raw`: the helper only writes a known number of bytes (an
    /// uninitialised-memory argument with a constant size, the kernel's
    /// raw mode): the stack it fills is not read.
    pub(crate) fn check_helper_mem(
        &mut self,
        regno: u8,
        size: u64,
        access: Access,
        zero_ok: bool,
        raw: bool,
    ) -> VResult<()> {
        let r = *self.cur.reg(regno);
        // Helpers never write through map keys or read-only memory, not
        // even zero bytes of it.
        let read_only = r.ty == RegType::MapKey
            || (matches!(r.ty, RegType::Mem | RegType::TpBuffer | RegType::Buf)
                && r.flags & flag::RDONLY != 0);
        if access == Access::Write && read_only {
            return self.err(format!("R{regno} cannot write into {}", r.type_str()));
        }
        // Even an empty stack range must lie in the frame, and a variable
        // one must be initialised over the offsets it may start at.
        // An empty access passes for memory kinds and NULL; a rewritten
        // ctx and other registers are refused whatever the size
        // (check_helper_mem_access).
        let empty_ok = match r.ty {
            RegType::Stack => false,
            RegType::Ctx => !crate::ctx::ctx_access_rewritten(self.prog_type),
            RegType::Scalar => r.is_null_const(),
            RegType::Packet
            | RegType::PacketMeta
            | RegType::MapValue
            | RegType::MapKey
            | RegType::Mem
            | RegType::BtfId
            | RegType::TpBuffer
            | RegType::Buf
            | RegType::FlowKeys => true,
            _ => false,
        };
        if size == 0 && zero_ok && empty_ok {
            return Ok(());
        }
        match r.ty {
            RegType::Stack => {
                // A zero size (a map with 0-byte keys or values) is refused
                // before the bounds (check_stack_range_initialized).
                if size == 0 && !zero_ok {
                    return self.err("invalid zero-sized read");
                }
                let off = r.off as i64 + if r.v.is_const() { r.v.const_value() as i64 } else { r.v.smin };
                let max = r.off as i64 + if r.v.is_const() { r.v.const_value() as i64 } else { r.v.smax };
                // Helpers name the direction of their access (6.18).
                let what = match access {
                    Access::Read => "read from",
                    Access::Write => "write to",
                };
                if !r.v.is_const() && (r.v.smax >= crate::check_alu::MAX_VAR_OFF
                        || r.v.smin <= -crate::check_alu::MAX_VAR_OFF) {
                    return self.err(format!(
                        "invalid unbounded variable-offset {what} stack R{regno}"
                    ));
                }
                // Without CAP_PERFMON reads stay within the stack written
                // so far.
                let allocated = self.cur.frames[r.frameno as usize].stack.len() as i64 * 8;
                let min_valid = if access == Access::Write || self.caps.allow_uninit_stack {
                    -512
                } else {
                    -allocated
                };
                if off < min_valid || !(-512..0).contains(&off) || max + size as i64 > 0 || size > 512 {
                    if r.v.is_const() {
                        return self.err(format!(
                            "invalid {what} stack R{regno} off={off} size={size}"
                        ));
                    }
                    return self.err(format!(
                        "invalid variable-offset {what} stack R{regno} var_off={} off={} size={size}",
                        crate::check_alu::tnum_str(&r.v),
                        r.off
                    ));
                }
                // Unreachable while variable stack pointers need
                // bypass_spec_v1 to be formed, kept as the kernel has it.
                if !r.v.is_const() && !self.caps.bypass_spec_v1 {
                    return self.err(format!(
                        "R{regno} variable offset stack access prohibited for !root, var_off={}",
                        crate::check_alu::tnum_str(&r.v)
                    ));
                }
                let frameno = r.frameno as usize;
                // Raw mode needs a constant offset too: a variable-offset
                // access must find the bytes initialised.
                let raw = raw && r.v.is_const();
                // Its byte loop names the first bad byte, dynptr or not.
                let all_readable = self.caps.allow_uninit_stack && self.caps.allow_ptr_leaks;
                if !raw && !all_readable {
                    self.check_helper_stack_readable(regno, frameno, off, max + size as i64, size)?;
                }
                self.check_helper_stack_no_dynptr(regno, frameno, (off, max + size as i64), size, raw)?;
                self.note_stack_depth(frameno, (-off) as u32);
                // Other helper accesses count as reads: they may read, and
                // a helper filling memory may skip bytes.
                if !raw {
                    self.note_stack_read(frameno, off, max + size as i64);
                }
                let fr = &mut self.cur.frames[frameno];
                fr.grow_stack((-off) as usize);
                // Iterator state and saved irq flags are not memory a helper
                // may read, nor write unless in raw mode (a variable offset
                // turns a write into a check of initialised bytes). Most
                // ranges hold neither: look at whole slots first, and byte
                // by byte (for the first bad one) only then.
                let (lo_spi, hi_spi) = ((-(max + size as i64)) as usize / 8, (-off - 1) as usize / 8);
                let unreadable = |s: &crate::state::Slot| {
                    s.types
                        .iter()
                        .any(|t| matches!(t, crate::state::SlotType::Iter | crate::state::SlotType::IrqFlag))
                };
                if !raw && fr.stack[lo_spi..=hi_spi].iter().any(unreadable) {
                    for b in off..max + size as i64 {
                        let slot = (-b - 1) as usize;
                        if matches!(
                            fr.stack[slot / 8].types[slot % 8],
                            crate::state::SlotType::Iter | crate::state::SlotType::IrqFlag
                        ) {
                            return self.err_helper_stack_unreadable(regno, off, b, size);
                        }
                    }
                }
                if access == Access::Write && raw && !self.caps.allow_ptr_leaks {
                    // The kernel fills a raw buffer with byte stores once
                    // the arguments are checked: a byte into a spilled
                    // pointer corrupts it.
                    let corrupts = fr.stack[lo_spi..=hi_spi]
                        .iter()
                        .any(|s| s.is_spill() && s.spilled.ty != RegType::Scalar);
                    if corrupts {
                        return self.err("attempt to corrupt spilled pointer on stack");
                    }
                }
                if access == Access::Write && raw && !self.caps.bypass_spec_v4 {
                    // The kernel writes the buffer byte by byte, each a
                    // store that Spectre v4 sanitation looks at.
                    for b in off..max + size as i64 {
                        self.sanitize_stack_write(frameno, (-b - 1) as usize, 1, false);
                    }
                }
                let fr = &mut self.cur.frames[frameno];
                if access == Access::Write {
                    self.log.scratch_stack(off, max + size as i64);
                    // The helper fills the bytes: they become STACK_MISC
                    // and spills there are destroyed (whole slots).
                    let (first, end) = ((-(max + size as i64)) as usize, (-off) as usize);
                    for spi in first / 8..end.div_ceil(8) {
                        let s = &mut fr.stack[spi];
                        if s.is_spill() || s.is_iter() {
                            s.spilled = Reg::not_init();
                            s.types = [crate::state::SlotType::Misc; crate::state::REG_SIZE];
                        } else {
                            let bytes = first.max(spi * 8) - spi * 8..end.min(spi * 8 + 8) - spi * 8;
                            s.types[bytes].fill(crate::state::SlotType::Misc);
                        }
                    }
                }
                Ok(())
            }
            RegType::Buf => {
                let size = u32::try_from(size).unwrap_or(u32::MAX);
                self.check_buffer_access(regno, &r, r.off, size)
            }
            RegType::Packet | RegType::PacketMeta | RegType::MapValue | RegType::MapKey | RegType::Mem | RegType::Ctx | RegType::BtfId | RegType::TpBuffer | RegType::FlowKeys => {
                if size > u32::MAX as u64 {
                    return self.err(format!("R{regno} unbounded memory access"));
                }
                let sz = size as u32;
                if r.ty == RegType::MapValue {
                    self.check_map_access_type(r.map, r.off, sz, access)?;
                }
                if r.ty == RegType::Ctx {
                    if crate::ctx::ctx_access_rewritten(self.prog_type) {
                        return self.err(format!("R{regno} type=ctx expected=fp"));
                    }
                    return self.check_mem_access(regno, sz as i32 - 1, 1, access, None, false);
                }
                if r.ty == RegType::BtfId {
                    // The helper reads the struct: the span must be a
                    // field as for a load of that size.
                    let r0 = *self.cur.reg(0);
                    self.btf_load(regno, &r, r.off, sz, Access::Read)?;
                    *self.cur.reg_mut(0) = r0;
                    return Ok(());
                }
                // Check both ends with a byte-wide probe of the whole span.
                self.check_span(regno, sz)
            }
            RegType::Scalar if r.is_null_const() => {
                self.err(format!("R{regno} type=scalar expected=fp"))
            }
            // A kfunc's memory argument has no register-type check before
            // this one (check_helper_mem_access's own message).
            _ if self.in_kfunc_mem_arg => self.err(format!(
                "R{regno} type={} expected=fp",
                r.type_str()
            )),
            _ => self.err(format!(
                "R{regno} type={} expected=fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_",
                r.type_str()
            )),
        }
    }

    /// A BTF pointer argument (check_reg_type): a plain, trusted or RCU
    /// pointer (socket arguments: not RCU), of the prototype's struct or
    /// one that starts with it.
    fn check_btf_id_arg(&mut self, proto: &HelperProto, i: usize, r: &Reg) -> VResult<()> {
        let regno = (i + 1) as u8;
        let at = proto.args[i];
        let expected = at.base.expected_reg_types().unwrap_or("");
        let mut flags = r.flags;
        if at.flags.contains(TypeFlags::MAYBE_NULL) {
            flags &= !flag::MAYBE_NULL;
        }
        let rcu_ok = at.base == ArgBase::PtrToBtfId;
        let compatible = r.ty == RegType::BtfId
            && (flags == 0 || flags == flag::TRUSTED || (rcu_ok && flags == flag::RCU));
        if !compatible {
            return self.arg_type_err(regno, expected);
        }
        let release = at.flags.contains(TypeFlags::OBJ_RELEASE);
        if r.maybe_null() && (!at.flags.contains(TypeFlags::MAYBE_NULL) || release) {
            return self.err(format!("Possibly NULL pointer passed to helper arg{regno}"));
        }
        let need = match (at.base, proto.arg_btf[i]) {
            (ArgBase::PtrToBtfIdSockCommon, _) => "sock_common",
            (_, Some(helpers::BtfRef::Struct(name))) if name != "POISON" => name,
            _ => return Ok(()),
        };
        let need_id = vmlinux_struct(need);
        // A pointer bpfvet could not type is left unchecked.
        let (Some(btf), true, true) = (crate::btf_walk::vmlinux(), r.aux != 0, need_id != 0) else {
            return Ok(());
        };
        let strict = release && proto.id != id::SK_RELEASE;
        let matched = (r.off == 0 && r.aux == need_id)
            || (!strict
                && r.off >= 0
                && crate::btf_walk::nested_struct_match(btf, r.aux, r.off as u32, need_id));
        if !matched {
            return self.err(format!(
                "R{regno} is of type {} but {need} is expected",
                btf.name_of(r.aux)
            ));
        }
        Ok(())
    }

    /// A BTF pointer as a memory argument: only a trusted one, and only
    /// for memory the helper does not write (check_reg_type).
    fn check_btf_mem_arg(
        &mut self,
        proto: &HelperProto,
        regno: u8,
        r: &Reg,
        at: ArgType,
    ) -> VResult<()> {
        let mut flags = r.flags;
        if at.flags.contains(TypeFlags::MAYBE_NULL) {
            flags &= !flag::MAYBE_NULL;
        }
        if flags != flag::TRUSTED {
            return self.arg_type_err(regno, ArgBase::PtrToMem.expected_reg_types().unwrap_or(""));
        }
        if !at.flags.contains(TypeFlags::MEM_RDONLY) {
            return self.err(format!(
                "{}() may write into memory pointed by R{regno} type={}",
                proto.name(),
                r.type_str()
            ));
        }
        Ok(())
    }

    /// The bounds of a helper's access of `size` bytes at a packet, map or
    /// memory pointer: those of one load or store of that size.
    /// An empty span gets here only where the helper refuses one: it
    /// fails the bounds checks.
    fn check_span(&mut self, regno: u8, size: u32) -> VResult<()> {
        let r = *self.cur.reg(regno);
        let limit: i64 = match r.ty {
            RegType::MapValue => self.map_def(r.map).map_or(0, |m| m.value_size) as i64,
            RegType::MapKey => self.map_def(r.map).map_or(0, |m| m.key_size) as i64,
            RegType::Mem => r.aux as i64,
            RegType::Packet | RegType::PacketMeta => (r.aux as i32) as i64,
            _ => return Ok(()),
        };
        // The same bounds checks as a load or store of `size` bytes
        // (check_packet_access / check_mem_region_access).
        if r.ty.is_pkt() {
            return self.packet_access(regno, &r, r.off, size);
        }
        let (what, sname) = match r.ty {
            RegType::MapValue => ("map value", "value_size"),
            RegType::MapKey => ("map key", "key_size"),
            _ => ("memory", "mem_size"),
        };
        self.check_region(regno, &r, r.off, size, limit as u32, what, sname)?;
        if r.ty == RegType::MapValue && !self.in_kfunc_mem_arg {
            self.check_map_fields(&r, r.off, size, false)?;
        }
        Ok(())
    }

    /// The key a stack pointer points at, when it is a known constant of
    /// exactly the key's size (get_constant_map_key); it is made precise.
    fn constant_map_key(&mut self, regno: u8, key_size: u32) -> VResult<Option<u64>> {
        let r = *self.cur.reg(regno);
        // Only a loader with CAP_BPF gets constant keys tracked.
        if r.ty != RegType::Stack || !r.v.is_const() || !self.caps.bpf_capable {
            return Ok(None);
        }
        let off = r.off as i64 + r.v.const_value() as i64;
        if off >= 0 {
            return Ok(None);
        }
        let slot = (-off - 1) as usize;
        let (spi, k) = (slot / 8, slot % 8);
        let frameno = r.frameno as usize;
        let Some(s) = self.cur.frames[frameno].stack.get(spi).copied() else {
            return Ok(None);
        };
        use crate::state::SlotType;
        let zero = (0..=k)
            .rev()
            .take_while(|&i| s.types[i] == SlotType::Zero)
            .count();
        if zero as u32 >= key_size {
            return Ok(Some(0));
        }
        if !(s.is_spill() && s.spilled.ty == RegType::Scalar) {
            return Ok(None);
        }
        let spill = (0..=k)
            .rev()
            .take_while(|&i| s.types[i] == SlotType::Spill)
            .count();
        if spill as u32 != key_size || !s.spilled.v.is_const() {
            return Ok(None);
        }
        let mut bt = crate::precision::Backtrack {
            frame: self.cur.curframe(),
            ..Default::default()
        };
        bt.slots[frameno] |= 1 << spi;
        self.run_backtrack(bt)?;
        Ok(Some(s.spilled.v.const_value()))
    }

    pub(crate) fn size_arg(&mut self, regno: u8, zero_ok: bool) -> VResult<u64> {
        let r = *self.cur.reg(regno);
        if r.ty != RegType::Scalar {
            return self.arg_type_err(regno, "scalar");
        }
        let v = r.v;
        if v.smin < 0 {
            return self.err(format!(
                "R{regno} min value is negative, either use unsigned or 'var &= const'"
            ));
        }
        if v.umin == 0 && !zero_ok {
            return self.err(format!(
                "R{regno} invalid zero-sized read: u64=[{},{}]",
                v.umin, v.umax
            ));
        }
        if v.umax >= MAX_VAR_SIZ {
            return self.err(format!(
                "R{regno} unbounded memory access, use 'var &= const' or 'if (var < const)'"
            ));
        }
        self.mark_chain_precision(regno)?;
        Ok(v.umax)
    }

    fn check_arg(&mut self, proto: &HelperProto, i: usize, meta: &mut ArgMeta) -> VResult<()> {
        let regno = (i + 1) as u8;
        let mut at = proto.args[i];
        self.check_read(regno)?;
        let r = *self.cur.reg(regno);
        // Only helpers marked pkt_access may see packet pointers
        // (may_access_direct_pkt_data; sockopt programs may always).
        if at.base != ArgBase::Anything
            && r.ty.is_pkt()
            && !proto.pkt_access
            && self.prog_type != bpfvet_isa::uapi::ProgType::CGROUP_SOCKOPT
        {
            return self.err("helper access to the packet is not allowed");
        }
        if at.base == ArgBase::PtrToMapValue {
            at = self.resolve_map_arg_type(proto.id, at, meta)?;
        }
        let may_null = at.flags.contains(TypeFlags::MAYBE_NULL);
        if may_null && r.is_null_const() {
            // The kernel skips the type check of a NULL it allows and
            // asks no precision for it.
            return Ok(());
        }
        match at.base {
            ArgBase::DontCare => {}
            ArgBase::Anything => {
                if !self.caps.allow_ptr_leaks && r.is_pointer() {
                    return self.err(format!("R{regno} leaks addr into helper function"));
                }
            }
            ArgBase::Scalar | ArgBase::ConstAllocSizeOrZero => {
                if r.ty != RegType::Scalar {
                    return self.arg_type_err(regno, "scalar");
                }
                if at.base == ArgBase::ConstAllocSizeOrZero {
                    if !r.v.is_const() {
                        return self.err(format!("R{regno} is not a known constant'"));
                    }
                    self.mark_chain_precision(regno)?;
                    meta.mem_size = Some(r.v.const_value());
                }
            }
            ArgBase::ConstSize | ArgBase::ConstSizeOrZero => {
                let zero_ok = at.base == ArgBase::ConstSizeOrZero;
                meta.size_max = r.v.umax;
                let size = self.size_arg(regno, zero_ok)?;
                let prev = proto.args[i - 1];
                let access = if prev.flags.contains(TypeFlags::MEM_UNINIT)
                    || prev.flags.contains(TypeFlags::MEM_WRITE)
                {
                    Access::Write
                } else {
                    Access::Read
                };
                let raw = prev.flags.contains(TypeFlags::MEM_UNINIT) && r.v.is_const();
                // A NULL memory argument passes only with a size of zero.
                self.check_helper_mem(regno - 1, size, access, zero_ok, raw)?;
            }
            ArgBase::ConstMapPtr => {
                if r.ty != RegType::MapPtr {
                    return self.arg_type_err(regno, "map_ptr");
                }
                // A timer helper names its map twice: through the timer's
                // value and as this argument; they must be the same map,
                // down to the lookup of an inner map.
                if let Some(m) = meta.map {
                    if m != r.map || meta.map_uid != r.map_uid {
                        return self.err(format!(
                            "timer pointer in R1 map_uid={} doesn't match map pointer in R2 map_uid={}",
                            meta.map_uid, r.map_uid
                        ));
                    }
                }
                meta.map = Some(r.map);
                meta.map_uid = r.map_uid;
            }
            ArgBase::PtrToMapKey | ArgBase::PtrToMapValue => {
                let Some(m) = meta.map.and_then(|m| self.map_def(m)) else {
                    return self.err("invalid map_ptr to access map->key");
                };
                let size = if at.base == ArgBase::PtrToMapKey {
                    m.key_size
                } else {
                    m.value_size
                } as u64;
                // A maybe-NULL pointer matches none of the types: the
                // argument does not take NULL (check_reg_type).
                let untrusted_mem = r.ty == RegType::Mem && r.flags & flag::UNTRUSTED != 0;
                let mem_type = MAP_KEY_VALUE_TYPES.contains(&r.ty) || r.ty == RegType::BtfId;
                if r.maybe_null() || untrusted_mem || !mem_type {
                    return self.arg_type_err(regno, MEM_ARG_TYPES);
                }
                // A trusted kernel pointer is one of the memory types, but
                // the map's key and value are read or written as memory
                // the helper may write.
                if r.ty == RegType::BtfId {
                    self.check_btf_mem_arg(proto, regno, &r, at)?;
                }
                let access = if at.flags.contains(TypeFlags::MEM_UNINIT) {
                    Access::Write
                } else {
                    Access::Read
                };
                let raw = at.flags.contains(TypeFlags::MEM_UNINIT);
                self.check_helper_mem(regno, size, access, false, raw)?;
                let elide = at.base == ArgBase::PtrToMapKey
                    && matches!(m.map_type, MapType::ARRAY | MapType::PERCPU_ARRAY);
                if elide {
                    meta.const_key = self.constant_map_key(regno, m.key_size)?;
                }
            }
            ArgBase::PtrToMem => {
                // check_reg_type: ctx is none of the memory types; a
                // maybe-NULL pointer only where the argument takes NULL.
                // Untrusted memory is none of them.
                let untrusted_mem = r.ty == RegType::Mem && r.flags & flag::UNTRUSTED != 0;
                let mem_type = (MAP_KEY_VALUE_TYPES.contains(&r.ty) && !untrusted_mem)
                    || r.ty == RegType::BtfId;
                if !mem_type || (r.maybe_null() && !may_null) {
                    return self.arg_type_err(regno, MEM_ARG_TYPES);
                }
                if r.ty == RegType::BtfId {
                    self.check_btf_mem_arg(proto, regno, &r, at)?;
                }
                if at.flags.contains(TypeFlags::MEM_FIXED_SIZE) {
                    let access = if at.flags.contains(TypeFlags::MEM_UNINIT)
                        || at.flags.contains(TypeFlags::MEM_WRITE)
                    {
                        Access::Write
                    } else {
                        Access::Read
                    };
                    let raw = at.flags.contains(TypeFlags::MEM_UNINIT);
                    self.check_helper_mem(regno, proto.arg_size[i] as u64, access, false, raw)?;
                    if at.flags.contains(TypeFlags::MEM_ALIGNED) {
                        self.check_ptr_alignment(regno, 0, proto.arg_size[i], true)?;
                    }
                }
            }
            ArgBase::PtrToCtx => {
                if r.ty != RegType::Ctx {
                    return self.arg_type_err(regno, "ctx");
                }
                self.check_ctx_ptr_off(regno, &r)?;
            }
            ArgBase::PtrToBtfIdSockCommon if r.ty == RegType::BtfId => {
                self.check_btf_id_arg(proto, i, &r)?;
            }
            ArgBase::PtrToSockCommon | ArgBase::PtrToBtfIdSockCommon => {
                // Only the BTF variant takes BTF pointers (sock_types vs
                // btf_id_sock_common_types).
                let btf_ok = at.base == ArgBase::PtrToBtfIdSockCommon;
                let fits = r.ty.is_sock() || (btf_ok && r.ty == RegType::BtfId);
                if !fits || r.maybe_null() {
                    let expected = at.base.expected_reg_types().unwrap_or_default();
                    return self.arg_type_err(regno, expected);
                }
            }
            ArgBase::PtrToSocket => {
                if r.ty != RegType::Sock && r.ty != RegType::BtfId {
                    return self.arg_type_err(regno, "sock");
                }
            }
            ArgBase::PtrToRingbufMem => {
                // A reservation not NULL-checked is ringbuf_mem_or_null,
                // not among the argument's types.
                if !(r.ty == RegType::Mem && r.flags & flag::RINGBUF != 0) || r.maybe_null() {
                    return self.arg_type_err(regno, "ringbuf_mem");
                }
            }
            ArgBase::PtrToFunc => {
                if r.ty != RegType::Func {
                    return self.arg_type_err(regno, "func");
                }
                meta.callback = Some(r.aux);
            }
            // check_reg_type comes first, and these arguments may not be
            // NULL: a map value maybe NULL matches none of their types.
            ArgBase::PtrToSpinLock | ArgBase::PtrToTimer
                if r.ty == RegType::MapValue && r.maybe_null() =>
            {
                let expected = if at.base == ArgBase::PtrToSpinLock {
                    "map_value, ptr_"
                } else {
                    "map_value"
                };
                return self.arg_type_err(regno, expected);
            }
            ArgBase::PtrToSpinLock if self.in_rbtree_cb() => {
                return self.err("can't spin_{lock,unlock} in rbtree cb");
            }
            ArgBase::PtrToSpinLock if r.ty == RegType::Alloc && r.flags == 0 => {
                self.process_spin_lock(regno, &r, helper_lock_op(proto.id))?;
            }
            ArgBase::PtrToSpinLock if r.ty != RegType::MapValue => {
                return self.arg_type_err(regno, "map_value, ptr_");
            }
            ArgBase::PtrToSpinLock | ArgBase::PtrToTimer => {
                if r.ty != RegType::MapValue {
                    return self.arg_type_err(regno, "map_value");
                }
                if at.base == ArgBase::PtrToSpinLock {
                    self.process_spin_lock(regno, &r, helper_lock_op(proto.id))?;
                } else {
                    self.process_timer(regno, &r)?;
                    meta.map = Some(r.map);
                    meta.map_uid = r.map_uid;
                }
            }
            ArgBase::PtrToPercpuBtfId if r.ty == RegType::LocalBtfId => {
                // A per-CPU kptr loaded in an RCU section: the CPU's
                // object is an RCU-protected allocation.
                let percpu_types = [
                    flag::PERCPU,
                    flag::PERCPU | flag::RCU,
                    flag::PERCPU | flag::TRUSTED,
                ];
                if !percpu_types.contains(&r.flags) {
                    return self
                        .arg_type_err(regno, "percpu_ptr_, percpu_rcu_ptr_, percpu_trusted_ptr_");
                }
                if r.flags & flag::RCU == 0 {
                    return self.unsupported("per-CPU pointers into program BTF outside RCU");
                }
                meta.percpu_alloc = Some(r.aux);
            }
            ArgBase::PtrToPercpuBtfId => {
                // Untrusted or maybe-NULL pointers match none of the
                // per-CPU types, per-CPU or not.
                let never = flag::UNTRUSTED | flag::MAYBE_NULL;
                if r.ty != RegType::BtfId || r.flags & never != 0 {
                    return self
                        .arg_type_err(regno, "percpu_ptr_, percpu_rcu_ptr_, percpu_trusted_ptr_");
                }
                // Every source of per-CPU BTF pointers bpfvet models marks
                // them (`__percpu` members and arguments); the others
                // (per-CPU ksyms, kptrs and allocations) are refused.
                if r.flags & flag::PERCPU == 0 {
                    return self
                        .arg_type_err(regno, "percpu_ptr_, percpu_rcu_ptr_, percpu_trusted_ptr_");
                }
                if r.flags & flag::RCU != 0 {
                    // The kernel would make the CPU's kernel object an
                    // allocation (MEM_ALLOC) of vmlinux BTF.
                    return self.unsupported("RCU-protected per-CPU pointers to kernel structs");
                }
            }
            ArgBase::KptrXchgDest => {
                if !matches!(r.ty, RegType::MapValue | RegType::BtfId | RegType::Alloc) {
                    return self.arg_type_err(regno, "map_value, ptr_");
                }
                meta.kptr_field = Some(self.check_kptr_xchg_dest(regno)?);
            }
            ArgBase::PtrToBtfId if meta.kptr_field.is_some() => {
                let f = meta.kptr_field.expect("checked");
                // check_reg_type: the argument may be NULL, and an allocated
                // object (per-CPU or not) counts as the BTF pointer it is.
                let mut folded = r.flags & !flag::MAYBE_NULL;
                if r.ty == RegType::Alloc {
                    folded &= !flag::PERCPU;
                }
                let compatible =
                    r.ty.is_btf_id() && [0, flag::TRUSTED, flag::RCU].contains(&folded);
                if !compatible {
                    return self.arg_type_err(regno, "ptr_, trusted_ptr_, rcu_ptr_");
                }
                if r.ty == RegType::LocalBtfId {
                    // Never made with these flags (kptr loads are per-CPU
                    // or untrusted).
                    return self.unsupported(
                        "a trusted pointer into program BTF as the bpf_kptr_xchg argument",
                    );
                }
                if r.ty == RegType::Alloc {
                    // Only a plain allocated object has a case of its own;
                    // one maybe NULL falls to the kernel's own bug report.
                    if r.flags & !flag::PERCPU != 0 {
                        return self
                            .err("verifier bug: invalid PTR_TO_BTF_ID register for type match");
                    }
                } else if r.maybe_null() {
                    return self.err(format!("Possibly NULL pointer passed to helper arg{regno}"));
                }
                self.kptr_match_type(&f, regno)?;
            }
            ArgBase::PtrToBtfId => self.check_btf_id_arg(proto, i, &r)?,
            ArgBase::PtrToStack => {
                if r.ty != RegType::Stack {
                    return self.arg_type_err(regno, "fp");
                }
            }
            ArgBase::PtrToDynptr => {
                self.check_dynptr_arg(regno, at)?;
                if at.flags.contains(TypeFlags::OBJ_RELEASE) {
                    meta.release_dynptr = Some(regno);
                }
                meta.dynptr = self.dynptr_ids(regno);
                // The dynptr's own reference was checked above.
                return Ok(());
            }
            ArgBase::PtrToConstStr => {
                if r.ty != RegType::MapValue {
                    return self.arg_type_err(regno, "map_value");
                }
                self.check_reg_const_str(regno, &r)?;
            }
            _ => {
                if r.ty == RegType::Scalar {
                    return self.arg_type_err(regno, "ptr_");
                }
            }
        }
        if !matches!(at.base, ArgBase::Anything | ArgBase::DontCare) {
            self.check_func_arg_reg_off(regno, &r, at)?;
        }
        if at.flags.contains(TypeFlags::OBJ_RELEASE) {
            if r.ref_obj_id == 0 {
                return self.err(format!(
                    "R{regno} must be referenced when passed to release function"
                ));
            }
            meta.release_ref = Some(r.ref_obj_id);
        }
        if r.ref_obj_id != 0 && at.base != ArgBase::KptrXchgDest {
            // One referenced argument per call: the result can carry only
            // one reference. (The kernel's line has no newline.)
            if let Some(first) = meta.ref_obj_id {
                return self.err(format!(
                    "more than one arg with ref_obj_id R{regno} {} {first}",
                    r.ref_obj_id
                ));
            }
            meta.ref_obj_id = Some(r.ref_obj_id);
        }
        Ok(())
    }

    /// check_get_func_ip: the tracing prototype serves every tracing
    /// program type, but only kprobes and trampoline programs know the
    /// address of their function.
    fn check_get_func_ip(&mut self) -> VResult<()> {
        use bpfvet_isa::uapi::{AttachType, ProgType};
        let name = "bpf_get_func_ip";
        let eat = self.prog.expected_attach_type;
        match self.prog_type {
            ProgType::KPROBE => Ok(()),
            ProgType::TRACING
                if matches!(
                    eat,
                    Some(
                        AttachType::TRACE_FENTRY
                            | AttachType::TRACE_FEXIT
                            | AttachType::MODIFY_RETURN
                    )
                ) =>
            {
                Ok(())
            }
            ProgType::TRACING => self.err(format!(
                "func {name}#{} supported only for fentry/fexit/fmod_ret programs",
                id::GET_FUNC_IP
            )),
            t => self.err(format!(
                "func {name}#{} not supported for program type {}",
                id::GET_FUNC_IP,
                t.0
            )),
        }
    }

    /// process_timer_func (check_map_field_pointer): the argument must
    /// point exactly at the value's `struct bpf_timer`.
    fn process_timer(&mut self, regno: u8, r: &Reg) -> VResult<()> {
        self.check_map_field_pointer(regno, r, "bpf_timer")
    }

    /// check_map_field_pointer: register `regno` must point exactly at the
    /// map value's special field `field` (bpf_timer, bpf_wq), of a map
    /// with BTF.
    pub(crate) fn check_map_field_pointer(&self, regno: u8, r: &Reg, field: &str) -> VResult<()> {
        if !r.v.is_const() {
            return self.err(format!(
                "R{regno} doesn't have constant offset. {field} has to be at the constant offset"
            ));
        }
        let name = self.map_def(r.map).map_or("", |m| m.name.as_str());
        let name = crate::map_record::kernel_map_name(name).to_string();
        if self.map_def(r.map).is_none_or(|m| m.btf_value_type_id == 0) {
            return self.err(format!(
                "map '{name}' has to have BTF in order to use {field}"
            ));
        }
        let found = self.map_fields(r.map).iter().find(|f| f.name == field);
        let Some(field_off) = found.map(|t| t.off) else {
            return self.err(format!("map '{name}' has no valid {field}"));
        };
        let off = r.v.const_value().wrapping_add(r.off as i64 as u64) as i64;
        if off != field_off as i64 {
            return self.err(format!(
                "off {off} doesn't point to 'struct {field}' that is at {field_off}"
            ));
        }
        Ok(())
    }

    /// The value argument of a map helper as the map type reads it
    /// (resolve_map_arg_type): a sockmap or sockhash takes a socket, a
    /// bloom filter's peek only reads the value it compares.
    fn resolve_map_arg_type(
        &self,
        func_id: u32,
        at: helpers::ArgType,
        meta: &ArgMeta,
    ) -> VResult<helpers::ArgType> {
        let Some(m) = meta.map.and_then(|m| self.map_def(m)) else {
            return self.err("invalid map_ptr to access map->type");
        };
        match m.map_type {
            MapType::SOCKMAP | MapType::SOCKHASH => {
                if at.flags != TypeFlags::default() {
                    return self.err("invalid arg_type for sockmap/sockhash");
                }
                Ok(helpers::ArgType {
                    base: ArgBase::PtrToBtfIdSockCommon,
                    flags: TypeFlags::default(),
                })
            }
            MapType::BLOOM_FILTER if func_id == id::MAP_PEEK_ELEM => Ok(helpers::ArgType {
                base: ArgBase::PtrToMapValue,
                flags: TypeFlags::default(),
            }),
            _ => Ok(at),
        }
    }

    /// A map programs may only read (BPF_F_RDONLY_PROG) cannot be changed
    /// through the generic map helpers either (record_func_map).
    fn check_map_writes_allowed(&self, meta: &ArgMeta, func_id: u32) -> VResult<()> {
        let changes_map = matches!(
            func_id,
            id::MAP_UPDATE_ELEM | id::MAP_DELETE_ELEM | id::MAP_PUSH_ELEM | id::MAP_POP_ELEM
        );
        let rdonly = meta
            .map
            .and_then(|m| self.map_def(m))
            .is_some_and(|m| m.map_flags & bpfvet_isa::uapi::BPF_F_RDONLY_PROG != 0);
        if changes_map && rdonly {
            return self.err("write into map forbidden");
        }
        Ok(())
    }

    /// A constant string argument (check_reg_const_str): a constant
    /// address in a frozen read-only array whose bytes hold a NUL before
    /// the value ends.
    pub(crate) fn check_reg_const_str(&mut self, regno: u8, r: &Reg) -> VResult<()> {
        let Some(m) = self.map_def(r.map) else {
            return self.err("invalid map_ptr to access map->type");
        };
        let rdonly = m.map_flags & bpfvet_isa::uapi::BPF_F_RDONLY_PROG != 0 && m.frozen;
        if !rdonly {
            return self.err(format!("R{regno} does not point to a readonly map'"));
        }
        if !r.v.is_const() {
            return self.err(format!("R{regno} is not a constant address'"));
        }
        if m.map_type != MapType::ARRAY {
            return self.err("no direct value access support for this map type");
        }
        let rest = m.value_size.saturating_sub(r.off.max(0) as u32);
        self.check_region(
            regno,
            r,
            r.off,
            rest,
            m.value_size,
            "map value",
            "value_size",
        )?;
        let start = (r.off as i64 + r.v.const_value() as i64).max(0) as usize;
        let end = m.value_size as usize;
        // An array has a direct address only with a single element (a
        // pointer from a lookup in a larger one gets this far).
        if m.max_entries != 1 || start >= end {
            return self.err("direct value access on string failed");
        }
        // Bytes past the initial contents are zero.
        let terminated = match &m.init {
            bpfvet_object::MapInit::Data(bytes) => {
                (start..end).any(|i| bytes.get(i).copied().unwrap_or(0) == 0)
            }
            _ => start < end,
        };
        if !terminated {
            return self.err("string is not zero-terminated");
        }
        Ok(())
    }

    /// check_bpf_snprintf_call: the format (a constant string, already
    /// checked) must suit the number of u64s the data length holds; the
    /// length's known bits count, even for a variable length.
    fn check_snprintf_format(&mut self) -> VResult<()> {
        let len = self.cur.reg(5).v.var_off.value;
        if len % 8 != 0 {
            // The kernel fails here without a message of its own.
            return self.unsupported(
                "bpf_snprintf with a data length whose known bits are not a multiple of 8 (the kernel rejects it without a message)",
            );
        }
        let fmt = self.cur.reg(3);
        let Some(m) = self.map_def(fmt.map) else {
            return self.err("failed to retrieve map value address");
        };
        let start = (fmt.off as i64 + fmt.v.var_off.value as i64).max(0) as usize;
        let bytes: &[u8] = match &m.init {
            bpfvet_object::MapInit::Data(bytes) => bytes.get(start..).unwrap_or(&[]),
            _ => &[],
        };
        if !helpers::bprintf::format_ok(bytes, len / 8) {
            return self.err("Invalid format string");
        }
        Ok(())
    }

    /// Which offsets a pointer may carry into a helper
    /// (check_func_arg_reg_off): none for a pointer being released; any for
    /// memory; a fixed one for BTF pointers; none for the rest.
    pub(crate) fn check_func_arg_reg_off(
        &self,
        regno: u8,
        r: &Reg,
        at: helpers::ArgType,
    ) -> VResult<()> {
        if at.flags.contains(TypeFlags::OBJ_RELEASE) {
            if r.off != 0 {
                return self.err(format!(
                    "R{regno} must have zero offset when passed to release func or trusted arg to kfunc"
                ));
            }
            return self.check_ptr_off_reg(regno, r, false);
        }
        match r.ty {
            RegType::Stack
            | RegType::Packet
            | RegType::PacketMeta
            | RegType::MapKey
            | RegType::MapValue
            | RegType::Buf
            | RegType::Scalar => Ok(()),
            // An owning or non-owning reference to an allocated object.
            RegType::Alloc
                if matches!(r.flags, 0 | flag::NON_OWN_REF | crate::regs::NON_OWN_RCU) =>
            {
                self.check_ptr_off_reg(regno, r, true)
            }
            // Plain, read-only and ringbuf memory; dynptr slices and
            // untrusted memory are held to offset 0.
            RegType::Mem
                if r.flags & !(flag::MAYBE_NULL | flag::RDONLY) == 0
                    || r.flags & !flag::MAYBE_NULL == flag::RINGBUF =>
            {
                Ok(())
            }
            RegType::BtfId => {
                // Untrusted, user and per-CPU BTF pointers get no fixed
                // offset either.
                let plain = r.flags & (flag::UNTRUSTED | flag::USER | flag::PERCPU) == 0;
                self.check_ptr_off_reg(regno, r, plain)
            }
            _ => self.check_ptr_off_reg(regno, r, false),
        }
    }

    /// Releases a reference: every register holding it becomes invalid.
    pub fn release_reference(&mut self, ref_id: u32) -> VResult<()> {
        let Some(pos) = self
            .cur
            .refs
            .iter()
            .position(|r| r.kind == RefKind::Ptr && r.id == ref_id)
        else {
            return self.err("release kernel function has no referenced object");
        };
        self.cur.refs.remove(pos);
        let invalid = self.invalid_reg();
        self.cur.for_each_reg_mut(|r| {
            if r.ref_obj_id == ref_id {
                *r = invalid;
            }
        });
        Ok(())
    }

    /// Returns Some(next insn) when a callback frame was entered instead of
    /// continuing after the call.
    pub fn check_helper_call(&mut self, insn: &Insn) -> VResult<Option<usize>> {
        let func_id = insn.imm as u32;
        let caller = caller_prog(self.prog, self.opts.privileges);
        let proto = match helpers::helper_proto_for(func_id, &caller) {
            Ok(p) => p,
            Err(HelperError::Unknown { .. }) => {
                return self.err(format!("invalid func unknown#{}", insn.imm));
            }
            Err(e) => return self.err(e.to_string()),
        };
        if proto.gpl_only && !license_is_gpl(self.obj.license_of(self.prog)) {
            return self.err("cannot call GPL-restricted function from non-GPL compatible program");
        }
        if let Some(rule) = proto.allowed {
            let target = self.prog.attach_target.as_deref();
            if !rule.allows(self.prog_type, self.prog.expected_attach_type, target) {
                return self.err("helper call is not allowed in probe");
            }
        }
        if proto.might_sleep {
            if !self.cur.in_sleepable {
                return self.err("helper call might sleep in a non-sleepable prog");
            }
            let region = if self.cur.active_rcu_lock {
                Some("rcu_read_lock")
            } else if self.cur.active_preempt_locks > 0 {
                Some("non-preemptible")
            } else if self.cur.active_irq_id != 0 {
                Some("IRQ-disabled")
            } else {
                None
            };
            if let Some(region) = region {
                return self.err(format!(
                    "sleepable helper {}#{func_id} in {region} region",
                    proto.name()
                ));
            }
        }
        let mut meta = ArgMeta::default();
        let mut writes_skb = false;
        for i in 0..5 {
            if proto.args[i].is_dont_care() {
                break;
            }
            self.check_arg(proto, i, &mut meta)?;
        }
        self.check_map_writes_allowed(&meta, func_id)?;
        match func_id {
            id::GET_LOCAL_STORAGE => {
                // The helper cannot fail, so it takes no flags.
                if !self.cur.reg(2).is_null_const() {
                    return self.err("get_local_storage() doesn't support non-zero flags");
                }
                self.mark_chain_precision(2)?;
            }
            id::TAIL_CALL => {
                // record_func_map: the call site keeps the map of every
                // path that got past the arguments, a prog array or not.
                if let Some(map) = meta.map {
                    let unpriv = !self.map_bypasses_spec_v1(map);
                    let aux = self.call_sites.entry(self.insn_idx).or_default();
                    aux.tail_call_map.record(map, unpriv);
                }
                let m = meta.map.and_then(|m| self.map_def(m));
                if m.is_none_or(|m| m.map_type != MapType::PROG_ARRAY) {
                    return self.err("expected prog array map for tail call");
                }
                // A constant in-range index is kept exact (record_func_key).
                let key = self.cur.reg(3).v;
                let max = m.map_or(0, created_max_entries) as u64;
                let direct = key.is_const() && key.const_value() < max;
                if direct {
                    self.mark_chain_precision(3)?;
                }
                use crate::explore::TailCallSite;
                let idx = self.insn_idx;
                let here = match (direct, meta.map) {
                    (true, Some(map)) => TailCallSite::Direct {
                        map,
                        key: key.const_value() as u32,
                    },
                    _ => TailCallSite::Indirect,
                };
                {
                    let aux = self.call_sites.entry(idx).or_default();
                    aux.tail_call = match aux.tail_call {
                        TailCallSite::Unseen => here,
                        seen if seen == here => seen,
                        _ => TailCallSite::Indirect,
                    };
                }
                // A tail call leaves the program: no lock, reference, RCU
                // or preemption region may be held across it.
                self.check_resource_leak("tail_call", true)?;
            }
            id::DYNPTR_WRITE => {
                // Writing an skb's data through its dynptr may move it.
                use crate::dynptr::DynptrKind;
                let kind = self.dynptr_kind(1);
                writes_skb = matches!(kind, Some(DynptrKind::Skb | DynptrKind::SkbMeta));
            }
            id::SNPRINTF => self.check_snprintf_format()?,
            // A cgroup LSM program on a void hook has no return value to
            // set.
            id::SET_RETVAL
                if self.prog_type == bpfvet_isa::uapi::ProgType::LSM
                    && self.prog.expected_attach_type
                        == Some(bpfvet_isa::uapi::AttachType::LSM_CGROUP)
                    && crate::lsm::hook_returns_void(self.prog)? =>
            {
                return self.err(
                    "BPF_LSM_CGROUP that attach to void LSM hooks can't modify return value!",
                );
            }
            id::DYNPTR_FROM_MEM => {
                let r1 = self.cur.reg(1);
                if r1.ty != RegType::MapValue {
                    return self.err(format!(
                        "Unsupported reg type {} for bpf_dynptr_from_mem data",
                        r1.type_str()
                    ));
                }
            }
            _ => {}
        }
        if let Some(regno) = meta.release_dynptr {
            self.release_dynptr(regno)?;
        }
        if let Some(rid) = meta.release_ref {
            if func_id == id::KPTR_XCHG {
                self.release_kptr_xchg_source(rid)?;
            } else {
                self.release_reference(rid)?;
            }
        }
        // The callback runs in its own frame; the path after the call
        // continues as if the helper returned.
        if let Some(sub) = meta.callback {
            let sync = crate::cfg::SYNC_CALLBACK_HELPERS.contains(&insn.imm);
            if func_id == id::LOOP {
                self.update_loop_inline(sub)?;
                // The iteration count decides when the loop is done. Its
                // argument is ARG_ANYTHING, so a pointer gets this far and
                // the kernel's precision tracking then fails on it.
                if !self.cur.reg(1).is_scalar() {
                    return self.err("verifier bug: backtracking misuse");
                }
                self.mark_chain_precision(1)?;
                let limit = self.cur.reg(1).v.umax;
                if (self.cur.frame().callback_depth as u64) < limit {
                    self.push_callback(sub, func_id)?;
                } else {
                    self.cur.frame_mut().callback_depth = 0;
                }
            } else if sync {
                self.push_callback(sub, func_id)?;
            } else if func_id == id::TIMER_SET_CALLBACK {
                // Timer callbacks never sleep.
                self.push_async_cb(sub, false, 1, (0, 0))?;
            }
        }
        for r in 1..=5 {
            *self.cur.reg_mut(r) = Reg::not_init();
        }
        self.set_return(proto, &meta, func_id)?;
        if let Some(m) = meta.map.and_then(|m| self.map_def(m)) {
            if let Err(e) =
                helpers::map_compat::check_map_func_compatibility(m.map_type, func_id, &caller)
            {
                return self.err(e.to_string());
            }
            // The interpreter has no tail calls from subprograms
            // (allow_tail_call_in_subprogs wants the JIT).
            if func_id == id::TAIL_CALL
                && self.cfg.subprogs.len() > 1
                && !crate::kernel_config::jit_enabled()
            {
                return self.err("mixing of tail_calls and bpf-to-bpf calls is not supported");
            }
        }
        if func_id == id::GET_FUNC_IP {
            self.check_get_func_ip()?;
        }
        if func_id == id::TAIL_CALL {
            // A tail call that returns ran nothing: the path after it keeps
            // its packet pointers. In a subprogram a successful one returns
            // the tail-called program's value to the caller.
            if self.cur.curframe() > 0 {
                self.tail_call_returns_to_caller()?;
            }
        } else if helpers::classes::changes_pkt_data(func_id) || writes_skb {
            self.clear_all_pkt_pointers();
        }
        Ok(None)
    }

    /// The hidden exit of a tail call in a subprogram: the failed call's
    /// path is queued, this one returns an unknown R0 to the caller with
    /// packet pointers gone.
    fn tail_call_returns_to_caller(&mut self) -> VResult<()> {
        let idx = self.insn_idx;
        self.push_stack(idx + 1, idx)?;
        self.clear_all_pkt_pointers();
        self.set_unknown(0);
        self.update_live_stack();
        self.prepare_func_exit()?;
        // The caller's loop steps past the call site.
        self.insn_idx = self.insn_idx.wrapping_sub(1);
        Ok(())
    }

    /// After packet data may have moved, no packet pointer is valid, nor
    /// any slice of an skb or xdp dynptr.
    pub(crate) fn clear_all_pkt_pointers(&mut self) {
        let invalid = self.invalid_reg();
        self.cur.for_each_reg_mut(|r| {
            let pkt_slice = r.ty == RegType::Mem && r.flags & flag::DYNPTR_PKT != 0;
            if pkt_slice
                || matches!(
                    r.ty,
                    RegType::Packet | RegType::PacketMeta | RegType::PacketEnd
                )
            {
                *r = invalid;
            }
        });
    }

    fn set_return(&mut self, proto: &HelperProto, meta: &ArgMeta, func_id: u32) -> VResult<()> {
        let rt = proto.ret;
        // The CPU's copy of an RCU-protected per-CPU object is never NULL.
        let maybe_null = rt.flags.contains(TypeFlags::MAYBE_NULL) && meta.percpu_alloc.is_none();
        let mut r0 = match rt.base {
            RetBase::Integer => {
                let mut r = Reg::unknown_scalar();
                if let Some(kind) = helpers::classes::retval_refinement(func_id) {
                    r.v = helpers::classes::refined_retval(kind, meta.size_max);
                }
                r
            }
            RetBase::Void => Reg::not_init(),
            RetBase::PtrToMapValue => {
                let Some(m) = meta.map else {
                    return self.err("kernel subsystem misconfigured verifier");
                };
                // A lookup in a map of maps or of sockets is a map value
                // until its NULL check says what it points to.
                let mut r = Reg::pointer(RegType::MapValue);
                r.map = m;
                r.map_uid = meta.map_uid;
                if self.map_def(m).is_some_and(|d| {
                    d.map_type == MapType::PERCPU_ARRAY
                        || d.map_type == MapType::PERCPU_HASH
                        || d.map_type == MapType::LRU_PERCPU_HASH
                }) {
                    r.map = m;
                }
                r
            }
            RetBase::PtrToSocket => Reg::pointer(RegType::Sock),
            RetBase::PtrToTcpSock => Reg::pointer(RegType::TcpSock),
            RetBase::PtrToSockCommon => Reg::pointer(RegType::SockCommon),
            RetBase::PtrToMem => {
                let mut r = Reg::pointer(RegType::Mem);
                r.aux = meta.mem_size.unwrap_or(0).min(u32::MAX as u64) as u32;
                if rt.flags.contains(TypeFlags::MEM_RINGBUF) {
                    r.flags |= flag::RINGBUF;
                }
                if rt.flags.contains(TypeFlags::MEM_RDONLY) {
                    r.flags |= flag::RDONLY;
                }
                r
            }
            RetBase::PtrToMemOrBtfId | RetBase::PtrToBtfId => {
                let mut r = Reg::pointer(RegType::BtfId);
                if rt.flags.contains(TypeFlags::PTR_TRUSTED) {
                    r.flags |= flag::TRUSTED;
                }
                if let Some(helpers::BtfRef::Struct(name)) = proto.ret_btf {
                    r.aux = vmlinux_struct(name);
                }
                if let Some(t) = meta.kptr_field.and_then(|f| f.kptr?.target) {
                    // What the field held: its pointee type.
                    r.aux = t;
                }
                if let Some(k) = meta.kptr_field.and_then(|f| f.kptr).filter(|k| k.local) {
                    // An object of the program's BTF: owned again.
                    r = Reg::pointer(RegType::Alloc);
                    r.aux = k.btf_id;
                    if k.kind == crate::map_record::KptrKind::Percpu {
                        r.flags = flag::PERCPU;
                    }
                }
                if let Some(id) = meta.percpu_alloc {
                    r = Reg::pointer(RegType::Alloc);
                    r.aux = id;
                    r.flags = flag::RCU;
                }
                r
            }
        };
        let in_bounds_key = func_id == id::MAP_LOOKUP_ELEM
            && meta.const_key.is_some_and(|k| {
                meta.map
                    .and_then(|m| self.map_def(m))
                    .is_some_and(|d| k < created_max_entries(d) as u64)
            });
        if r0.is_pointer() && maybe_null && !in_bounds_key {
            r0.flags |= flag::MAYBE_NULL;
            r0.id = self.new_id();
        } else {
            crate::check_jmp::map_lookup_non_null(self.obj, &self.map_fields, &mut r0);
            if r0.ty == RegType::MapValue
                && crate::map_record::lock_field(self.map_fields(r0.map)).is_some()
            {
                // Each looked-up value is a distinct lock.
                r0.id = self.new_id();
            }
        }
        if helpers::classes::is_ptr_cast_function(func_id) {
            // A socket cast is the same object: released with it.
            r0.ref_obj_id = meta.ref_obj_id.unwrap_or(0);
        }
        if func_id == id::DYNPTR_DATA {
            // The slice lives as long as the dynptr and its reference.
            let (dynptr_id, ref_obj_id) = meta.dynptr.unwrap_or_default();
            r0.dynptr_id = dynptr_id;
            r0.ref_obj_id = ref_obj_id;
        }
        let sock_from_map = func_id == id::MAP_LOOKUP_ELEM
            && meta
                .map
                .and_then(|m| self.map_def(m))
                .is_some_and(|d| matches!(d.map_type, MapType::SOCKMAP | MapType::SOCKHASH));
        if (is_acquire(func_id) || sock_from_map) && r0.is_pointer() {
            let rid = self.new_id();
            // One id serves the null check and the release.
            r0.id = rid;
            r0.ref_obj_id = rid;
            self.cur.refs.push(RefState {
                kind: RefKind::Ptr,
                id: rid,
                insn_idx: self.insn_idx,
                lock_ptr: 0,
            });
        }
        *self.cur.reg_mut(0) = r0;
        Ok(())
    }

    /// Queues the callback's entry as a pending path (push_callback_call).
    pub(crate) fn push_callback(&mut self, subprog: u32, func_id: u32) -> VResult<()> {
        // setup_func_entry's message (without the static walk's " !").
        if self.cur.frames.len() >= MAX_CALL_FRAMES {
            return self.err(format!(
                "the call stack of {} frames is too deep",
                self.cur.frames.len() + 1
            ));
        }
        let Some(sp) = self.cfg.subprogs.get(subprog as usize) else {
            return self.err("callback function not static");
        };
        let start = sp.start;
        if let Some(c) = self.is_cb.get_mut(subprog as usize) {
            *c = true;
        }
        let idx = self.insn_idx;
        let caller_regs = self.cur.frame().regs;
        let frameno = self.cur.frames.len() as u32;
        let mut callee = Frame::new(idx as i32, frameno, subprog);
        callee.in_callback_fn = true;
        callee.callback_ret = Some((0, 1));
        let regs = &mut callee.regs;
        match func_id {
            id::LOOP => {
                // The index is a plain unknown scalar: the kernel gives it
                // no 32-bit bound.
                regs[1] = Reg::unknown_scalar();
                regs[1].v = Scalar::unknown();
                regs[2] = caller_regs[3];
            }
            id::FOR_EACH_MAP_ELEM => {
                let map = caller_regs[1].map;
                // Only array and hash maps walk their elements
                // (map_for_each_callback); checked before the map's
                // compatibility with the helper.
                let walks = self.map_def(map).is_some_and(|d| {
                    matches!(
                        d.map_type,
                        MapType::ARRAY
                            | MapType::PERCPU_ARRAY
                            | MapType::HASH
                            | MapType::PERCPU_HASH
                            | MapType::LRU_HASH
                            | MapType::LRU_PERCPU_HASH
                    )
                });
                if !walks {
                    return self.err("callback function not allowed for map");
                }
                let regs = &mut callee.regs;
                regs[1] = caller_regs[1];
                let mut k = Reg::pointer(RegType::MapKey);
                k.map = map;
                regs[2] = k;
                let mut v = Reg::pointer(RegType::MapValue);
                v.map = map;
                regs[3] = v;
                regs[4] = caller_regs[3];
            }
            id::USER_RINGBUF_DRAIN => {
                // callback(const struct bpf_dynptr *, void *ctx)
                regs[1] = self.const_local_dynptr();
                regs[2] = caller_regs[3];
            }
            id::FIND_VMA => {
                // callback(struct task_struct *task,
                //          struct vm_area_struct *vma, void *ctx)
                regs[1] = caller_regs[1];
                let mut vma = Reg::pointer(RegType::BtfId);
                vma.aux = vmlinux_struct("vm_area_struct");
                regs[2] = vma;
                regs[3] = caller_regs[4];
                regs[4] = Reg::not_init();
                regs[5] = Reg::not_init();
            }
            _ => {
                for reg in &mut regs[1..=5] {
                    *reg = Reg::unknown_scalar();
                }
            }
        }
        let st = self.push_stack(start, idx)?;
        st.callback_unroll_depth += 1;
        if let Some(f) = st.frames.last_mut() {
            f.callback_depth += 1;
        }
        st.frames.push(callee);
        self.cur.frame_mut().callback_depth = 0;
        Ok(())
    }

    /// Queues a timer callback as a path of its own (push_async_cb): it
    /// runs later, on a fresh stack, so its state has no caller frames, no
    /// references or locks, and no checkpoint parent. The caller goes on
    /// after the helper without entering it. Its arguments are the map
    /// of the caller's register `map_regno`, a key and a value of it; it
    /// must return a value in `ret`.
    pub(crate) fn push_async_cb(
        &mut self,
        subprog: u32,
        sleepable: bool,
        map_regno: usize,
        ret: (i64, i64),
    ) -> VResult<()> {
        let Some(sp) = self.cfg.subprogs.get(subprog as usize) else {
            return self.err("callback function not static");
        };
        let start = sp.start;
        if let Some(a) = self.async_cb.get_mut(subprog as usize) {
            *a = true;
        }
        if let Some(c) = self.is_cb.get_mut(subprog as usize) {
            *c = true;
        }
        let caller = self.cur.frame();
        let mut callee = Frame::new(-1, 0, subprog);
        callee.in_async_callback_fn = true;
        callee.callback_ret = Some(ret);
        callee.async_entry_cnt = caller.async_entry_cnt + 1;
        // callback(struct bpf_map *map, void *key, void *value)
        let map = caller.regs[map_regno].map;
        let r = &mut callee.regs;
        r[1] = Reg::pointer(RegType::MapPtr);
        r[2] = Reg::pointer(RegType::MapKey);
        r[3] = Reg::pointer(RegType::MapValue);
        for reg in &mut r[1..=3] {
            reg.map = map;
        }
        let mut st = crate::state::State::new();
        st.frames = vec![callee];
        st.in_sleepable = sleepable;
        self.pending.push(crate::explore::Pending {
            st,
            insn_idx: start,
            prev_insn_idx: self.insn_idx as i64,
            log_pos: self.log.len(),
        });
        if self.pending.len() > crate::explore::MAX_PENDING {
            let msg = format!(
                "The sequence of {} jumps is too complex for async cb.",
                self.pending.len()
            );
            self.log.line(&msg);
            return Err(crate::error::VerifyError::limit(
                Some(self.insn_idx),
                crate::Limit::JumpSequence,
                msg,
            ));
        }
        self.track_memory()
    }

    /// A bpf-to-bpf call: enter the callee's frame.
    pub fn check_func_call(&mut self, insn: &Insn) -> VResult<()> {
        let idx = self.insn_idx;
        let target = (idx as i64 + insn.imm as i64 + 1) as usize;
        let Some(sub) = self.cfg.subprog_at(target) else {
            return self.err(format!("verifier bug. No program starts at insn {target}"));
        };
        // setup_func_entry's message (without the static walk's " !").
        if self.cur.frames.len() >= MAX_CALL_FRAMES {
            return self.err(format!(
                "the call stack of {} frames is too deep",
                self.cur.frames.len() + 1
            ));
        }
        if self.is_global(sub) {
            // Verified on its own; the caller sees an unknown scalar.
            self.check_global_call_args(sub)?;
            if self.log.level >= 1 {
                let name = self.subprog_name(sub);
                self.log.line(&format!(
                    "Func#{sub} ('{name}') is global and assumed valid."
                ));
            }
            if self.cfg.subprogs[sub].changes_pkt_data {
                self.clear_all_pkt_pointers();
            }
            self.called_global[sub] = true;
            for r in 1..=5 {
                *self.cur.reg_mut(r) = Reg::not_init();
            }
            *self.cur.reg_mut(0) = Reg::unknown_scalar();
            self.insn_idx += 1;
            return Ok(());
        }
        let caller_regs = self.cur.frame().regs;
        let frameno = self.cur.frames.len() as u32;
        let mut callee = Frame::new(idx as i32, frameno, sub as u32);
        callee.regs[1..=5].copy_from_slice(&caller_regs[1..=5]);
        // r0-r5 are caller-saved: none survives into the callee's view.
        for r in 0..=5 {
            self.cur.frame_mut().regs[r] = Reg::not_init();
        }
        self.cur.frames.push(callee);
        self.live_chain_changed();
        self.insn_idx = target;
        Ok(())
    }

    /// Exit from a callee frame (prepare_func_exit).
    pub fn prepare_func_exit(&mut self) -> VResult<()> {
        let callee = self.cur.frame().clone();
        let r0 = callee.regs[0];
        if r0.ty == RegType::Stack {
            return self.err("cannot return stack pointer to the caller");
        }
        if callee.in_callback_fn {
            if r0.ty != RegType::Scalar {
                return self.err("R0 not a scalar value");
            }
            self.mark_chain_precision(0)?;
            if let Some((lo, hi)) = callee.callback_ret {
                if r0.v.smin < lo || r0.v.smax > hi {
                    return self.err(crate::ctx::retval::return_range_message(
                        "At callback return",
                        "R0",
                        r0.v.smin,
                        r0.v.smax,
                        (lo, hi),
                    ));
                }
            }
        }
        // A static subprogram may return with r0 unset (a void function):
        // the caller only fails if it reads r0 afterwards.
        self.cur.frames.pop();
        if callee.in_callback_fn {
            self.insn_idx = callee.callsite as usize;
            if let Some(prev) = self.find_prev_entry(self.insn_idx, self.cur.dfs_depth) {
                self.widen_imprecise_scalars(prev);
            }
        } else {
            self.cur.frame_mut().regs[0] = r0;
            self.insn_idx = callee.callsite as usize + 1;
        }
        Ok(())
    }

    /// The program's return value (`regno`: r0 at exit, r1 for the cookie
    /// of bpf_throw) must be a scalar in the type's range.
    pub fn check_return_code(&mut self, regno: u8) -> VResult<()> {
        let frame = self.cur.frame();
        let async_ret = frame.callback_ret.filter(|_| frame.in_async_callback_fn);
        // The exception callback's return value is the program's.
        let exception_cb = self.exception_cb == Some(frame.subprogno as usize);
        let program_exit = (frame.subprogno == 0 || exception_cb) && async_ret.is_none();
        let lsm_rule = match program_exit && self.prog_type == ProgType::LSM {
            true => Some(crate::lsm::return_rule(self.prog).map_err(|mut e| {
                e.insn = Some(self.insn_idx);
                e
            })?),
            false => None,
        };
        // A void LSM hook or struct_ops member ignores R0, which need not
        // even be set.
        let void_struct_ops = program_exit && self.struct_ops.is_some_and(|so| so.returns_void);
        if matches!(lsm_rule, Some(crate::lsm::LsmReturn::Nothing)) || void_struct_ops {
            return Ok(());
        }
        let ret_pointee = self
            .struct_ops
            .and_then(|so| so.ret_pointee)
            .filter(|_| program_exit && !exception_cb);
        if ret_pointee.is_some() {
            let r0 = self.cur.reg(regno);
            if r0.ty == RegType::BtfId && r0.ref_obj_id != 0 && Some(r0.aux) == ret_pointee {
                return self.unsupported("a struct_ops program returning a referenced kptr");
            }
        }
        self.check_read(regno)?;
        let r0 = *self.cur.reg(regno);
        if !self.caps.allow_ptr_leaks && r0.is_pointer() {
            return self.err(format!("R{regno} leaks addr as return value"));
        }
        if !program_exit && async_ret.is_none() {
            // A global function only promises a scalar.
            if r0.ty != RegType::Scalar {
                return self.err(format!(
                    "At subprogram exit the register R{regno} is not a scalar value ({})",
                    r0.type_str()
                ));
            }
            return Ok(());
        }
        // The program type's rule (ctx tables); a tp_btf/tracing program
        // is loaded with an attach BTF id.
        let attach_btf = self.prog.attach_target.is_some();
        let (lo, hi, subreg, exit_ctx) = if let Some((lo, hi)) = async_ret {
            (lo, hi, false, "At async callback return")
        } else if ret_pointee.is_some() {
            // Anything else a pointer-returning member returns must be NULL.
            (0, 0, false, crate::ctx::retval::AT_PROGRAM_EXIT)
        } else if let Some(crate::lsm::LsmReturn::Range { min, max, subreg }) = lsm_rule {
            (min, max, subreg, crate::ctx::retval::AT_PROGRAM_EXIT)
        } else {
            match crate::ctx::return_rule(
                self.prog_type,
                self.prog.expected_attach_type,
                attach_btf,
            ) {
                crate::ctx::ReturnRule::Range { min, max, subreg } => (
                    min as i64,
                    max as i64,
                    subreg,
                    crate::ctx::retval::AT_PROGRAM_EXIT,
                ),
                _ => return Ok(()),
            }
        };
        if r0.ty != RegType::Scalar {
            return self.err(format!(
                "{exit_ctx} the register R{regno} is not a known value ({})",
                r0.type_str()
            ));
        }
        self.mark_chain_precision(regno)?;
        let (smin, smax) = if subreg {
            (r0.v.s32_min as i64, r0.v.s32_max as i64)
        } else {
            (r0.v.smin, r0.v.smax)
        };
        if smin < lo || smax > hi {
            let (smin, smax) = if subreg {
                // 32-bit extremes are left out like 64-bit ones.
                (
                    if smin == i32::MIN as i64 {
                        i64::MIN
                    } else {
                        smin
                    },
                    if smax == i32::MAX as i64 {
                        i64::MAX
                    } else {
                        smax
                    },
                )
            } else {
                (smin, smax)
            };
            let msg = crate::ctx::retval::return_range_message(
                exit_ctx,
                &format!("R{regno}"),
                smin,
                smax,
                (lo, hi),
            );
            // A cgroup LSM program on a void hook gets a note after it.
            let void_cgroup_hook = matches!(
                lsm_rule,
                Some(crate::lsm::LsmReturn::Range { min: 1, max: 1, .. })
            ) && self.prog.expected_attach_type
                == Some(bpfvet_isa::uapi::AttachType::LSM_CGROUP);
            if void_cgroup_hook {
                self.log.line(&msg);
                return self.err(
                    "Note, BPF_LSM_CGROUP that attach to void LSM hooks can't modify return value!",
                );
            }
            return self.err(msg);
        }
        Ok(())
    }
}

/// Everything about the program that decides which helpers it may call.
pub(crate) fn caller_prog(
    prog: &bpfvet_object::Program,
    privileges: crate::Privileges,
) -> helpers::CallerProg {
    helpers::CallerProg {
        privileges,
        sleepable: prog.sleepable,
        struct_ops: crate::struct_ops::helpers(prog),
        // The tcp and unix iterators add the socket option helpers (their
        // targets' get_func_proto).
        iter_sockopt: matches!(prog.attach_target.as_deref(), Some("tcp" | "unix")),
        ..helpers::CallerProg::new(prog.prog_type, prog.expected_attach_type)
    }
}

/// bpf_spin_lock / bpf_spin_unlock as a lock operation.
fn helper_lock_op(func_id: u32) -> crate::spin_lock::LockOp {
    crate::spin_lock::LockOp {
        acquire: func_id == id::SPIN_LOCK,
        res: false,
        irq: false,
    }
}

fn is_acquire(func_id: u32) -> bool {
    matches!(func_id, 84 | 85 | 99 | 131 | 194)
}

/// The id of vmlinux struct `name`, 0 if unknown.
fn vmlinux_struct(name: &str) -> u32 {
    crate::btf_walk::vmlinux()
        .and_then(|btf| btf.find_by_name_kind(name, bpfvet_object::btf::Kind::Struct))
        .unwrap_or(0)
}

/// The kernel's license_is_gpl_compatible.
pub fn license_is_gpl(l: &str) -> bool {
    matches!(
        l,
        "GPL"
            | "GPL v2"
            | "GPL and additional rights"
            | "Dual BSD/GPL"
            | "Dual MIT/GPL"
            | "Dual MPL/GPL"
    )
}

impl Env<'_> {
    /// update_loop_inline_state: whether this bpf_loop call site can be
    /// inlined. Zero flags are only looked at while the site still fits,
    /// and then become precise (the inlining depends on them).
    fn update_loop_inline(&mut self, callback: u32) -> VResult<()> {
        let site = self
            .call_sites
            .get(&self.insn_idx)
            .and_then(|c| c.loop_inline);
        if site.is_some_and(|s| !s.fit) {
            return Ok(());
        }
        let flags = self.cur.reg(4);
        let flags_zero = flags.is_scalar() && flags.v.is_const() && flags.v.const_value() == 0;
        if flags_zero {
            self.mark_chain_precision(4)?;
        }
        self.call_sites
            .entry(self.insn_idx)
            .or_default()
            .loop_inline = Some(crate::rewrite_stack::LoopInline::visit(
            site, flags_zero, callback,
        ));
        Ok(())
    }

    /// A callback whose address an explored instruction loads but whose
    /// body no path entered (bpf_loop with zero iterations): the kernel's
    /// dead-code removal drops the body but not the address, and the JIT
    /// step then either finds a later subprogram at the stale address (the
    /// program loads) or none ("No program to jit"). bpfvet replays the
    /// removal (dead_code.rs). The kernel names the target's index after
    /// the rewrites that follow: bpfvet gives it where none can insert an
    /// instruction and refuses the rest.
    /// An explored bpf_throw makes the kernel append a hidden default
    /// exception callback after the removal, which the replay does not
    /// model: any unexplored callback is then refused.
    pub fn check_unexplored_callbacks(&self) -> VResult<()> {
        let entered = |k: usize| {
            self.cfg.subprogs.get(k).is_some_and(|sp| {
                (sp.start..sp.end).any(|j| self.aux.get(j).is_some_and(|a| a.seen))
            })
        };
        // Dead-code removal drops a subprogram no path entered but keeps
        // the exception callback's subprogram index: the kernel's JIT step
        // then reads its entry at a stale index (on 6.18 x86-64 a fault
        // in jit_subprogs).
        if let Some(cb_sub) = self.exception_cb.filter(|_| self.caps.bpf_capable) {
            if let Some(dead) = (1..cb_sub).find(|&k| !entered(k)) {
                return Err(crate::error::VerifyError::unsupported(
                    None,
                    format!("subprogram {dead} is never explored and lies before the exception callback: the kernel's dead-code removal leaves the callback's subprogram index stale for its JIT step"),
                ));
            }
        }
        let unexplored = self.insns.iter().enumerate().find(|&(i, ins)| {
            let seen = self.aux.get(i).is_some_and(|a| a.seen);
            let t = (i as i64 + ins.imm as i64 + 1) as usize;
            seen && crate::cfg::is_pseudo_func(ins)
                && self.cfg.subprog_at(t).is_some_and(|k| !entered(k))
        });
        let Some((first, _)) = unexplored else {
            return Ok(());
        };
        let throws = self.insns.iter().enumerate().any(|(j, ins)| {
            self.aux.get(j).is_some_and(|a| a.seen) && crate::exception::is_bpf_throw(ins)
        });
        if throws {
            let t = first as i64 + self.insns[first].imm as i64 + 1;
            return Err(crate::error::VerifyError::unsupported(
                Some(first),
                format!("callback at insn {t} is never explored, and bpf_throw's hidden exception callback then decides whether the kernel's JIT step finds it"),
            ));
        }
        let seen: Vec<bool> = self.aux.iter().map(|a| a.seen).collect();
        let starts: Vec<usize> = self.cfg.subprogs.iter().map(|s| s.start).collect();
        let Some(stale) = crate::dead_code::stale_call_target(self.insns, &seen, &starts) else {
            return Ok(());
        };
        // A struct_ops program's verifier ops may add an epilogue; without
        // CAP_PERFMON speculation barriers may be inserted.
        let exact = !stale.rewritten
            && self.prog_type != ProgType::STRUCT_OPS
            && self.caps.bypass_spec_v1
            && self.caps.bypass_spec_v4;
        if exact {
            // Nothing left for a later rewrite to grow: the JIT step names
            // the target as the removal left it.
            return Err(crate::error::VerifyError::new(
                None,
                format!(
                    "verifier bug: No program to jit at insn {} (subprog < 0)",
                    stale.target
                ),
            ));
        }
        let i = stale.insn;
        // The address as the program wrote it.
        let t = i as i64 + self.insns[i].imm as i64 + 1;
        Err(crate::error::VerifyError::unsupported(
            Some(i),
            format!("callback at insn {t} is never explored: the kernel drops it as dead code and its JIT step fails (No program to jit) at an instruction index that rewrites inserting instructions (ctx accesses, helper calls...) shift, which bpfvet does not compute"),
        ))
    }

    /// What a program without the JIT fails on after verification: a
    /// frame grown past 512 bytes by the rewrites (do_misc_fixups), then
    /// fixup_call_args's interpreter rules: no tail call reachable through
    /// bpf-to-bpf calls, no callback address.
    pub fn check_interpreter_limits(&self) -> VResult<()> {
        let mut depths = self.subprog_stack.clone();
        crate::rewrite_stack::add_rewrite_stack(
            &mut depths,
            &self.cfg.subprogs,
            self.insns,
            &self.aux,
            &self.call_sites,
        );
        let seen = |i: usize| self.aux.get(i).is_some_and(|a| a.seen);
        for (&depth, sp) in depths.iter().zip(&self.cfg.subprogs) {
            if depth > 512 {
                let may_goto = (sp.start..sp.end.min(self.insns.len()))
                    .any(|i| seen(i) && crate::cfg::is_may_goto(&self.insns[i]));
                let extra = if may_goto {
                    crate::rewrite_stack::TIMED_MAY_GOTO_STACK
                } else {
                    0
                };
                return Err(crate::error::VerifyError::new(
                    None,
                    format!("stack size {depth}(extra {extra}) is too large"),
                ));
            }
        }
        // Dead-code removal drops the subprograms no path entered first.
        let live_subprogs = self
            .cfg
            .subprogs
            .iter()
            .filter(|sp| (sp.start..sp.end).any(seen))
            .count();
        if live_subprogs > 1 && self.tail_call_reachable_from_main() {
            return Err(crate::error::VerifyError::new(
                None,
                "tail_calls are not allowed in non-JITed programs with bpf-to-bpf calls".into(),
            ));
        }
        if let Some(i) =
            (0..self.insns.len()).find(|&i| seen(i) && crate::cfg::is_pseudo_func(&self.insns[i]))
        {
            return Err(crate::error::VerifyError::new(
                Some(i),
                "callbacks are not allowed in non-JITed programs".into(),
            ));
        }
        Ok(())
    }

    /// Whether main holds a tail call or reaches a subprogram that does
    /// through calls or synchronous callback addresses, dead code included:
    /// check_subprogs and check_max_stack_depth's static walk, before
    /// dead-code removal.
    fn tail_call_reachable_from_main(&self) -> bool {
        let subs = &self.cfg.subprogs;
        let mut visited = vec![false; subs.len()];
        let mut todo = vec![0usize];
        while let Some(k) = todo.pop() {
            if std::mem::replace(&mut visited[k], true) {
                continue;
            }
            if subs[k].has_tail_call {
                return true;
            }
            todo.extend(self.static_callees(k));
        }
        false
    }

    /// The subprograms subprogram `k` calls or takes the address of as a
    /// synchronous callback, dead code included (the static call graph of
    /// check_max_stack_depth: an async callback starts a chain of its own).
    fn static_callees(&self, k: usize) -> Vec<usize> {
        let sp = &self.cfg.subprogs[k];
        let is_async = |c: usize| self.async_cb.get(c).copied().unwrap_or(false);
        let mut out = Vec::new();
        for i in sp.start..sp.end.min(self.insns.len()) {
            let ins = self.insns[i];
            let call = crate::cfg::is_pseudo_call(&ins);
            if !call && !crate::cfg::is_pseudo_func(&ins) {
                continue;
            }
            let t = (i as i64 + ins.imm as i64 + 1) as usize;
            if let Some(c) = self.cfg.subprog_at(t) {
                if call || !is_async(c) {
                    out.push(c);
                }
            }
        }
        out
    }

    /// The deepest chain of calls must fit in 512 bytes of stack
    /// (check_max_stack_depth). Global functions and callbacks count as
    /// calls (a callback is entered where its address is taken); an async
    /// callback runs on a stack of its own, so it starts a chain instead.
    pub fn check_max_stack_depth(&self) -> VResult<()> {
        self.check_exception_rules()?;
        let subs = &self.cfg.subprogs;
        let is_async = |c: usize| self.async_cb.get(c).copied().unwrap_or(false);
        let callees: Vec<Vec<usize>> = (0..subs.len()).map(|k| self.static_callees(k)).collect();
        // A JITed program's frames are rounded up to 16 bytes, the
        // interpreter's to 32 (and at least 32).
        let jit = crate::kernel_config::jit_enabled();
        let frame = |k: usize| {
            let depth = self.subprog_stack.get(k).copied().unwrap_or(0);
            match jit {
                true => depth.next_multiple_of(16),
                false => depth.max(1).next_multiple_of(32),
            }
        };
        // Depth-first over call chains from each root (main, async
        // callbacks, the exception callback), highest index first as the
        // kernel walks them. The walk is static: a recursive function, even
        // one the exploration saw end, runs into the frame limit.
        let roots: Vec<usize> = (0..subs.len())
            .rev()
            .filter(|&k| k == 0 || is_async(k) || self.exception_cb == Some(k))
            .collect();
        // Private stacks (bpf_enable_priv_stack): tracing-like programs
        // without tail calls give each frame of 64 bytes or more, reached
        // from main only, a stack of its own, outside the chain's sum.
        let traced = match self.prog_type {
            ProgType::KPROBE
            | ProgType::TRACEPOINT
            | ProgType::PERF_EVENT
            | ProgType::RAW_TRACEPOINT => true,
            ProgType::TRACING => {
                self.prog.expected_attach_type != Some(bpfvet_isa::uapi::AttachType::TRACE_ITER)
            }
            _ => false,
        };
        let priv_mode = traced && !subs.iter().any(|sp| sp.has_tail_call);
        let mut kernel_stack = vec![!priv_mode; subs.len()];
        for &root in roots.iter().filter(|&&r| r != 0) {
            let mut todo = vec![root];
            while let Some(k) = todo.pop() {
                if !std::mem::replace(&mut kernel_stack[k], true) {
                    todo.extend(callees[k].iter().copied());
                }
            }
        }
        let own_stack = |k: usize| !kernel_stack[k] && frame(k) >= 64;
        for root in roots {
            let own = |k: usize| root == 0 && own_stack(k);
            self.walk_stack_depth(root, &callees, &frame, &own)?;
        }
        Ok(())
    }

    fn walk_stack_depth(
        &self,
        root: usize,
        callees: &[Vec<usize>],
        frame: &impl Fn(usize) -> u32,
        own_stack: &impl Fn(usize) -> bool,
    ) -> VResult<()> {
        let subs = &self.cfg.subprogs;
        // (subprog, stack of the frames before it, calls so far)
        let mut stack: Vec<(usize, u32, u32)> = vec![(root, 0, 1)];
        // Whether the walk entered a callee holding a tail call: from then
        // on the kernel marks the frames below every function end it meets,
        // and the exception callback may not be one of them.
        let mut tail_call_reachable = false;
        while let Some((k, before, calls)) = stack.pop() {
            tail_call_reachable |= k != root && subs[k].has_tail_call;
            if calls > MAX_CALL_FRAMES as u32 {
                return Err(crate::error::VerifyError::new(
                    None,
                    format!("the call stack of {MAX_CALL_FRAMES} frames is too deep !"),
                ));
            }
            // A tail call unwinds its own frame only: the callers' frames
            // stay, up to 33 times over.
            if k != 0 && subs[k].has_tail_call && before >= 256 {
                return Err(crate::error::VerifyError::new(
                    None,
                    format!(
                        "tail_calls are not allowed when call stack of previous frames is {before} bytes. Too large"
                    ),
                ));
            }
            let depth = if own_stack(k) {
                before
            } else {
                before + frame(k)
            };
            if depth > 512 {
                return Err(crate::error::VerifyError::new(
                    None,
                    format!("combined stack size of {calls} calls is {depth}. Too large"),
                ));
            }
            // A function without calls ends at once: the first end met
            // (in the kernel's walk, in instruction order) under the
            // exception callback after a tail call was reached.
            if tail_call_reachable
                && k != root
                && callees[k].is_empty()
                && self.exception_cb == Some(root)
            {
                return Err(crate::error::VerifyError::new(
                    None,
                    "cannot tail call within exception cb".into(),
                ));
            }
            // Reversed so that calls are walked in instruction order.
            for &c in callees[k].iter().rev() {
                stack.push((c, depth, calls + 1));
            }
        }
        Ok(())
    }
}

/// The size a map is created with: a zero in the object is the loader's to
/// fill. Asked only of array-like maps, where the CPU count plays no part.
fn created_max_entries(def: &bpfvet_object::MapDef) -> u32 {
    def.created_max_entries(1)
}
