//! bpf_timer and bpf_wq on a virtual clock.
//!
//! The kernel runs a timer's callback from softirq when its hrtimer expires,
//! after (and independently of) the program run that armed it. The runtime
//! keeps armed timers in a table and runs their callbacks when the caller
//! moves the VM's virtual clock past their expiry ([`Vm::advance_time`]),
//! in expiry order, each on the CPU that armed it. With the virtual clock
//! on ([`Vm::use_virtual_clock`]) the ktime helpers read it too, so a
//! program sees time move only when the caller moves it.
//!
//! A `bpf_wq` (kfuncs bpf_wq_init / bpf_wq_set_callback_impl /
//! bpf_wq_start) is the same with no delay: the kernel queues its work to
//! run soon after the program returns; here it runs at the next
//! [`Vm::advance_time`], at the instant it was started.
//!
//! Modelled: the return values of bpf_timer_init / set_callback / start /
//! cancel (EBUSY, EINVAL, EDEADLK, 1 for an active timer), relative and
//! absolute expiry, re-arming from the callback, bpf_timer_cancel dropping
//! the callback (a later start is EINVAL until set_callback), timers in
//! ARRAY, HASH and LRU_HASH values that die with their element (an array
//! element's update through bpf_map_update_elem; a hash element's delete,
//! replacement or eviction, reported by the map's free hook). Not modelled,
//! refused by name: other map types (RHASH, inner maps).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use bpfvet_isa::uapi::MapType;

use crate::code::map_handle;
use crate::ctx::Ctx;
use crate::error::{Result, VmError};
use crate::interp::Engine;
use crate::run::Run;
use crate::vm::Vm;

const EINVAL: u64 = (-22i64) as u64;
const EBUSY: u64 = (-16i64) as u64;
const EDEADLK: u64 = (-35i64) as u64;

/// The clocks bpf_timer_init accepts (timerfd's, without the alarms).
const CLOCK_REALTIME: u64 = 0;
const CLOCK_MONOTONIC: u64 = 1;
const CLOCK_BOOTTIME: u64 = 7;
const MAX_CLOCKS: u64 = 16;
const BPF_F_TIMER_ABS: u64 = 1;
const BPF_F_TIMER_CPU_PIN: u64 = 2;

/// Callbacks one [`Vm::advance_time`] runs at most: a timer re-armed with a
/// zero delay would otherwise fire forever at the same instant.
pub const MAX_CALLBACKS_PER_ADVANCE: u64 = 1 << 20;

/// Where a map value's `struct bpf_timer` and `struct bpf_wq` are.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AsyncOffsets {
    pub timer: Option<u32>,
    pub wq: Option<u32>,
}

impl AsyncOffsets {
    pub fn any(&self) -> bool {
        self.timer.is_some() || self.wq.is_some()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AsyncKind {
    Timer,
    Wq,
}

/// One `struct bpf_timer` (or `bpf_wq`) that bpf_timer_init (bpf_wq_init)
/// set up.
#[derive(Clone, Debug)]
struct Timer {
    kind: AsyncKind,
    map: usize,
    /// The element's value and key (the callback's arguments).
    value: u64,
    key: Box<[u8]>,
    clock: u64,
    /// Program and instruction of the callback bpf_timer_set_callback gave.
    callback: Option<(usize, usize)>,
    /// Virtual time at which it fires, while armed.
    expires: Option<u64>,
    /// The CPU that armed it: its callback runs there.
    cpu: u32,
    /// Arming order, so timers expiring at the same instant fire in it.
    armed_seq: u64,
}

/// The VM's clock: the host's, or virtual (the host clocks' values when it
/// was switched on, plus the time the caller has advanced since).
#[derive(Debug, Default)]
pub(crate) struct Clock {
    /// Per clock id (< MAX_CLOCKS): its host value at the switch.
    bases: Option<[u64; MAX_CLOCKS as usize]>,
    elapsed: AtomicU64,
}

impl Clock {
    pub fn is_virtual(&self) -> bool {
        self.bases.is_some()
    }

    /// What the ktime helpers read for `clock`: None on the host clock.
    pub fn now(&self, clock: libc::clockid_t) -> Option<u64> {
        let bases = self.bases.as_ref()?;
        let base = bases.get(clock as usize).copied().unwrap_or(0);
        Some(base.wrapping_add(self.elapsed.load(Ordering::Acquire)))
    }

    fn elapsed(&self) -> u64 {
        self.elapsed.load(Ordering::Acquire)
    }
}

#[derive(Default)]
pub(crate) struct Timers {
    /// Keyed by the address of the `struct bpf_timer` in its map value.
    table: Mutex<TimerTable>,
}

#[derive(Default)]
struct TimerTable {
    timers: HashMap<u64, Timer>,
    next_seq: u64,
}

impl TimerTable {
    /// The initialised timer (or work item) of `kind` at `addr`.
    fn of_kind(&mut self, addr: u64, kind: AsyncKind) -> Option<&mut Timer> {
        self.timers.get_mut(&addr).filter(|t| t.kind == kind)
    }
}

impl Timers {
    fn lock(&self) -> std::sync::MutexGuard<'_, TimerTable> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Timers armed and not yet fired.
    pub fn armed(&self) -> usize {
        self.lock()
            .timers
            .values()
            .filter(|t| t.expires.is_some())
            .count()
    }

    /// An element updated through bpf_map_update_elem loses its timer, as
    /// the kernel frees the value's special fields after the copy.
    pub fn free_in(&self, start: u64, len: u64) {
        self.lock()
            .timers
            .retain(|&addr, _| addr < start || addr >= start + len);
    }
}

impl Vm {
    /// Switches the VM to a virtual clock that starts at the host clocks'
    /// present values and moves only by [`Vm::advance_time`].
    pub fn use_virtual_clock(&mut self) {
        let mut bases = [0u64; MAX_CLOCKS as usize];
        for (id, b) in bases.iter_mut().enumerate() {
            *b = crate::helpers::clock_ns(id as libc::clockid_t);
        }
        self.clock = Clock {
            bases: Some(bases),
            elapsed: AtomicU64::new(0),
        };
    }

    /// Nanoseconds the virtual clock has advanced.
    pub fn virtual_elapsed_ns(&self) -> u64 {
        self.clock.elapsed()
    }

    /// Timers armed and not yet fired.
    pub fn armed_timers(&self) -> usize {
        self.timers.armed()
    }

    /// Moves the virtual clock `ns` forward, running (with `engine`) the
    /// callback of every timer that expires on the way, in expiry order,
    /// at its expiry time. Returns how many callbacks ran.
    pub fn advance_time(&self, engine: &dyn Engine, ns: u64) -> Result<u64> {
        if !self.clock.is_virtual() {
            return Err(VmError::Invalid(
                "advance_time needs the virtual clock (Vm::use_virtual_clock)".into(),
            ));
        }
        let target = self.clock.elapsed().saturating_add(ns);
        let mut fired = 0;
        loop {
            // Pinned before the timer is picked: an element freed after
            // this (its timer leaving the table then) stays readable until
            // the callback is done.
            let guard = bpfvet_maps::pin();
            let next = {
                let mut table = self.timers.lock();
                let due = table
                    .timers
                    .iter()
                    .filter_map(|(&addr, t)| Some((t.expires?, t.armed_seq, addr)))
                    .filter(|&(at, _, _)| at <= target)
                    .min();
                due.and_then(|(at, _, addr)| {
                    let t = table.timers.get_mut(&addr)?;
                    t.expires = None;
                    Some((at, addr, t.clone()))
                })
            };
            let Some((at, addr, timer)) = next else { break };
            if at > self.clock.elapsed() {
                self.clock.elapsed.store(at, Ordering::Release);
            }
            // The kernel's timer callback does nothing once the callback
            // was dropped (bpf_timer_cancel).
            let Some((prog, pc)) = timer.callback else {
                continue;
            };
            fired += 1;
            if fired > MAX_CALLBACKS_PER_ADVANCE {
                return Err(VmError::Invalid(format!(
                    "timer callbacks keep firing at one instant: more than \
                     {MAX_CALLBACKS_PER_ADVANCE} in one advance_time"
                )));
            }
            self.run_timer_callback(engine, addr, &timer, prog, pc)?;
            drop(guard);
        }
        self.clock.elapsed.store(target, Ordering::Release);
        Ok(fired)
    }

    fn run_timer_callback(
        &self,
        engine: &dyn Engine,
        addr: u64,
        timer: &Timer,
        prog: usize,
        pc: usize,
    ) -> Result<()> {
        let mut run = Run::new(self, Ctx::Bytes);
        run.set_cpu(timer.cpu)?;
        run.ctx_addr = 0;
        run.running_timer = Some(addr);
        let key = timer.key.clone();
        let value_size = self.maps[timer.map].attr().value_size as usize;
        run.add_region(timer.value, value_size, true);
        run.add_region(key.as_ptr() as u64, key.len(), false);
        run.async_values
            .push((timer.value, timer.map, timer.key.clone()));
        let args = [
            map_handle(timer.map),
            key.as_ptr() as u64,
            timer.value,
            0,
            0,
        ];
        // The verifier proved the callback returns 0; nothing reads it.
        engine.execute(&mut run, prog, pc, args, 0)?;
        Ok(())
    }
}

impl Run<'_> {
    /// bpf_timer_init, bpf_timer_set_callback, bpf_timer_start and
    /// bpf_timer_cancel, and the kfuncs bpf_wq_init, bpf_wq_set_callback_impl
    /// and bpf_wq_start; `args` are r1..r3.
    pub(crate) fn async_call(
        &mut self,
        name: &'static str,
        args: [u64; 3],
        prog: usize,
        pc: usize,
    ) -> Result<u64> {
        let [timer, a2, a3] = args;
        let kind = if name.starts_with("bpf_wq") {
            AsyncKind::Wq
        } else {
            AsyncKind::Timer
        };
        // The 16 bytes of the `struct bpf_timer` / `bpf_wq` must be run
        // memory.
        self.mem(timer, 16, true, pc, name)?;
        match name {
            "bpf_timer_init" => self.async_init(AsyncKind::Timer, timer, a2, a3, pc, name),
            "bpf_wq_init" => {
                // Its flags must be 0.
                if a3 as u32 != 0 {
                    return Ok(EINVAL);
                }
                self.async_init(AsyncKind::Wq, timer, a2, CLOCK_MONOTONIC, pc, name)
            }
            "bpf_wq_set_callback_impl" if a3 as u32 != 0 => Ok(EINVAL),
            "bpf_wq_start" => {
                if a2 as u32 != 0 {
                    return Ok(EINVAL);
                }
                let now = self.vm.clock.elapsed();
                let mut table = self.vm.timers.lock();
                let seq = table.next_seq;
                let Some(t) = table.of_kind(timer, kind) else {
                    return Ok(EINVAL);
                };
                if t.callback.is_none() {
                    return Ok(EINVAL);
                }
                // Queued work that has not run yet is not queued twice.
                if t.expires.is_none() {
                    t.expires = Some(now);
                    t.cpu = self.cpu;
                    t.armed_seq = seq;
                    table.next_seq += 1;
                }
                Ok(0)
            }
            "bpf_timer_set_callback" | "bpf_wq_set_callback_impl" => {
                let Some(cb) = self.callback(prog, a2) else {
                    return Err(self.fault(pc, name, "callback is not a function of this program"));
                };
                let mut table = self.vm.timers.lock();
                Ok(match table.of_kind(timer, kind) {
                    Some(t) => {
                        t.callback = Some((prog, cb));
                        0
                    }
                    None => EINVAL,
                })
            }
            "bpf_timer_start" => {
                let (nsecs, flags) = (a2, a3);
                if flags & !(BPF_F_TIMER_ABS | BPF_F_TIMER_CPU_PIN) != 0 {
                    return Ok(EINVAL);
                }
                let now = self.vm.clock.elapsed();
                let mut table = self.vm.timers.lock();
                let seq = table.next_seq;
                let Some(t) = table.of_kind(timer, kind) else {
                    return Ok(EINVAL);
                };
                if t.callback.is_none() {
                    return Ok(EINVAL);
                }
                t.expires = Some(if flags & BPF_F_TIMER_ABS != 0 {
                    // An absolute time of the timer's clock; one already
                    // past fires at once.
                    let base = (self.vm.clock.now(t.clock as libc::clockid_t))
                        .unwrap_or(0)
                        .wrapping_sub(now);
                    nsecs.saturating_sub(base).max(now)
                } else {
                    now.saturating_add(nsecs)
                });
                t.cpu = self.cpu;
                t.armed_seq = seq;
                table.next_seq += 1;
                Ok(0)
            }
            _ => {
                // bpf_timer_cancel
                let mut table = self.vm.timers.lock();
                let Some(t) = table.of_kind(timer, kind) else {
                    return Ok(EINVAL);
                };
                if self.running_timer == Some(timer) {
                    // Cancelling its own timer would wait for itself.
                    return Ok(EDEADLK);
                }
                t.callback = None;
                Ok(t.expires.take().is_some() as u64)
            }
        }
    }

    fn async_init(
        &mut self,
        kind: AsyncKind,
        timer: u64,
        map: u64,
        flags: u64,
        pc: usize,
        name: &'static str,
    ) -> Result<u64> {
        let clock = flags & (MAX_CLOCKS - 1);
        if flags >= MAX_CLOCKS
            || !matches!(clock, CLOCK_MONOTONIC | CLOCK_REALTIME | CLOCK_BOOTTIME)
        {
            return Ok(EINVAL);
        }
        let what = match kind {
            AsyncKind::Timer => "timers",
            AsyncKind::Wq => "work items (bpf_wq)",
        };
        let Some(mi) = crate::code::map_index(map).filter(|&i| i < self.vm.maps.len()) else {
            return Err(self.fault(
                pc,
                name,
                format!("{what} in maps other than the object's own (inner maps) are not modelled"),
            ));
        };
        let m = &self.vm.maps[mi];
        let attr = m.attr();
        let offsets = self.vm.async_offsets.get(mi).copied().unwrap_or_default();
        let Some(field_off) = (match kind {
            AsyncKind::Timer => offsets.timer,
            AsyncKind::Wq => offsets.wq,
        }) else {
            return Err(self.fault(pc, name, format!("the map's value has no field for {what}")));
        };
        let value = timer.wrapping_sub(field_off as u64);
        let key: Box<[u8]> = match attr.map_type {
            MapType::ARRAY => {
                let Some(base) = m.lookup_elem(&0u32.to_le_bytes(), 0, &self.guard) else {
                    return Err(self.fault(pc, name, "the array has no elements"));
                };
                let stride = (attr.value_size as u64).div_ceil(8) * 8;
                let off = value.wrapping_sub(base.as_ptr() as u64);
                if stride == 0
                    || !off.is_multiple_of(stride)
                    || off / stride >= attr.max_entries as u64
                {
                    return Err(self.fault(pc, name, "the field is not in a value of this map"));
                }
                ((off / stride) as u32).to_le_bytes().into()
            }
            // Their elements' frees reach the table through the map's free
            // hook (Vm::load), as the kernel cancels the element's timer.
            MapType::HASH | MapType::LRU_HASH => {
                let Some((_, _, key)) = self
                    .async_values
                    .iter()
                    .find(|(v, i, _)| *v == value && *i == mi)
                else {
                    return Err(self.fault(
                        pc,
                        name,
                        "the field is not in a value this run looked up in this map",
                    ));
                };
                key.clone()
            }
            t => {
                return Err(self.fault(
                    pc,
                    name,
                    format!(
                        "{what} in {t} map values are not modelled (ARRAY, HASH and \
                         LRU_HASH are)"
                    ),
                ))
            }
        };
        let mut table = self.vm.timers.lock();
        if table.timers.contains_key(&timer) {
            return Ok(EBUSY);
        }
        table.timers.insert(
            timer,
            Timer {
                kind,
                map: mi,
                value,
                key,
                clock,
                callback: None,
                expires: None,
                cpu: self.cpu,
                armed_seq: 0,
            },
        );
        Ok(0)
    }
}
