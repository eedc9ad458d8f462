//! One program run's state: stack frames, context, the memory regions the
//! run owns (every load, store and atomic is checked against them), and
//! what helpers wrote to the sinks.

use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};

use bpfvet_isa::opcode::{BPF_CMPXCHG, BPF_FETCH, BPF_LOAD_ACQ, BPF_STORE_REL, BPF_XCHG};

use crate::code::Op;
use crate::ctx::{Ctx, CtxError};
use crate::error::{Result, VmError};
use crate::vm::Vm;

/// MAX_BPF_STACK per frame and MAX_CALL_FRAMES.
pub const STACK_PER_FRAME: usize = 512;
pub const MAX_FRAMES: usize = 8;
const STACK_TOTAL: u64 = (STACK_PER_FRAME * MAX_FRAMES) as u64;
/// The bytes of `Run::ctx_shadow`, the address range the context has.
const CTX_SHADOW_BYTES: u64 = 256;
/// BPF_MAX_LOOPS: the may_goto budget of one run.
pub const MAY_GOTO_BUDGET: u64 = 8 * 1024 * 1024;
/// Default instruction budget of one run.
pub const DEFAULT_INSN_BUDGET: u64 = 1 << 32;

#[derive(Clone, Copy, Debug)]
pub struct Region {
    pub start: u64,
    pub end: u64,
    pub writable: bool,
}

/// What trace_printk, snprintf and perf_event_output produced.
#[derive(Clone, Debug, Default)]
pub struct Output {
    pub trace: Vec<String>,
    pub perf_events: Vec<Vec<u8>>,
}

pub struct Run<'a> {
    pub(crate) vm: &'a Vm,
    pub(crate) ctx: Ctx,
    /// Address of the context handed to the program in r1.
    pub ctx_addr: u64,
    /// The structured context's address range (empty for Ctx::Bytes).
    ctx_shadow: Box<[u64; 32]>,
    /// Owns the memory `stack_lo` points into.
    _stack: Box<[u8]>,
    stack_lo: u64,
    pub(crate) regions: Vec<Region>,
    /// Regions set up before the run (global data, plain contexts); kept
    /// across repeats.
    static_regions: usize,
    /// Whether a read-only region was added since the last reset: compiled
    /// code then leaves writes to global data to the checked path.
    pub(crate) read_only_regions: bool,
    /// Slots of map-in-map lookups: pointers to `Arc<dyn Map>`.
    pub(crate) inner_maps: Vec<u64>,
    pub output: Output,
    pub(crate) tail_calls: u32,
    pub(crate) may_goto_left: u64,
    pub insn_budget: u64,
    /// The packet's [meta, data_end) as addresses, cached for the load/store
    /// fast path; refreshed after every helper call (helpers move it).
    pkt_lo: u64,
    pkt_len: u64,
    /// Locks taken by bpf_spin_lock and not yet released.
    pub(crate) held_locks: Vec<u64>,
    /// Pinned for the whole run: map values handed to the program stay
    /// valid until it ends, and map operations reuse the pin.
    pub(crate) guard: bpfvet_maps::Guard,
    /// The CPU the run is on: its slot of per-CPU maps and what
    /// bpf_get_smp_processor_id returns (below `Vm::cpus`).
    pub(crate) cpu: u32,
    /// The timer whose callback this run is (bpf_timer_cancel of it is
    /// EDEADLK).
    pub(crate) running_timer: Option<u64>,
    /// Values of maps with timers or work items the run was handed, with
    /// their map and key.
    pub(crate) async_values: Vec<(u64, usize, Box<[u8]>)>,
}

fn oob(pc: usize, kind: &'static str, addr: u64, size: u32) -> VmError {
    VmError::OutOfBounds {
        pc,
        kind,
        addr,
        size,
    }
}

impl<'a> Run<'a> {
    pub fn new(vm: &'a Vm, ctx: Ctx) -> Run<'a> {
        let stack = vec![0u8; STACK_TOTAL as usize].into_boxed_slice();
        let stack_lo = stack.as_ptr() as u64;
        let ctx_shadow = Box::new([0u64; 32]);
        let ctx_addr = ctx_shadow.as_ptr() as u64;
        let regions = vm.static_regions.clone();
        let static_regions = regions.len();
        let mut run = Run {
            vm,
            ctx,
            ctx_addr,
            ctx_shadow,
            _stack: stack,
            stack_lo,
            regions,
            static_regions,
            read_only_regions: false,
            inner_maps: Vec::new(),
            output: Output::default(),
            tail_calls: 0,
            may_goto_left: MAY_GOTO_BUDGET,
            insn_budget: DEFAULT_INSN_BUDGET,
            held_locks: Vec::new(),
            pkt_lo: 0,
            pkt_len: 0,
            guard: bpfvet_maps::pin(),
            cpu: 0,
            running_timer: None,
            async_values: Vec::new(),
        };
        run.refresh_packet_bounds();
        run
    }

    /// Puts the run on `cpu` (per-CPU map slots, bpf_get_smp_processor_id).
    pub fn set_cpu(&mut self, cpu: u32) -> Result<()> {
        if cpu >= self.vm.cpus {
            return Err(VmError::Invalid(format!(
                "cpu {cpu} is not below the VM's {} CPUs",
                self.vm.cpus
            )));
        }
        self.cpu = cpu;
        Ok(())
    }

    pub fn cpu(&self) -> u32 {
        self.cpu
    }

    /// The context as the program left it.
    pub fn ctx(&self) -> &Ctx {
        &self.ctx
    }

    pub(crate) fn refresh_packet_bounds(&mut self) {
        (self.pkt_lo, self.pkt_len) = match self.ctx.packet() {
            Some(p) => (p.addr(p.meta), (p.data_end - p.meta) as u64),
            None => (0, 0),
        };
    }

    #[inline(always)]
    fn in_packet(&self, addr: u64, size: u32) -> bool {
        let off = addr.wrapping_sub(self.pkt_lo);
        off < self.pkt_len && self.pkt_len - off >= size as u64
    }

    /// Hands the program plain memory as its context (r1 = its address).
    pub fn set_bytes_ctx(&mut self, start: u64, len: usize, writable: bool) {
        self.ctx = Ctx::Bytes;
        self.refresh_packet_bounds();
        self.ctx_addr = start;
        self.add_static_region(start, len, writable);
    }

    pub fn add_static_region(&mut self, start: u64, len: usize, writable: bool) {
        self.regions.truncate(self.static_regions);
        self.regions.push(Region {
            start,
            end: start + len as u64,
            writable,
        });
        self.static_regions += 1;
    }

    /// Resets what one run leaves behind, so `repeat` runs start alike.
    #[inline]
    pub fn reset_dynamic(&mut self) {
        // Before the regions go: the locks are found through them. A run
        // that took none (every verified one) pays one test.
        if !self.held_locks.is_empty() {
            self.release_held_locks();
        }
        self.regions.truncate(self.static_regions);
        self.read_only_regions = false;
        self.inner_maps.clear();
        if !self.async_values.is_empty() {
            self.async_values.clear();
        }
        self.tail_calls = 0;
        self.may_goto_left = MAY_GOTO_BUDGET;
    }

    /// Releases the bpf_spin_locks the run still holds (only an unverified
    /// program ends holding one), so that other runs do not wait forever.
    fn release_held_locks(&mut self) {
        for addr in std::mem::take(&mut self.held_locks) {
            if let Some(p) = self.check(addr, 4, true) {
                // SAFETY: 4 writable, aligned bytes of a map value the run
                // locked (the run's guard keeps them alive).
                unsafe { AtomicU32::from_ptr(p as *mut u32) }.store(0, Ordering::Release);
            }
        }
    }

    pub fn frame_pointer(&self, depth: usize) -> u64 {
        self.stack_lo + ((depth + 1) * STACK_PER_FRAME) as u64
    }

    pub(crate) fn ctx_range(&self) -> Option<(u64, u64)> {
        match self.ctx {
            Ctx::Bytes => None,
            _ => {
                let lo = self.ctx_shadow.as_ptr() as u64;
                Some((lo, lo + CTX_SHADOW_BYTES))
            }
        }
    }

    /// Registers memory a helper handed to the program (map values, ring
    /// buffer samples), once.
    pub(crate) fn add_region(&mut self, start: u64, len: usize, writable: bool) {
        let end = start + len as u64;
        if self.regions[self.static_regions..]
            .iter()
            .any(|r| r.start == start && r.end == end)
        {
            return;
        }
        self.read_only_regions |= !writable;
        self.regions.push(Region {
            start,
            end,
            writable,
        });
    }

    pub(crate) fn remove_region(&mut self, start: u64) {
        if let Some(i) = self.regions[self.static_regions..]
            .iter()
            .position(|r| r.start == start)
        {
            self.regions.remove(self.static_regions + i);
        }
    }

    /// The host pointer for `[addr, addr+size)` if one region owns it all.
    pub(crate) fn check(&self, addr: u64, size: u64, write: bool) -> Option<*mut u8> {
        if addr.wrapping_sub(self.stack_lo) <= STACK_TOTAL.checked_sub(size)? {
            return Some(addr as *mut u8);
        }
        if let Some(p) = self.ctx.packet() {
            let (lo, hi) = (p.addr(p.meta), p.addr(p.data_end));
            if addr >= lo && addr.checked_add(size)? <= hi {
                return Some(addr as *mut u8);
            }
        }
        let end = addr.checked_add(size)?;
        for r in self.regions.iter().rev() {
            if addr >= r.start && end <= r.end {
                return (!write || r.writable).then_some(addr as *mut u8);
            }
        }
        None
    }

    /// A byte slice of run-owned memory, for helper arguments. Callers use
    /// it within one helper call and never hold two slices that may
    /// overlap (copies between run memory go through `ptr::copy`).
    pub(crate) fn slice(&self, addr: u64, len: u64, write: bool) -> Option<&'a mut [u8]> {
        if len == 0 {
            return Some(&mut []);
        }
        let p = self.check(addr, len, write)?;
        // SAFETY: `check` proved [p, p+len) lies inside one live region the
        // run owns (stack, packet, map value, helper memory), all of which
        // outlive the run's helpers; the interpreter is single-threaded.
        Some(unsafe { std::slice::from_raw_parts_mut(p, len as usize) })
    }

    #[inline(always)]
    pub fn load(&self, addr: u64, size: u32, pc: usize) -> Result<u64> {
        if addr.wrapping_sub(self.stack_lo) <= STACK_TOTAL - size as u64
            || self.in_packet(addr, size)
        {
            // SAFETY: the access lies inside the run's own stack buffer or
            // the packet buffer, which does not move during a run.
            return Ok(unsafe { read(addr as *const u8, size) });
        }
        self.load_slow(addr, size, pc)
    }

    /// [`Run::load`] of an address the verifier proved is a context
    /// field: the same result, the context asked first (its buffer is
    /// neither the stack nor the packet).
    #[inline]
    pub fn load_ctx(&self, addr: u64, size: u32, pc: usize) -> Result<u64> {
        let off = addr.wrapping_sub(self.ctx_shadow.as_ptr() as u64);
        if off < CTX_SHADOW_BYTES && !matches!(self.ctx, Ctx::Bytes) {
            let off = off as u32;
            return self
                .ctx
                .load(off, size)
                .map_err(|CtxError::Denied| VmError::CtxAccess { pc, off, size });
        }
        self.load(addr, size, pc)
    }

    #[cold]
    fn load_slow(&self, addr: u64, size: u32, pc: usize) -> Result<u64> {
        if let Some((lo, hi)) = self.ctx_range() {
            if addr >= lo && addr < hi {
                let off = (addr - lo) as u32;
                return self
                    .ctx
                    .load(off, size)
                    .map_err(|CtxError::Denied| VmError::CtxAccess { pc, off, size });
            }
        }
        match self.check(addr, size as u64, false) {
            // SAFETY: `check` proved the access lies inside a live region.
            Some(p) => Ok(unsafe { read_shared(p, size) }),
            None => Err(oob(pc, "load", addr, size)),
        }
    }

    #[inline(always)]
    pub fn store(&mut self, addr: u64, size: u32, v: u64, pc: usize) -> Result<()> {
        if addr.wrapping_sub(self.stack_lo) <= STACK_TOTAL - size as u64
            || self.in_packet(addr, size)
        {
            // SAFETY: the access lies inside the run's own stack buffer or
            // the packet buffer, which does not move during a run.
            unsafe { write(addr as *mut u8, size, v) };
            return Ok(());
        }
        self.store_slow(addr, size, v, pc)
    }

    #[cold]
    fn store_slow(&mut self, addr: u64, size: u32, v: u64, pc: usize) -> Result<()> {
        if let Some((lo, hi)) = self.ctx_range() {
            if addr >= lo && addr < hi {
                let off = (addr - lo) as u32;
                return self
                    .ctx
                    .store(off, size, v)
                    .map_err(|CtxError::Denied| VmError::CtxAccess { pc, off, size });
            }
        }
        match self.check(addr, size as u64, true) {
            // SAFETY: `check` proved the access lies inside a writable region.
            Some(p) => unsafe { write_shared(p, size, v) },
            None if self.check(addr, size as u64, false).is_some() => {
                return Err(VmError::ReadOnly { pc, addr, size })
            }
            None => return Err(oob(pc, "store", addr, size)),
        }
        Ok(())
    }

    pub fn atomic(&mut self, regs: &mut [u64; 16], op: Op, size: u32, pc: usize) -> Result<()> {
        let d = (op.dst & 15) as usize;
        let s = (op.src & 15) as usize;
        if op.imm == BPF_LOAD_ACQ {
            let a = regs[s].wrapping_add(op.off as i64 as u64);
            regs[d] = self.load(a, size, pc)?;
            return Ok(());
        }
        if op.imm == BPF_STORE_REL {
            let a = regs[d].wrapping_add(op.off as i64 as u64);
            return self.store(a, size, regs[s], pc);
        }
        if size != 4 && size != 8 {
            // Read-modify-write atomics exist for words and double words
            // only; byte and half-word forms are load-acquire/store-release.
            return Err(VmError::BadInsn {
                pc,
                what: format!(
                    "atomic operation {:#x} on {size} bytes (read-modify-write atomics take 4 or 8)",
                    op.imm
                ),
            });
        }
        let a = regs[d].wrapping_add(op.off as i64 as u64);
        if !a.is_multiple_of(size as u64) {
            return Err(VmError::Misaligned { pc, addr: a });
        }
        let p = match self.check(a, size as u64, true) {
            Some(p) => p,
            None => return Err(oob(pc, "atomic", a, size)),
        };
        // SAFETY: checked in bounds, writable and aligned to `size` above.
        unsafe { atomic_at(p, regs, &op, size, pc) }
    }

    /// LD_ABS / LD_IND: big-endian load at `off` from skb->data (negative
    /// SKF_NET_OFF / SKF_LL_OFF offsets from the network / MAC header).
    pub fn ld_abs(&self, off: i64, size: u32) -> Option<u64> {
        const SKF_NET_OFF: i64 = -0x100000;
        const SKF_LL_OFF: i64 = -0x200000;
        let Ctx::Skb(s) = &self.ctx else { return None };
        let p = s.pkt.as_ref()?;
        let start = if off >= 0 {
            p.data as i64 + off
        } else if off >= SKF_NET_OFF {
            s.network as i64 + off - SKF_NET_OFF
        } else if off >= SKF_LL_OFF {
            s.mac as i64 + off - SKF_LL_OFF
        } else {
            return None;
        };
        if start < p.data.min(s.mac) as i64 || start + size as i64 > p.data_end as i64 {
            return None;
        }
        let b = &p.buf[start as usize..start as usize + size as usize];
        Some(match size {
            1 => b[0] as u64,
            2 => u16::from_be_bytes([b[0], b[1]]) as u64,
            _ => u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as u64,
        })
    }

    /// bpf_tail_call: the target program index, or None when the call falls
    /// through (empty slot, index out of range, limit reached).
    pub fn tail_call_target(&mut self, map: u64, index: u64, pc: usize) -> Result<Option<usize>> {
        let m = self.map_arg(map, pc, "bpf_tail_call")?;
        let Some(pa) = m.as_any().downcast_ref::<bpfvet_maps::ProgArray>() else {
            return Err(VmError::HelperFault {
                pc,
                name: "bpf_tail_call",
                what: "map is not a PROG_ARRAY".into(),
            });
        };
        let Some(target) = pa.get(index as u32) else {
            return Ok(None);
        };
        if self.tail_calls >= crate::interp::MAX_TAIL_CALLS {
            return Ok(None);
        }
        self.tail_calls += 1;
        if target as usize >= self.vm.programs.len() {
            return Ok(None);
        }
        Ok(Some(target as usize))
    }
}

impl Drop for Run<'_> {
    fn drop(&mut self) {
        self.release_held_locks();
    }
}

/// The read-modify-write atomic `op` of `size` (4 or 8) bytes at `p`, its
/// result in r0 (cmpxchg) or the source register (fetch).
///
/// # Safety
/// `p..p+size` must be writable memory of the run, aligned to `size`.
#[inline(always)]
pub(crate) unsafe fn atomic_at(
    p: *mut u8,
    regs: &mut [u64; 16],
    op: &Op,
    size: u32,
    pc: usize,
) -> Result<()> {
    let s = (op.src & 15) as usize;
    let fetch = op.imm & BPF_FETCH != 0;
    let v = regs[s];
    // One operation on an atomic of either width; evaluates to the old value.
    macro_rules! rmw {
        ($at:expr, $v:expr, $expected:expr) => {
            match op.imm {
                BPF_XCHG => $at.swap($v, Ordering::SeqCst),
                BPF_CMPXCHG => {
                    match $at.compare_exchange($expected, $v, Ordering::SeqCst, Ordering::SeqCst) {
                        Ok(o) | Err(o) => o,
                    }
                }
                i => match i & !BPF_FETCH {
                    0x00 => $at.fetch_add($v, Ordering::SeqCst),
                    0x40 => $at.fetch_or($v, Ordering::SeqCst),
                    0x50 => $at.fetch_and($v, Ordering::SeqCst),
                    0xa0 => $at.fetch_xor($v, Ordering::SeqCst),
                    _ => return Err(bad_atomic(pc, i)),
                },
            }
        };
    }
    let old = if size == 8 {
        // SAFETY: writable and 8-byte aligned (the caller).
        let at = unsafe { AtomicU64::from_ptr(p as *mut u64) };
        rmw!(at, v, regs[0])
    } else {
        // SAFETY: writable and 4-byte aligned (the caller).
        let at = unsafe { AtomicU32::from_ptr(p as *mut u32) };
        rmw!(at, v as u32, regs[0] as u32) as u64
    };
    if op.imm == BPF_CMPXCHG {
        regs[0] = old;
    } else if fetch {
        regs[s] = old;
    }
    Ok(())
}

fn bad_atomic(pc: usize, imm: i32) -> VmError {
    VmError::BadInsn {
        pc,
        what: format!("unknown atomic operation {imm:#x}"),
    }
}

/// # Safety
/// `p..p+size` must be readable.
#[inline(always)]
unsafe fn read(p: *const u8, size: u32) -> u64 {
    // SAFETY: the caller guarantees the bytes are readable.
    unsafe {
        match size {
            1 => *p as u64,
            2 => (p as *const u16).read_unaligned() as u64,
            4 => (p as *const u32).read_unaligned() as u64,
            _ => (p as *const u64).read_unaligned(),
        }
    }
}

/// [`read`] of memory other threads may write at the same time (map
/// values, global data): an aligned access is one relaxed atomic load, so
/// programs racing on a value on several threads tear at worst, as on the
/// kernel, and the race is no undefined behaviour on the Rust side.
///
/// # Safety
/// `p..p+size` must be readable.
#[inline(always)]
pub(crate) unsafe fn read_shared(p: *const u8, size: u32) -> u64 {
    if (p as usize) & (size as usize - 1) != 0 {
        // SAFETY: the caller guarantees the bytes are readable.
        return unsafe { read(p, size) };
    }
    // SAFETY: readable (the caller) and aligned to the access size (above).
    unsafe {
        match size {
            1 => AtomicU8::from_ptr(p as *mut u8).load(Ordering::Relaxed) as u64,
            2 => AtomicU16::from_ptr(p as *mut u16).load(Ordering::Relaxed) as u64,
            4 => AtomicU32::from_ptr(p as *mut u32).load(Ordering::Relaxed) as u64,
            _ => AtomicU64::from_ptr(p as *mut u64).load(Ordering::Relaxed),
        }
    }
}

/// [`write`] of memory other threads may access at the same time; see
/// [`read_shared`].
///
/// # Safety
/// `p..p+size` must be writable.
#[inline(always)]
pub(crate) unsafe fn write_shared(p: *mut u8, size: u32, v: u64) {
    if (p as usize) & (size as usize - 1) != 0 {
        // SAFETY: the caller guarantees the bytes are writable.
        return unsafe { write(p, size, v) };
    }
    // SAFETY: writable (the caller) and aligned to the access size (above).
    unsafe {
        match size {
            1 => AtomicU8::from_ptr(p).store(v as u8, Ordering::Relaxed),
            2 => AtomicU16::from_ptr(p as *mut u16).store(v as u16, Ordering::Relaxed),
            4 => AtomicU32::from_ptr(p as *mut u32).store(v as u32, Ordering::Relaxed),
            _ => AtomicU64::from_ptr(p as *mut u64).store(v, Ordering::Relaxed),
        }
    }
}

/// # Safety
/// `p..p+size` must be writable.
#[inline(always)]
unsafe fn write(p: *mut u8, size: u32, v: u64) {
    // SAFETY: the caller guarantees the bytes are writable.
    unsafe {
        match size {
            1 => *p = v as u8,
            2 => (p as *mut u16).write_unaligned(v as u16),
            4 => (p as *mut u32).write_unaligned(v as u32),
            _ => (p as *mut u64).write_unaligned(v),
        }
    }
}
