//! BPF helpers a user-space run can honour, with the kernel's semantics.
//! Anything else fails the run with an error naming the helper.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use bpfvet_isa::uapi::HelperId;
use bpfvet_maps::{Map, MapError, RingBuf};

use crate::code::{func_pc, map_index};
use crate::csum;
use crate::ctx::{Ctx, ETH_HLEN, PAGE_SIZE, SHINFO_TAILROOM, XDP_FRAME_SIZE};
use crate::error::{Result, VmError};
use crate::format::format_printk;
use crate::interp::execute;
use crate::run::Run;
use crate::vm::Kfunc;

const EINVAL: u64 = (-22i64) as u64;
const EFAULT: u64 = (-14i64) as u64;
const E2BIG: u64 = (-7i64) as u64;
const EACCES: u64 = (-13i64) as u64;
/// How often bpf_spin_lock tries a lock another run holds before the run
/// fails (spinning, then yielding the CPU between attempts).
const SPIN_LOCK_MAX_SPINS: u64 = 1 << 24;

/// Whether helper `id` leaves every context field as it was: no packet
/// move, no context write, no callback into the program. Compiled code
/// keeps the context fields it read across these calls.
pub(crate) fn keeps_context(id: i32) -> bool {
    matches!(
        HelperId(id as u32),
        HelperId::MAP_LOOKUP_ELEM
            | HelperId::MAP_UPDATE_ELEM
            | HelperId::MAP_DELETE_ELEM
            | HelperId::KTIME_GET_NS
            | HelperId::GET_PRANDOM_U32
            | HelperId::GET_SMP_PROCESSOR_ID
            | HelperId::SKB_LOAD_BYTES
    )
}

fn errno(e: &MapError) -> u64 {
    (-(e.errno() as i64)) as u64
}

impl<'a> Run<'a> {
    pub(crate) fn fault(&self, pc: usize, name: &'static str, what: impl Into<String>) -> VmError {
        VmError::HelperFault {
            pc,
            name,
            what: what.into(),
        }
    }

    pub(crate) fn mem(
        &self,
        addr: u64,
        len: u64,
        write: bool,
        pc: usize,
        name: &'static str,
    ) -> Result<&'a mut [u8]> {
        self.slice(addr, len, write).ok_or_else(|| {
            self.fault(
                pc,
                name,
                format!("argument memory {addr:#x}+{len} is outside the run's memory"),
            )
        })
    }

    /// The map behind a map argument: a top-level map handle or a slot
    /// returned by a map-in-map lookup.
    pub(crate) fn map_arg(
        &self,
        handle: u64,
        pc: usize,
        name: &'static str,
    ) -> Result<Cow<'a, Arc<dyn Map>>> {
        if let Some(i) = map_index(handle) {
            // Borrowed: no reference count that every run on every thread
            // would write.
            if let Some(m) = self.vm.maps.get(i) {
                return Ok(Cow::Borrowed(m));
            }
        }
        if handle != 0 && self.inner_maps.contains(&handle) {
            // SAFETY: `handle` came from a map-in-map lookup during this
            // run; the slot stays valid while the run's epoch guard is held.
            return Ok(Cow::Owned(unsafe {
                (*(handle as *const Arc<dyn Map>)).clone()
            }));
        }
        Err(self.fault(pc, name, format!("{handle:#x} is not a map")))
    }

    fn map_key(
        &self,
        m: &dyn Map,
        addr: u64,
        pc: usize,
        name: &'static str,
    ) -> Result<&'a mut [u8]> {
        self.mem(addr, m.attr().key_size as u64, false, pc, name)
    }

    /// Runs kfunc `id` (a vmlinux BTF id); returns r0.
    pub fn kfunc(&mut self, id: i32, regs: &mut [u64; 16], prog: usize, pc: usize) -> Result<u64> {
        let Some((_, Some(k))) = self.vm.kfuncs.get(&id) else {
            let name = self.vm.kfuncs.get(&id).map(|(n, _)| n.clone());
            return Err(VmError::UnsupportedKfunc { pc, id, name });
        };
        let name: &'static str = match k {
            Kfunc::IterNumNew => "bpf_iter_num_new",
            Kfunc::IterNumNext => "bpf_iter_num_next",
            Kfunc::IterNumDestroy => "bpf_iter_num_destroy",
            Kfunc::WqInit => "bpf_wq_init",
            Kfunc::WqSetCallback => "bpf_wq_set_callback_impl",
            Kfunc::WqStart => "bpf_wq_start",
        };
        match k {
            Kfunc::WqInit | Kfunc::WqSetCallback | Kfunc::WqStart => {
                self.async_call(name, [regs[1], regs[2], regs[3]], prog, pc)
            }
            Kfunc::IterNumNew | Kfunc::IterNumNext | Kfunc::IterNumDestroy => {
                self.iter_num(*k, regs, pc, name)
            }
        }
    }

    /// bpf_iter_num_new / _next / _destroy.
    fn iter_num(
        &mut self,
        k: Kfunc,
        regs: &mut [u64; 16],
        pc: usize,
        name: &'static str,
    ) -> Result<u64> {
        // struct bpf_iter_num as the kernel lays it out: int cur, int end.
        let it = self.mem(regs[1], 8, true, pc, name)?;
        let get = |o: usize| i32::from_le_bytes(it[o..o + 4].try_into().expect("4 bytes"));
        let (cur, end_now) = (get(0), get(4));
        let mut set = |cur: i32, end: i32| {
            it[0..4].copy_from_slice(&cur.to_le_bytes());
            it[4..8].copy_from_slice(&end.to_le_bytes());
        };
        Ok(match k {
            Kfunc::IterNumNew => {
                let (start, end) = (regs[2] as i32, regs[3] as i32);
                if start > end {
                    set(0, 0);
                    EINVAL
                } else if end as i64 - start as i64 > crate::run::MAY_GOTO_BUDGET as i64 {
                    set(0, 0);
                    E2BIG
                } else {
                    set(start.wrapping_sub(1), end);
                    0
                }
            }
            Kfunc::IterNumNext => {
                let end = end_now;
                if cur.wrapping_add(1) as i64 >= end as i64 {
                    set(0, 0);
                    0
                } else {
                    set(cur + 1, end);
                    regs[1]
                }
            }
            _ => {
                // bpf_iter_num_destroy
                set(0, 0);
                0
            }
        })
    }

    /// Runs helper `id`; returns r0.
    #[inline]
    pub fn helper(
        &mut self,
        id: i32,
        regs: &mut [u64; 16],
        prog: usize,
        pc: usize,
        depth: usize,
    ) -> Result<u64> {
        // The most frequent helper, without the general dispatch's setup.
        if id == HelperId::MAP_LOOKUP_ELEM.0 as i32 {
            return self.map_lookup(regs[1], regs[2], pc, "bpf_map_lookup_elem");
        }
        self.any_helper(id, regs, prog, pc, depth)
    }

    /// bpf_skb_load_bytes(skb, `off`, `to`, `len`).
    pub(crate) fn skb_load_bytes(&mut self, off: u64, to: u64, len: u64, pc: usize) -> Result<u64> {
        let name = "bpf_skb_load_bytes";
        let dst = self.mem(to, len, true, pc, name)?.as_mut_ptr();
        Ok(match self.skb_bytes(off, len).map(|s| s.as_ptr()) {
            Some(src) => {
                // SAFETY: both ranges were checked; `to` may lie in the
                // packet too, so copy as memmove does.
                unsafe { std::ptr::copy(src, dst, len as usize) };
                0
            }
            None => {
                self.mem(to, len, true, pc, name)?.fill(0);
                EFAULT
            }
        })
    }

    /// bpf_map_lookup_elem(a1 map, a2 key).
    pub(crate) fn map_lookup(
        &mut self,
        a1: u64,
        a2: u64,
        pc: usize,
        name: &'static str,
    ) -> Result<u64> {
        // A top-level map whose values need no bookkeeping beyond their
        // region: no map-in-map slot, no timer to note, and the map by
        // reference, not through map_arg's Cow (returned through memory).
        let vm = self.vm;
        if let Some(i) = map_index(a1) {
            if let (Some(m), Some(&Some(writable))) = (vm.maps.get(i), vm.plain_lookup.get(i)) {
                let attr = m.attr();
                if let Some(Some(a)) = vm.arrays.get(i) {
                    // ArrayMap::lookup_elem's arithmetic (the run's CPU is
                    // below the map's CPU count).
                    let key = self.mem(a2, 4, false, pc, name)?;
                    let index = u32::from_ne_bytes([key[0], key[1], key[2], key[3]]);
                    if index >= a.entries {
                        return Ok(0);
                    }
                    let off = index as usize * a.elem_bytes + self.cpu as usize * a.cpu_stride;
                    let addr = a.base as u64 + off as u64;
                    self.add_region(addr, attr.value_size as usize, writable);
                    return Ok(addr);
                }
                let key = self.mem(a2, attr.key_size as u64, false, pc, name)?;
                if let Some(&Some((lookup, h))) = vm.hash_lookups.get(i) {
                    // SAFETY: `h` is this map (the VM owns it), `key` holds
                    // its key size, and the run's guard is held.
                    let p = unsafe { lookup(h as *const bpfvet_maps::htab::HashMap, key.as_ptr()) };
                    if p.is_null() {
                        return Ok(0);
                    }
                    self.add_region(p as u64, attr.value_size as usize, writable);
                    return Ok(p as u64);
                }
                return Ok(match m.lookup_elem(key, self.cpu, &self.guard) {
                    None => 0,
                    Some(p) => {
                        let addr = p.as_ptr() as u64;
                        self.add_region(addr, attr.value_size as usize, writable);
                        addr
                    }
                });
            }
        }
        let m = self.map_arg(a1, pc, name)?;
        let key = self.map_key(&**m, a2, pc, name)?;
        Ok(match m.lookup_elem(key, self.cpu, &self.guard) {
            None => 0,
            Some(p) => {
                let addr = p.as_ptr() as u64;
                if m.as_any()
                    .downcast_ref::<bpfvet_maps::MapOfMaps>()
                    .is_some()
                {
                    self.inner_maps.push(addr);
                } else {
                    let writable = m.attr().map_flags & bpfvet_isa::uapi::BPF_F_RDONLY_PROG == 0;
                    self.add_region(addr, m.attr().value_size as usize, writable);
                    self.note_async_value(a1, addr, key);
                }
                addr
            }
        })
    }

    #[inline(never)]
    fn any_helper(
        &mut self,
        id: i32,
        regs: &mut [u64; 16],
        prog: usize,
        pc: usize,
        depth: usize,
    ) -> Result<u64> {
        let [_, a1, a2, a3, a4, a5, ..] = *regs;
        let h = HelperId(id as u32);
        let name: &'static str = h.name().unwrap_or("unknown helper");
        Ok(match h {
            HelperId::MAP_LOOKUP_ELEM => self.map_lookup(a1, a2, pc, name)?,
            HelperId::MAP_UPDATE_ELEM => {
                let m = self.map_arg(a1, pc, name)?;
                let key = self.map_key(&**m, a2, pc, name)?;
                let val = self.mem(a3, m.attr().value_size as u64, false, pc, name)?;
                match m.update_elem_guarded(key, val, a4, self.cpu, &self.guard) {
                    Ok(()) => {
                        if m.attr().map_type == bpfvet_isa::uapi::MapType::ARRAY
                            && map_index(a1)
                                .and_then(|i| self.vm.async_offsets.get(i))
                                .is_some_and(|o| o.any())
                        {
                            // An array update frees the value's timer and
                            // work item (hash maps free the replaced element,
                            // which their free hook reports).
                            if let Some(p) = m.lookup_elem(key, self.cpu, &self.guard) {
                                let len = m.attr().value_size as u64;
                                self.vm.timers.free_in(p.as_ptr() as u64, len);
                            }
                        }
                        0
                    }
                    Err(e) => errno(&e),
                }
            }
            HelperId::MAP_DELETE_ELEM => {
                let m = self.map_arg(a1, pc, name)?;
                let key = self.map_key(&**m, a2, pc, name)?;
                match m.delete_elem(key) {
                    Ok(()) => 0,
                    Err(e) => errno(&e),
                }
            }
            HelperId::MAP_PUSH_ELEM | HelperId::MAP_POP_ELEM | HelperId::MAP_PEEK_ELEM => {
                let m = self.map_arg(a1, pc, name)?;
                let write = h != HelperId::MAP_PUSH_ELEM;
                let val = self.mem(a2, m.attr().value_size as u64, write, pc, name)?;
                let r = match h {
                    HelperId::MAP_PUSH_ELEM => m.push_elem(val, a3),
                    HelperId::MAP_POP_ELEM => m.pop_elem(val),
                    _ => m.peek_elem(val),
                };
                match r {
                    Ok(()) => 0,
                    Err(e) => errno(&e),
                }
            }
            HelperId::KTIME_GET_NS
            | HelperId::KTIME_GET_BOOT_NS
            | HelperId::KTIME_GET_COARSE_NS
            | HelperId::KTIME_GET_TAI_NS => {
                let clock = match h {
                    HelperId::KTIME_GET_BOOT_NS => libc::CLOCK_BOOTTIME,
                    HelperId::KTIME_GET_COARSE_NS => libc::CLOCK_MONOTONIC_COARSE,
                    HelperId::KTIME_GET_TAI_NS => libc::CLOCK_TAI,
                    _ => libc::CLOCK_MONOTONIC,
                };
                self.vm.clock.now(clock).unwrap_or_else(|| clock_ns(clock))
            }
            HelperId::TIMER_INIT
            | HelperId::TIMER_SET_CALLBACK
            | HelperId::TIMER_START
            | HelperId::TIMER_CANCEL => self.async_call(name, [a1, a2, a3], prog, pc)?,
            HelperId::GET_PRANDOM_U32 => prandom() as u64,
            HelperId::GET_SMP_PROCESSOR_ID => self.cpu as u64,
            HelperId::GET_CURRENT_PID_TGID => {
                // SAFETY: getpid/gettid have no preconditions.
                let (tgid, tid) = unsafe { (libc::getpid() as u64, libc::gettid() as u64) };
                tgid << 32 | tid
            }
            HelperId::GET_CURRENT_UID_GID => {
                // SAFETY: getuid/getgid have no preconditions.
                let (uid, gid) = unsafe { (libc::getuid() as u64, libc::getgid() as u64) };
                gid << 32 | uid
            }
            HelperId::GET_CURRENT_COMM => {
                let buf = self.mem(a1, a2, true, pc, name)?;
                let comm = std::fs::read_to_string("/proc/self/comm").unwrap_or_default();
                buf.fill(0);
                let c = comm.trim_end().as_bytes();
                let n = c.len().min(buf.len().saturating_sub(1)).min(15);
                buf[..n].copy_from_slice(&c[..n]);
                0
            }
            HelperId::TRACE_PRINTK => {
                let fmt = self.mem(a1, a2, false, pc, name)?;
                let text = format_printk(fmt, &[a3, a4, a5], |p, n| self.string_at(p, n))
                    .map_err(|e| self.fault(pc, name, e))?;
                let len = text.len() as u64;
                self.output.trace.push(text);
                len
            }
            HelperId::SNPRINTF => {
                let out = self.mem(a1, a2, true, pc, name)?;
                let fmt = self
                    .c_string(a3)
                    .ok_or_else(|| self.fault(pc, name, "format is not a string in run memory"))?;
                if a5 % 8 != 0 || a5 > 8 * 12 {
                    return Ok(EINVAL);
                }
                let data = self.mem(a4, a5, false, pc, name)?;
                let args: Vec<u64> = data
                    .chunks(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                    .collect();
                let text = match format_printk(&fmt, &args, |p, n| self.string_at(p, n)) {
                    Ok(t) => t,
                    Err(_) => return Ok(EINVAL),
                };
                if !out.is_empty() {
                    let n = text.len().min(out.len() - 1);
                    out[..n].copy_from_slice(&text.as_bytes()[..n]);
                    out[n] = 0;
                }
                text.len() as u64 + 1
            }
            HelperId::PERF_EVENT_OUTPUT => {
                let data = self.mem(a4, a5, false, pc, name)?;
                self.output.perf_events.push(data.to_vec());
                0
            }
            HelperId::PROBE_READ | HelperId::PROBE_READ_USER | HelperId::PROBE_READ_KERNEL => {
                let dst = self.mem(a1, a2, true, pc, name)?.as_mut_ptr();
                match self.check(a3, a2, false) {
                    Some(src) => {
                        // SAFETY: both ranges lie in run memory (checked);
                        // they may overlap, so copy as memmove does.
                        unsafe { std::ptr::copy(src, dst, a2 as usize) };
                        0
                    }
                    None => {
                        self.mem(a1, a2, true, pc, name)?.fill(0);
                        EFAULT
                    }
                }
            }
            HelperId::PROBE_READ_STR
            | HelperId::PROBE_READ_USER_STR
            | HelperId::PROBE_READ_KERNEL_STR => {
                let dst = self.mem(a1, a2, true, pc, name)?;
                if dst.is_empty() {
                    return Ok(0);
                }
                match self.string_at(a3, dst.len() - 1) {
                    Some(s) => {
                        dst[..s.len()].copy_from_slice(&s);
                        dst[s.len()] = 0;
                        s.len() as u64 + 1
                    }
                    None => {
                        dst.fill(0);
                        EFAULT
                    }
                }
            }
            HelperId::SPIN_LOCK => {
                let p = self.mem(a1, 4, true, pc, name)?.as_mut_ptr();
                // SAFETY: 4 writable bytes inside a map value; struct
                // bpf_spin_lock is 4-byte aligned there.
                let lock = unsafe { AtomicU32::from_ptr(p as *mut u32) };
                if self.held_locks.contains(&a1) {
                    return Err(self.fault(
                        pc,
                        name,
                        "lock already held by this run (would deadlock)",
                    ));
                }
                // Another thread's run may hold it: wait, as the kernel
                // spins, for a bounded while (a verified holder releases it
                // before its run ends; an unverified one releases it then).
                let mut spins: u64 = 0;
                while lock
                    .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_err()
                {
                    spins += 1;
                    if spins > SPIN_LOCK_MAX_SPINS {
                        return Err(self.fault(
                            pc,
                            name,
                            format!("lock still held by another run after {SPIN_LOCK_MAX_SPINS} attempts"),
                        ));
                    }
                    if spins < 64 {
                        std::hint::spin_loop();
                    } else {
                        std::thread::yield_now();
                    }
                }
                self.held_locks.push(a1);
                0
            }
            HelperId::SPIN_UNLOCK => {
                let p = self.mem(a1, 4, true, pc, name)?.as_mut_ptr();
                // SAFETY: as for bpf_spin_lock.
                let lock = unsafe { AtomicU32::from_ptr(p as *mut u32) };
                lock.store(0, Ordering::Release);
                self.held_locks.retain(|&l| l != a1);
                0
            }
            HelperId::RINGBUF_OUTPUT => {
                let rb = self.ringbuf(a1, pc, name)?;
                let data = self.mem(a2, a3, false, pc, name)?;
                match rb
                    .as_any()
                    .downcast_ref::<RingBuf>()
                    .map(|r| r.output(data, a4))
                {
                    Some(Ok(())) => 0,
                    Some(Err(e)) => errno(&e),
                    None => EINVAL,
                }
            }
            HelperId::RINGBUF_RESERVE => {
                let m = self.ringbuf(a1, pc, name)?;
                let rb = m
                    .as_any()
                    .downcast_ref::<RingBuf>()
                    .expect("checked ring buffer");
                match rb.reserve(a2, a3) {
                    Some(p) => {
                        self.add_region(p.as_ptr() as u64, a2 as usize, true);
                        p.as_ptr() as u64
                    }
                    None => 0,
                }
            }
            HelperId::RINGBUF_SUBMIT | HelperId::RINGBUF_DISCARD => {
                self.ringbuf_commit(a1, a2, h == HelperId::RINGBUF_SUBMIT, pc, name)?;
                0
            }
            HelperId::RINGBUF_QUERY => {
                let m = self.ringbuf(a1, pc, name)?;
                m.as_any()
                    .downcast_ref::<RingBuf>()
                    .map(|r| r.query(a2))
                    .unwrap_or(0)
            }
            HelperId::LOOP => {
                let Some(cb) = self.callback(prog, a2) else {
                    return Err(self.fault(pc, name, "callback is not a function of this program"));
                };
                if a1 > 1 << 23 {
                    return Ok(E2BIG);
                }
                if a4 != 0 {
                    return Ok(EINVAL);
                }
                let mut i = 0;
                while i < a1 {
                    let r = execute(self, prog, cb, [i, a3, 0, 0, 0], depth + 1)?;
                    i += 1;
                    if r != 0 {
                        break;
                    }
                }
                i
            }
            HelperId::FOR_EACH_MAP_ELEM => {
                let m = self.map_arg(a1, pc, name)?;
                let Some(cb) = self.callback(prog, a2) else {
                    return Err(self.fault(pc, name, "callback is not a function of this program"));
                };
                if a4 != 0 {
                    return Ok(EINVAL);
                }
                let guard = bpfvet_maps::pin();
                let mut failure = None;
                let base = self.regions.len();
                let value_size = m.attr().value_size as usize;
                let r = m.for_each(self.cpu, &guard, &mut |key, val| {
                    self.add_region(key.as_ptr() as u64, key.len(), false);
                    self.add_region(val.as_ptr() as u64, value_size, true);
                    self.note_async_value(a1, val.as_ptr() as u64, key);
                    let args = [a1, key.as_ptr() as u64, val.as_ptr() as u64, a3, 0];
                    let r = execute(self, prog, cb, args, depth + 1);
                    self.regions.truncate(base);
                    crate::interp::callback_continues(r, &mut failure)
                });
                if let Some(e) = failure {
                    return Err(e);
                }
                match r {
                    Ok(n) => n as u64,
                    Err(e) => errno(&e),
                }
            }
            HelperId::CSUM_DIFF => {
                if a2 % 4 != 0 || a4 % 4 != 0 || a2.saturating_add(a4) > 512 {
                    return Ok(EINVAL);
                }
                let from = self.mem(a1, a2, false, pc, name)?;
                let to = self.mem(a3, a4, false, pc, name)?;
                csum::diff(from, to, a5 as u32) as u64
            }
            HelperId::SKB_LOAD_BYTES => self.skb_load_bytes(a2, a3, a4, pc)?,
            HelperId::SKB_STORE_BYTES => {
                if a5 & !3 != 0 {
                    return Ok(EINVAL);
                }
                let from = self.mem(a3, a4, false, pc, name)?.to_vec();
                match self.skb_bytes(a2, a4) {
                    Some(dst) => {
                        dst.copy_from_slice(&from);
                        if a5 & 2 != 0 {
                            if let Ctx::Skb(s) = &mut self.ctx {
                                s.hash = 0;
                            }
                        }
                        0
                    }
                    None => EFAULT,
                }
            }
            HelperId::L3_CSUM_REPLACE => {
                if a5 & !0xf != 0 {
                    return Ok(EINVAL);
                }
                if a2 as u32 > 0xffff || a2 & 1 != 0 {
                    return Ok(EFAULT);
                }
                let Some(field) = self.skb_bytes(a2 as u32 as u64, 2) else {
                    return Ok(EFAULT);
                };
                let mut sum = u16::from_le_bytes([field[0], field[1]]);
                match a5 & 0xf {
                    0 if a3 != 0 => return Ok(EINVAL),
                    0 => csum::replace_by_diff(&mut sum, a4 as u32),
                    2 => csum::replace2(&mut sum, a3 as u16, a4 as u16),
                    4 => csum::replace4(&mut sum, a3 as u32, a4 as u32),
                    _ => return Ok(EINVAL),
                }
                field.copy_from_slice(&sum.to_le_bytes());
                0
            }
            HelperId::L4_CSUM_REPLACE => {
                const MANGLED_0: u64 = 0x20;
                if a5 & !(0xf | 0x10 | 0x20 | 0x40 | 0x80) != 0 {
                    return Ok(EINVAL);
                }
                if a2 as u32 > 0xffff || a2 & 1 != 0 {
                    return Ok(EFAULT);
                }
                let Some(field) = self.skb_bytes(a2 as u32 as u64, 2) else {
                    return Ok(EFAULT);
                };
                let mut sum = u16::from_le_bytes([field[0], field[1]]);
                if a5 & MANGLED_0 != 0 && sum == 0 {
                    return Ok(0);
                }
                match a5 & 0xf {
                    0 if a3 != 0 => return Ok(EINVAL),
                    0 => csum::replace_by_diff(&mut sum, a4 as u32),
                    2 => csum::replace4(&mut sum, a3 as u16 as u32, a4 as u16 as u32),
                    4 => csum::replace4(&mut sum, a3 as u32, a4 as u32),
                    _ => return Ok(EINVAL),
                }
                if a5 & MANGLED_0 != 0 && sum == 0 {
                    sum = 0xffff;
                }
                field.copy_from_slice(&sum.to_le_bytes());
                0
            }
            HelperId::XDP_ADJUST_HEAD => self.xdp_adjust_head(a2 as i32 as i64),
            HelperId::XDP_ADJUST_TAIL => self.xdp_adjust_tail(a2 as i32 as i64),
            HelperId::XDP_ADJUST_META => self.xdp_adjust_meta(a2 as i32 as i64),
            _ => {
                if let Some(r) = self.dynptr_helper(h, regs, prog, pc, depth) {
                    return r;
                }
                return Err(VmError::UnsupportedHelper {
                    pc,
                    id,
                    name: name.to_string(),
                });
            }
        })
    }

    /// Remembers which key a value of a map with timers or work items
    /// belongs to (a hash map's bpf_timer_init needs it for the callback).
    fn note_async_value(&mut self, map: u64, value: u64, key: &[u8]) {
        let Some(i) = map_index(map) else { return };
        if !self.vm.async_offsets.get(i).is_some_and(|o| o.any()) {
            return;
        }
        // A hash map reuses a freed element's memory for another key: the
        // latest lookup names the key.
        match self
            .async_values
            .iter_mut()
            .find(|(v, m, _)| *v == value && *m == i)
        {
            Some(entry) => entry.2 = key.into(),
            None => self.async_values.push((value, i, key.into())),
        }
    }

    /// The instruction index of a callback argument, if it is one of the
    /// program's (a forged value must not send the interpreter elsewhere).
    pub(crate) fn callback(&self, prog: usize, handle: u64) -> Option<usize> {
        let pc = func_pc(handle)?;
        // The last op is the sentinel.
        (pc + 1 < self.vm.programs.get(prog)?.ops.len()).then_some(pc)
    }

    pub(crate) fn ringbuf(
        &self,
        handle: u64,
        pc: usize,
        name: &'static str,
    ) -> Result<Cow<'a, Arc<dyn Map>>> {
        let m = self.map_arg(handle, pc, name)?;
        if m.as_any().downcast_ref::<RingBuf>().is_none() {
            return Err(self.fault(pc, name, "map is not a RINGBUF"));
        }
        Ok(m)
    }

    /// Submits or discards a sample; the ring buffer is found by the sample.
    fn ringbuf_commit(
        &mut self,
        sample: u64,
        flags: u64,
        submit: bool,
        pc: usize,
        name: &'static str,
    ) -> Result<()> {
        let _ = flags;
        self.ringbuf_commit_any(sample, submit, pc, name)
    }

    pub(crate) fn ringbuf_commit_any(
        &mut self,
        sample: u64,
        submit: bool,
        pc: usize,
        name: &'static str,
    ) -> Result<()> {
        let Some(p) = std::ptr::NonNull::new(sample as *mut u8) else {
            return Err(self.fault(pc, name, "null sample"));
        };
        for m in &self.vm.maps {
            if let Some(rb) = m.as_any().downcast_ref::<RingBuf>() {
                let r = if submit {
                    rb.submit(p, 0)
                } else {
                    rb.discard(p, 0)
                };
                if r.is_ok() {
                    self.remove_region(sample);
                    return Ok(());
                }
            }
        }
        Err(self.fault(pc, name, "not a reserved ring buffer sample"))
    }

    /// skb->data + off .. + len, if inside the linear data.
    fn skb_bytes(&mut self, off: u64, len: u64) -> Option<&'a mut [u8]> {
        let Ctx::Skb(s) = &mut self.ctx else {
            return None;
        };
        let p = s.pkt.as_mut()?;
        if off > i32::MAX as u64 || off + len > (p.data_end - p.data) as u64 {
            return None;
        }
        let start = p.data + off as usize;
        let slice = &mut p.buf[start..start + len as usize];
        // SAFETY: the packet buffer is boxed and never reallocated during a
        // run; the interpreter is single-threaded.
        Some(unsafe { std::slice::from_raw_parts_mut(slice.as_mut_ptr(), slice.len()) })
    }

    fn xdp_adjust_head(&mut self, off: i64) -> u64 {
        let Ctx::Xdp(x) = &mut self.ctx else {
            return EINVAL;
        };
        let p = &mut x.pkt;
        let metalen = p.data - p.meta;
        let data = p.data as i64 + off;
        if data < (XDP_FRAME_SIZE + metalen) as i64 || data > p.data_end as i64 - ETH_HLEN as i64 {
            return EINVAL;
        }
        let new_meta = (p.meta as i64 + off) as usize;
        if metalen > 0 {
            p.buf.copy_within(p.meta..p.data, new_meta);
        }
        p.meta = new_meta;
        p.data = data as usize;
        0
    }

    fn xdp_adjust_tail(&mut self, off: i64) -> u64 {
        let Ctx::Xdp(x) = &mut self.ctx else {
            return EINVAL;
        };
        let p = &mut x.pkt;
        let hard_end = (PAGE_SIZE - SHINFO_TAILROOM) as i64;
        let end = p.data_end as i64 + off;
        if end > hard_end || end < (p.data + ETH_HLEN) as i64 {
            return EINVAL;
        }
        if off > 0 {
            p.buf[p.data_end..end as usize].fill(0);
        }
        p.data_end = end as usize;
        0
    }

    fn xdp_adjust_meta(&mut self, off: i64) -> u64 {
        let Ctx::Xdp(x) = &mut self.ctx else {
            return EINVAL;
        };
        let p = &mut x.pkt;
        let meta = p.meta as i64 + off;
        if meta < XDP_FRAME_SIZE as i64 || meta > p.data as i64 {
            return EINVAL;
        }
        let metalen = p.data - meta as usize;
        if !metalen.is_multiple_of(4) || metalen > 32 {
            return EACCES;
        }
        p.meta = meta as usize;
        0
    }

    /// Up to `max` bytes of a NUL-terminated string in run memory (without
    /// the NUL), or None if it starts outside.
    fn string_at(&self, addr: u64, max: usize) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        for i in 0..max as u64 {
            let b = self.slice(addr + i, 1, false)?[0];
            if b == 0 {
                break;
            }
            out.push(b);
        }
        Some(out)
    }

    fn c_string(&self, addr: u64) -> Option<Vec<u8>> {
        let mut s = self.string_at(addr, 1024)?;
        s.push(0);
        Some(s)
    }
}

pub(crate) fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write into.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A per-thread xorshift generator (the kernel's is a per-CPU PRNG too).
fn prandom() -> u32 {
    use std::cell::Cell;
    thread_local!(static STATE: Cell<u64> = Cell::new(clock_ns(libc::CLOCK_MONOTONIC) | 1));
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        (x >> 32) as u32
    })
}
