//! HASH, PERCPU_HASH, LRU_HASH and LRU_PERCPU_HASH (kernel/bpf/hashtab.c,
//! bpf_lru_list.c).
//!
//! A fixed array of roundup_pow_of_two(max_entries) buckets, each a
//! singly linked chain that readers walk without locks and writers change
//! under the bucket's spin lock. Chains end in a "nulls" marker naming
//! their bucket: a preallocated element can be freed and reused in another
//! bucket while a reader is on it, and a reader that ends on a foreign
//! marker starts over (the kernel's hlist_nulls trick).
//!
//! Memory: preallocated elements (the default) live in one slab for the
//! map's lifetime and are recycled at once through a free list; with
//! BPF_F_NO_PREALLOC each element is allocated on update and freed after
//! an epoch grace period.
//!
//! Update of an existing key: HASH allocates a new element and swaps it in
//! (readers see the old or the new value, never a mix; each CPU has a spare
//! element so a full map can still be updated); per-CPU maps and BPF_F_LOCK
//! updates copy in place.
//!
//! LRU: when no free element is left, the update evicts one. bpfvet uses a
//! second-chance (clock) order over elements in insertion order with the
//! kernel's "ref" bit set by program lookups; the kernel's exact choice of
//! victim (per-CPU local free lists, active/inactive lists) is not copied.
//! BPF_F_NO_COMMON_LRU gives each CPU its own list and share of elements.

use std::alloc::Layout;
use std::any::Any;
use std::collections::VecDeque;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

use bpfvet_isa::uapi::{self, MapType};

use crate::attr::{access_ok, round8, ACCESS_MASK, KMALLOC_MAX_SIZE, PCPU_MIN_UNIT_SIZE};
use crate::hash::{jhash, random_seed, xxh3_32};
use crate::sync::spin_wait;
use crate::value::{bytes_equal, fill_zero, store_bytes, Slab, ValueLayout};
use crate::{Common, FreeHook, Guard, Map, MapAttr, MapError, Result};

const CREATE_FLAG_MASK: u32 = uapi::BPF_F_NO_PREALLOC
    | uapi::BPF_F_NO_COMMON_LRU
    | uapi::BPF_F_NUMA_NODE
    | ACCESS_MASK
    | uapi::BPF_F_ZERO_SEED;

/// Element header: chain link and hash; key and value(s) follow.
const HDR: usize = 16;

#[repr(C)]
struct ElemHdr {
    next: AtomicUsize,
    hash: AtomicU32,
    _pad: u32,
}

fn is_nulls(link: usize) -> bool {
    link & 1 == 1
}

fn nulls_of(bucket: usize) -> usize {
    (bucket << 1) | 1
}

/// A spin lock word plus the chain head.
pub(crate) struct Bucket {
    lock: AtomicU32,
    head: AtomicUsize,
}

struct BucketGuard<'a>(&'a AtomicU32);

impl Bucket {
    fn lock(&self) -> BucketGuard<'_> {
        let mut spins = 0;
        while self
            .lock
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spin_wait(&mut spins);
        }
        BucketGuard(&self.lock)
    }
}

impl Drop for BucketGuard<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}

/// The free list and eviction order of one LRU list (one per map, or one
/// per CPU with BPF_F_NO_COMMON_LRU).
#[derive(Default)]
struct LruList {
    free: Vec<u32>,
    /// (element index, generation when queued) oldest first; entries whose
    /// generation is stale were deleted meanwhile and are skipped.
    order: VecDeque<(u32, u32)>,
    capacity: usize,
}

struct Lru {
    lists: Vec<Mutex<LruList>>,
    /// Which list an element belongs to.
    owner: Box<[u32]>,
    generation: Box<[AtomicU32]>,
    referenced: Box<[AtomicU8]>,
}

enum Pool {
    /// BPF_F_NO_PREALLOC: elements come from the allocator.
    OnDemand,
    Prealloc {
        slab: Slab,
        free: Mutex<Vec<u32>>,
        /// The kernel's per-CPU extra elements (`extra_elems`): a replacing
        /// update takes its CPU's spare for the new element and leaves the
        /// old one there. Element addresses; `NO_SPARE` while in use.
        spares: Box<[Spare]>,
    },
    Lru {
        slab: Slab,
        lru: Lru,
    },
}

pub struct HashMap {
    common: Common,
    layout: ValueLayout,
    percpu: bool,
    lru: bool,
    buckets: Box<[Bucket]>,
    mask: usize,
    seed: u32,
    /// BPF_F_ZERO_SEED: hash as the kernel does (jhash, seed 0), so that
    /// buckets, and the order keys are walked in, are the kernel's.
    zero_seed: bool,
    key_size: usize,
    /// round8(value_size): one CPU's value.
    stride: usize,
    /// Offset of the value(s) in an element.
    value_off: usize,
    elem_size: usize,
    count: AtomicUsize,
    pool: Pool,
    /// Told of every element freed or reused ([`Map::set_free_hook`]).
    free_hook: std::sync::OnceLock<FreeHook>,
}

// SAFETY: all shared state is atomics or behind mutexes; raw element
// pointers are only dereferenced under the rules in the module docs.
unsafe impl Send for HashMap {}
// SAFETY: as above.
unsafe impl Sync for HashMap {}

/// htab_map_alloc_check.
fn check_attr(attr: &MapAttr) -> Result<()> {
    let percpu = matches!(
        attr.map_type,
        MapType::PERCPU_HASH | MapType::LRU_PERCPU_HASH
    );
    let lru = matches!(attr.map_type, MapType::LRU_HASH | MapType::LRU_PERCPU_HASH);
    let percpu_lru = attr.map_flags & uapi::BPF_F_NO_COMMON_LRU != 0;
    let prealloc = attr.map_flags & uapi::BPF_F_NO_PREALLOC == 0;
    let numa = attr.map_flags & uapi::BPF_F_NUMA_NODE != 0;
    if attr.map_flags & !CREATE_FLAG_MASK != 0 || !access_ok(attr.map_flags) {
        return Err(MapError::Invalid("unknown hash map flags"));
    }
    if !lru && percpu_lru {
        return Err(MapError::Invalid("BPF_F_NO_COMMON_LRU without an LRU map"));
    }
    if lru && !prealloc {
        return Err(MapError::NotSupp);
    }
    if numa && (percpu || percpu_lru) {
        return Err(MapError::Invalid("BPF_F_NUMA_NODE on a per-CPU map"));
    }
    if attr.max_entries == 0 || attr.key_size == 0 || attr.value_size == 0 {
        return Err(MapError::Invalid(
            "zero max_entries, key_size or value_size",
        ));
    }
    if attr.key_size as u64 + attr.value_size as u64 >= KMALLOC_MAX_SIZE - 48 {
        return Err(MapError::TooBig);
    }
    if percpu && round8(attr.value_size as usize) > PCPU_MIN_UNIT_SIZE as usize {
        return Err(MapError::TooBig);
    }
    Ok(())
}

impl HashMap {
    pub fn new(mut attr: MapAttr) -> Result<HashMap> {
        check_attr(&attr)?;
        let percpu = matches!(
            attr.map_type,
            MapType::PERCPU_HASH | MapType::LRU_PERCPU_HASH
        );
        let lru = matches!(attr.map_type, MapType::LRU_HASH | MapType::LRU_PERCPU_HASH);
        let percpu_lru = attr.map_flags & uapi::BPF_F_NO_COMMON_LRU != 0;
        let prealloc = attr.map_flags & uapi::BPF_F_NO_PREALLOC == 0;
        let ncpu = attr.nr_cpus;
        if percpu_lru {
            // Each CPU gets an equal share: round max_entries to a multiple.
            let up = (attr.max_entries as u64).div_ceil(ncpu as u64) * ncpu as u64;
            attr.max_entries = if up > u32::MAX as u64 {
                attr.max_entries / ncpu * ncpu
            } else {
                up as u32
            };
            if attr.max_entries == 0 {
                return Err(MapError::Invalid("max_entries below the CPU count"));
            }
        }
        if attr.max_entries > 1 << 31 {
            return Err(MapError::TooBig);
        }
        let n_buckets = (attr.max_entries as usize).next_power_of_two();
        let key_size = attr.key_size as usize;
        let stride = round8(attr.value_size as usize);
        let value_off = HDR + round8(key_size);
        let elem_size = value_off
            + if percpu {
                stride * ncpu as usize
            } else {
                stride
            };
        let zero_seed = attr.map_flags & uapi::BPF_F_ZERO_SEED != 0;
        let seed = if zero_seed { 0 } else { random_seed() };
        let max = attr.max_entries as usize;
        let pool = if lru {
            let slab = alloc_slab(max, elem_size)?;
            let nlists = if percpu_lru { ncpu as usize } else { 1 };
            let mut lists: Vec<LruList> = (0..nlists).map(|_| LruList::default()).collect();
            let mut owner = Vec::with_capacity(max);
            for i in 0..max {
                let l = i % nlists;
                lists[l].free.push(i as u32);
                lists[l].capacity += 1;
                owner.push(l as u32);
            }
            for l in &mut lists {
                l.free.reverse();
            }
            Pool::Lru {
                slab,
                lru: Lru {
                    lists: lists.into_iter().map(Mutex::new).collect(),
                    owner: owner.into_boxed_slice(),
                    generation: (0..max).map(|_| AtomicU32::new(0)).collect(),
                    referenced: (0..max).map(|_| AtomicU8::new(0)).collect(),
                },
            }
        } else if prealloc {
            let spares = if percpu { 0 } else { ncpu as usize };
            let slab = alloc_slab(max + spares, elem_size)?;
            let base = slab.base() as usize;
            Pool::Prealloc {
                slab,
                free: Mutex::new((0..max as u32).rev().collect()),
                spares: (max..max + spares)
                    .map(|i| Spare(AtomicUsize::new(base + i * elem_size)))
                    .collect(),
            }
        } else {
            Pool::OnDemand
        };
        let buckets: Box<[Bucket]> = (0..n_buckets)
            .map(|i| Bucket {
                lock: AtomicU32::new(0),
                head: AtomicUsize::new(nulls_of(i)),
            })
            .collect();
        let layout = attr.layout();
        crate::accounting::add(std::mem::size_of_val(&*buckets));
        Ok(HashMap {
            common: Common::new(attr),
            layout,
            percpu,
            lru,
            buckets,
            mask: n_buckets - 1,
            seed,
            zero_seed,
            key_size,
            stride,
            value_off,
            elem_size,
            count: AtomicUsize::new(0),
            pool,
            free_hook: std::sync::OnceLock::new(),
        })
    }

    /// An element leaves the map (deleted, replaced, evicted): where the
    /// kernel frees its value's special fields (cancelling its timer).
    fn freeing(&self, e: usize) {
        if let Some(hook) = self.free_hook.get() {
            if let Some(v) = NonNull::new(self.value_ptr(e, 0)) {
                hook(v);
            }
        }
    }

    /// Number of elements in the map.
    pub fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline(always)]
    fn hash(&self, key: &[u8]) -> u32 {
        // With a random seed the kernel's order is random too, so any good
        // hash will do: xxh3 takes a third to a half of jhash's
        // instructions (see hash.rs), on every lookup, update and delete.
        if self.zero_seed {
            jhash(key, 0)
        } else {
            xxh3_32(key, self.seed)
        }
    }

    #[inline(always)]
    fn hdr(e: usize) -> &'static ElemHdr {
        // SAFETY: `e` is a live element (slab memory lives as long as the
        // map; on-demand elements outlive every guard that can see them).
        unsafe { &*(e as *const ElemHdr) }
    }

    #[inline(always)]
    fn key_ptr(e: usize) -> *mut u8 {
        (e + HDR) as *mut u8
    }

    #[inline(always)]
    fn value_ptr(&self, e: usize, cpu: u32) -> *mut u8 {
        (e + self.value_off + cpu as usize * self.stride) as *mut u8
    }

    /// Walk bucket `b` without locks; restarts when a reused element
    /// carried the walk into another chain.
    #[inline(always)]
    fn find(&self, b: usize, hash: u32, key: &[u8]) -> Option<usize> {
        'again: loop {
            let mut link = self.buckets[b].head.load(Ordering::Acquire);
            while !is_nulls(link) {
                let h = Self::hdr(link);
                // SAFETY: key_size bytes at an 8-aligned offset of a live
                // element.
                if h.hash.load(Ordering::Relaxed) == hash
                    && unsafe { bytes_equal(Self::key_ptr(link), key) }
                {
                    return Some(link);
                }
                link = h.next.load(Ordering::Acquire);
            }
            if link != nulls_of(b) {
                continue 'again;
            }
            return None;
        }
    }

    /// Find under the bucket lock: returns the element and the link that
    /// points to it.
    fn find_locked(&self, b: usize, hash: u32, key: &[u8]) -> Option<(usize, &AtomicUsize)> {
        let mut prev = &self.buckets[b].head;
        let mut link = prev.load(Ordering::Acquire);
        while !is_nulls(link) {
            let h = Self::hdr(link);
            // SAFETY: as in find.
            if h.hash.load(Ordering::Relaxed) == hash
                && unsafe { bytes_equal(Self::key_ptr(link), key) }
            {
                return Some((link, prev));
            }
            prev = &h.next;
            link = h.next.load(Ordering::Acquire);
        }
        None
    }

    fn slab_base(&self) -> usize {
        match &self.pool {
            Pool::Prealloc { slab, .. } | Pool::Lru { slab, .. } => slab.base() as usize,
            Pool::OnDemand => 0,
        }
    }

    fn index_of(&self, e: usize) -> u32 {
        ((e - self.slab_base()) / self.elem_size) as u32
    }

    fn elem_at(&self, i: u32) -> usize {
        self.slab_base() + i as usize * self.elem_size
    }

    /// Take an element for a new key (or, `replacing`, for a swap).
    fn alloc_elem(&self, replacing: bool, cpu: u32) -> Result<usize> {
        match &self.pool {
            Pool::OnDemand => {
                if !replacing {
                    let n = self.count.fetch_add(1, Ordering::AcqRel);
                    if n >= self.common.attr.max_entries as usize {
                        self.count.fetch_sub(1, Ordering::AcqRel);
                        return Err(MapError::TooBig);
                    }
                }
                let layout =
                    Layout::from_size_align(self.elem_size, 8).map_err(|_| MapError::NoMem)?;
                // SAFETY: the layout has a non-zero size (HDR > 0).
                let p = unsafe { std::alloc::alloc_zeroed(layout) };
                if p.is_null() {
                    if !replacing {
                        self.count.fetch_sub(1, Ordering::AcqRel);
                    }
                    return Err(MapError::NoMem);
                }
                crate::accounting::add(self.elem_size);
                Ok(p as usize)
            }
            Pool::Prealloc { free, spares, .. } => {
                if replacing && !self.percpu {
                    return Ok(take_spare(spares, cpu));
                }
                let i = lock(free).pop().ok_or(MapError::TooBig)?;
                self.count.fetch_add(1, Ordering::AcqRel);
                Ok(self.elem_at(i))
            }
            Pool::Lru { lru, .. } => {
                let list = if lru.lists.len() > 1 {
                    cpu as usize % lru.lists.len()
                } else {
                    0
                };
                let i = self.lru_pop(lru, list)?;
                self.count.fetch_add(1, Ordering::AcqRel);
                lru.generation[i as usize].fetch_add(1, Ordering::AcqRel);
                lru.referenced[i as usize].store(0, Ordering::Relaxed);
                Ok(self.elem_at(i))
            }
        }
    }

    /// A free element of LRU list `l`, evicting the least recently used
    /// unreferenced element when none is free.
    fn lru_pop(&self, lru: &Lru, l: usize) -> Result<u32> {
        // Two passes clear every ref bit, so a victim is found unless other
        // threads keep stealing them; bound the work either way.
        let mut budget = 4 * lock(&lru.lists[l]).capacity + 8;
        loop {
            let mut list = lock(&lru.lists[l]);
            if let Some(i) = list.free.pop() {
                return Ok(i);
            }
            let Some((i, gen)) = list.order.pop_front() else {
                return Err(MapError::NoMem);
            };
            if lru.generation[i as usize].load(Ordering::Acquire) != gen {
                continue; // deleted since it was queued
            }
            if lru.referenced[i as usize].swap(0, Ordering::Relaxed) != 0 && budget > 0 {
                budget -= 1;
                list.order.push_back((i, gen));
                continue;
            }
            drop(list);
            // Unlink the victim under its bucket lock, if still linked.
            let e = self.elem_at(i);
            let hash = Self::hdr(e).hash.load(Ordering::Relaxed);
            let b = hash as usize & self.mask;
            let _g = self.buckets[b].lock();
            if lru.generation[i as usize].load(Ordering::Acquire) != gen {
                continue;
            }
            let mut prev = &self.buckets[b].head;
            let mut link = prev.load(Ordering::Acquire);
            while !is_nulls(link) && link != e {
                prev = &Self::hdr(link).next;
                link = prev.load(Ordering::Acquire);
            }
            if link != e {
                continue;
            }
            prev.store(Self::hdr(e).next.load(Ordering::Acquire), Ordering::Release);
            self.count.fetch_sub(1, Ordering::AcqRel);
            lru.generation[i as usize].fetch_add(1, Ordering::AcqRel);
            self.freeing(e);
            return Ok(i);
        }
    }

    /// Give an unlinked element back. `counted`: it was counted in `count`;
    /// `spare_of`: it becomes that CPU's spare (a replaced element of a
    /// preallocated map).
    fn free_elem(&self, e: usize, counted: bool, spare_of: Option<u32>, guard: &Guard) {
        self.freeing(e);
        match &self.pool {
            Pool::OnDemand => {
                if counted {
                    self.count.fetch_sub(1, Ordering::AcqRel);
                }
                let size = self.elem_size;
                // SAFETY: the element is unlinked; readers that might still
                // see it hold guards pinned before now, so the deferred free
                // runs only after they are done.
                unsafe {
                    guard.defer_unchecked(move || {
                        if let Ok(l) = Layout::from_size_align(size, 8) {
                            std::alloc::dealloc(e as *mut u8, l);
                            crate::accounting::sub(size);
                        }
                    })
                };
            }
            Pool::Prealloc { free, spares, .. } => {
                if let Some(cpu) = spare_of {
                    put_spare(spares, cpu, e);
                } else {
                    if counted {
                        self.count.fetch_sub(1, Ordering::AcqRel);
                    }
                    lock(free).push(self.index_of(e));
                }
            }
            Pool::Lru { lru, .. } => {
                if counted {
                    self.count.fetch_sub(1, Ordering::AcqRel);
                }
                let i = self.index_of(e);
                lru.generation[i as usize].fetch_add(1, Ordering::AcqRel);
                lock(&lru.lists[lru.owner[i as usize] as usize])
                    .free
                    .push(i);
            }
        }
    }

    /// Queue a freshly linked LRU element for eviction order.
    fn lru_track(&self, e: usize) {
        if let Pool::Lru { lru, .. } = &self.pool {
            let i = self.index_of(e);
            let gen = lru.generation[i as usize].load(Ordering::Acquire);
            let mut list = lock(&lru.lists[lru.owner[i as usize] as usize]);
            list.order.push_back((i, gen));
            if list.order.len() > 2 * list.capacity + 64 {
                // Drop entries of deleted elements so the queue stays bounded.
                let gens = &lru.generation;
                list.order
                    .retain(|&(i, g)| gens[i as usize].load(Ordering::Relaxed) == g);
            }
        }
    }

    /// Fill a new element: key, hash and value(s). `cpu`: None writes every
    /// CPU's value from a syscall buffer, Some(c) writes c's and zeroes the
    /// rest.
    fn init_elem(&self, e: usize, key: &[u8], hash: u32, value: &[u8], cpu: Option<u32>) {
        Self::hdr(e).hash.store(hash, Ordering::Relaxed);
        // SAFETY: the element is ours (not linked), with key_size bytes at
        // HDR and the values after value_off.
        unsafe {
            store_bytes(Self::key_ptr(e), key);
            self.write_values(e, value, cpu, false, true);
        }
    }

    /// # Safety
    /// `e` must be a live element of this map.
    #[inline]
    unsafe fn write_values(
        &self,
        e: usize,
        value: &[u8],
        cpu: Option<u32>,
        locked: bool,
        fresh: bool,
    ) {
        // SAFETY: every slot is inside the element.
        unsafe {
            if !self.percpu {
                let dst = self.value_ptr(e, 0);
                if fresh {
                    // New elements start with zeroed special fields; the
                    // copy below writes every other byte.
                    self.layout.zero_specials(dst);
                }
                self.layout.store(dst, value, locked);
                return;
            }
            for c in 0..self.common.attr.nr_cpus {
                let dst = self.value_ptr(e, c);
                match cpu {
                    // The syscall side copies whole 8-byte-rounded slots.
                    None => store_bytes(dst, &value[c as usize * self.stride..][..self.stride]),
                    Some(want) if want == c => self.layout.copy_in(dst, value),
                    Some(_) if fresh => fill_zero(dst, self.stride),
                    Some(_) => {}
                }
            }
        }
    }

    /// Copy an element's value(s) out in the syscall format.
    fn read_values(&self, e: usize, out: &mut [u8], locked: bool) {
        // SAFETY: slots are inside a live element.
        unsafe {
            if self.percpu {
                for c in 0..self.common.attr.nr_cpus {
                    let dst = &mut out[c as usize * self.stride..][..self.stride];
                    crate::value::load_bytes(dst, self.value_ptr(e, c));
                }
            } else {
                self.layout.load(out, self.value_ptr(e, 0), locked);
            }
        }
    }

    fn update_inner(
        &self,
        key: &[u8],
        value: &[u8],
        flags: u64,
        cpu: Option<u32>,
        guard: &Guard,
    ) -> Result<()> {
        let mode = flags & !uapi::BPF_F_LOCK;
        let with_lock = flags & uapi::BPF_F_LOCK != 0;
        if (self.percpu || self.lru) && flags > uapi::BPF_EXIST || mode > uapi::BPF_EXIST {
            return Err(MapError::Invalid("unknown update flags"));
        }
        if with_lock {
            self.common.check_lock_flag(flags)?;
        }
        let hash = self.hash(key);
        let b = hash as usize & self.mask;
        if with_lock {
            // In place under the value's lock, without the bucket lock.
            let old = self.find(b, hash, key);
            check_flags(old.is_some(), mode)?;
            if let Some(e) = old {
                // SAFETY: live element.
                unsafe { self.write_values(e, value, cpu, true, false) };
                return Ok(());
            }
        }
        let in_place = self.percpu;
        // LRU maps take their element before the bucket lock: eviction
        // locks another bucket.
        let pre = if self.lru && !(self.percpu && mode == uapi::BPF_EXIST) {
            Some(self.alloc_elem(false, cpu.unwrap_or(0))?)
        } else {
            None
        };
        let bucket = &self.buckets[b];
        let g = bucket.lock();
        let old = self.find_locked(b, hash, key);
        if let Err(e) = check_flags(old.is_some(), mode) {
            drop(g);
            if let Some(p) = pre {
                self.free_elem(p, true, None, guard);
            }
            return Err(e);
        }
        if let Some((e, _)) = old {
            if with_lock || in_place {
                // SAFETY: live element, under the bucket lock.
                unsafe { self.write_values(e, value, cpu, with_lock, false) };
                if let Some(p) = &pre {
                    self.touch(e);
                    drop(g);
                    self.free_elem(*p, true, None, guard);
                }
                return Ok(());
            }
        }
        let new = match pre {
            Some(p) => p,
            None => self.alloc_elem(old.is_some(), cpu.unwrap_or(0))?,
        };
        self.init_elem(new, key, hash, value, cpu);
        // Link the new element first, then unlink the old: a reader sees
        // one or the other.
        Self::hdr(new)
            .next
            .store(bucket.head.load(Ordering::Acquire), Ordering::Relaxed);
        bucket.head.store(new, Ordering::Release);
        if let Some((e, _)) = old {
            // Re-find the link to the old element: the new one is before it.
            let mut prev = &Self::hdr(new).next;
            let mut link = prev.load(Ordering::Acquire);
            while link != e {
                prev = &Self::hdr(link).next;
                link = prev.load(Ordering::Acquire);
            }
            prev.store(Self::hdr(e).next.load(Ordering::Acquire), Ordering::Release);
        }
        drop(g);
        if self.lru {
            self.lru_track(new);
        }
        if let Some((e, _)) = old {
            // Non-LRU prealloc: the old element becomes this CPU's spare;
            // LRU and on-demand: it goes back (LRU counted it, on-demand
            // did not count the replacement).
            let counted = self.lru;
            let spare_of = (!self.lru).then_some(cpu.unwrap_or(0));
            self.free_elem(e, counted, spare_of, guard);
        }
        Ok(())
    }

    /// Whether every CPU sees the same value of a key (not a per-CPU
    /// map): then [`HashMap::lookup_shared`] is a program's lookup.
    pub fn shared_values(&self) -> bool {
        !self.percpu
    }

    /// A program's lookup in a map of [`HashMap::shared_values`]: the
    /// value's address, or null (also for a key of another size). Inlined,
    /// so a caller whose key length is a constant gets the hash and the
    /// key compare for that length.
    ///
    /// # Safety
    /// The caller stays pinned (an epoch guard) while it uses the value.
    #[inline(always)]
    pub unsafe fn lookup_shared(&self, key: &[u8]) -> *mut u8 {
        if key.len() != self.key_size {
            return std::ptr::null_mut();
        }
        let hash = self.hash(key);
        match self.find(hash as usize & self.mask, hash, key) {
            Some(e) => {
                self.touch(e);
                self.value_ptr(e, 0)
            }
            None => std::ptr::null_mut(),
        }
    }

    /// [`HashMap::lookup_shared`] for this map's key size, as a function
    /// taking the key's address (for compiled code and the interpreter's
    /// lookup helper): the hash and key compare of common key sizes are
    /// specialised for that size.
    pub fn shared_lookup(&self) -> Option<SharedLookup> {
        if !self.shared_values() {
            return None;
        }
        let f: SharedLookup = match self.key_size {
            4 => lookup_fixed::<4>,
            8 => lookup_fixed::<8>,
            12 => lookup_fixed::<12>,
            16 => lookup_fixed::<16>,
            20 => lookup_fixed::<20>,
            24 => lookup_fixed::<24>,
            32 => lookup_fixed::<32>,
            36 => lookup_fixed::<36>,
            40 => lookup_fixed::<40>,
            48 => lookup_fixed::<48>,
            64 => lookup_fixed::<64>,
            _ => lookup_any,
        };
        Some(f)
    }

    #[inline(always)]
    fn touch(&self, e: usize) {
        if let Pool::Lru { lru, .. } = &self.pool {
            lru.referenced[self.index_of(e) as usize].store(1, Ordering::Relaxed);
        }
    }

    fn delete_inner(&self, key: &[u8], out: Option<(&mut [u8], bool)>) -> Result<()> {
        let hash = self.hash(key);
        let b = hash as usize & self.mask;
        let guard = crate::pin();
        let g = self.buckets[b].lock();
        let (e, prev) = self.find_locked(b, hash, key).ok_or(MapError::NotFound)?;
        if let Some((buf, locked)) = out {
            self.read_values(e, buf, locked);
        }
        prev.store(Self::hdr(e).next.load(Ordering::Acquire), Ordering::Release);
        drop(g);
        self.free_elem(e, true, None, &guard);
        Ok(())
    }

    /// Walk order of get_next_key: the rest of the key's chain, then the
    /// first element of the following buckets.
    fn next_key(&self, key: Option<&[u8]>) -> Option<usize> {
        let mut start = 0;
        if let Some(k) = key {
            let hash = self.hash(k);
            let b = hash as usize & self.mask;
            if let Some(e) = self.find(b, hash, k) {
                let n = Self::hdr(e).next.load(Ordering::Acquire);
                if !is_nulls(n) {
                    return Some(n);
                }
                start = b + 1;
            }
        }
        for b in start..self.buckets.len() {
            let head = self.buckets[b].head.load(Ordering::Acquire);
            if !is_nulls(head) {
                return Some(head);
            }
        }
        None
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding these locks cannot leave them inconsistent
    // (push/pop only), so a poisoned lock is still usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

const NO_SPARE: usize = 0;

/// One CPU's spare slot, alone in its cache lines (two, for the adjacent
/// line prefetcher): every replacing update of a CPU swaps its own slot,
/// and slots sharing a line would bounce it between the CPUs.
#[repr(align(128))]
struct Spare(AtomicUsize);

/// Every spare slot once, `cpu`'s first.
fn slots_from(spares: &[Spare], cpu: u32) -> impl Iterator<Item = &AtomicUsize> {
    let own = (cpu as usize).min(spares.len().saturating_sub(1));
    spares[own..].iter().chain(&spares[..own]).map(|s| &s.0)
}

/// Take a spare: `cpu`'s own, or another CPU's when two callers claim the
/// same CPU number at once (the kernel's CPUs are exclusive; our callers'
/// CPU numbers need not be). There are as many spares as slots and every
/// taker puts one back, so the wait ends.
fn take_spare(spares: &[Spare], cpu: u32) -> usize {
    let mut spins = 0;
    loop {
        for slot in slots_from(spares, cpu) {
            if slot.load(Ordering::Relaxed) != NO_SPARE {
                let i = slot.swap(NO_SPARE, Ordering::Acquire);
                if i != NO_SPARE {
                    return i;
                }
            }
        }
        spin_wait(&mut spins);
    }
}

/// Leave element `e` as a spare in an empty slot, `cpu`'s first. A slot is
/// empty: the spare this caller took left one.
fn put_spare(spares: &[Spare], cpu: u32, e: usize) {
    let mut spins = 0;
    loop {
        for slot in slots_from(spares, cpu) {
            if slot
                .compare_exchange(NO_SPARE, e, Ordering::Release, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
        spin_wait(&mut spins);
    }
}

/// A lookup in a map of [`HashMap::shared_values`]: `(map, key)` to the
/// value's address or null.
///
/// # Safety
/// `map` is live, `key` is readable for the map's key size, and the
/// caller stays pinned (an epoch guard) while it uses the value.
pub type SharedLookup = unsafe extern "C" fn(*const HashMap, *const u8) -> *mut u8;

unsafe extern "C" fn lookup_fixed<const N: usize>(map: *const HashMap, key: *const u8) -> *mut u8 {
    // SAFETY: per `SharedLookup`, with N the map's key size
    // (`HashMap::shared_lookup` picks this copy only then).
    unsafe { (*map).lookup_shared(&*key.cast::<[u8; N]>()) }
}

unsafe extern "C" fn lookup_any(map: *const HashMap, key: *const u8) -> *mut u8 {
    // SAFETY: per `SharedLookup`.
    unsafe {
        let map = &*map;
        map.lookup_shared(std::slice::from_raw_parts(key, map.key_size))
    }
}

fn alloc_slab(n: usize, elem_size: usize) -> Result<Slab> {
    let bytes = (n as u64).saturating_mul(elem_size as u64);
    if bytes > crate::array::MAX_MAP_BYTES {
        return Err(MapError::NoMem);
    }
    Slab::new_zeroed(bytes as usize)
}

/// htab's check_flags.
pub(crate) fn check_flags(exists: bool, mode: u64) -> Result<()> {
    if exists && mode == uapi::BPF_NOEXIST {
        return Err(MapError::Exists);
    }
    if !exists && mode == uapi::BPF_EXIST {
        return Err(MapError::NotFound);
    }
    Ok(())
}

impl Drop for HashMap {
    fn drop(&mut self) {
        crate::accounting::sub(std::mem::size_of_val(&*self.buckets));
        if let Pool::OnDemand = self.pool {
            let layout = Layout::from_size_align(self.elem_size, 8);
            for b in self.buckets.iter() {
                let mut link = b.head.load(Ordering::Acquire);
                while !is_nulls(link) {
                    let next = Self::hdr(link).next.load(Ordering::Acquire);
                    if let Ok(l) = layout {
                        // SAFETY: no one else can reach the map any more;
                        // each linked element is freed once.
                        unsafe { std::alloc::dealloc(link as *mut u8, l) };
                        crate::accounting::sub(self.elem_size);
                    }
                    link = next;
                }
            }
        }
    }
}

impl Map for HashMap {
    fn attr(&self) -> &MapAttr {
        &self.common.attr
    }

    fn set_free_hook(&self, hook: FreeHook) -> bool {
        !self.percpu && self.free_hook.set(hook).is_ok()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn lookup(&self, key: &[u8], value: &mut [u8], flags: u64) -> Result<()> {
        self.common.check_sys_read()?;
        let locked = self.common.check_lookup_flags(flags)?;
        self.common.check_key(key)?;
        self.common.check_sys_value(value.len())?;
        let _guard = crate::pin();
        let hash = self.hash(key);
        let e = self
            .find(hash as usize & self.mask, hash, key)
            .ok_or(MapError::NotFound)?;
        self.read_values(e, value, locked);
        Ok(())
    }

    fn update(&self, key: &[u8], value: &[u8], flags: u64) -> Result<()> {
        self.common.check_sys_write()?;
        self.common.check_lock_flag(flags)?;
        self.common.check_key(key)?;
        self.common.check_sys_value(value.len())?;
        let cpu = if self.percpu { None } else { Some(0) };
        self.update_inner(key, value, flags, cpu, &crate::pin())
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        self.common.check_sys_write()?;
        self.common.check_key(key)?;
        self.delete_inner(key, None)
    }

    fn lookup_and_delete(&self, key: &[u8], value: &mut [u8], flags: u64) -> Result<()> {
        let locked = self
            .common
            .check_lookup_and_delete(key, value.len(), flags)?;
        self.delete_inner(key, Some((value, locked)))
    }

    fn get_next_key(&self, key: Option<&[u8]>, next: &mut [u8]) -> Result<()> {
        self.common.check_get_next_key(key, next)?;
        let _guard = crate::pin();
        let e = self.next_key(key).ok_or(MapError::NotFound)?;
        // SAFETY: key_size bytes of a live element.
        unsafe { crate::value::load_bytes(next, Self::key_ptr(e)) };
        Ok(())
    }

    fn freeze(&self) -> Result<()> {
        self.common.freeze()
    }

    fn lookup_elem(&self, key: &[u8], cpu: u32, _guard: &Guard) -> Option<NonNull<u8>> {
        if key.len() != self.key_size || cpu >= self.common.attr.nr_cpus {
            return None;
        }
        let hash = self.hash(key);
        let e = self.find(hash as usize & self.mask, hash, key)?;
        self.touch(e);
        NonNull::new(self.value_ptr(e, if self.percpu { cpu } else { 0 }))
    }

    fn update_elem(&self, key: &[u8], value: &[u8], flags: u64, cpu: u32) -> Result<()> {
        self.update_elem_guarded(key, value, flags, cpu, &crate::pin())
    }

    fn update_elem_guarded(
        &self,
        key: &[u8],
        value: &[u8],
        flags: u64,
        cpu: u32,
        guard: &Guard,
    ) -> Result<()> {
        self.common.check_key(key)?;
        self.common.check_prog_value(value.len())?;
        self.common.check_cpu(cpu)?;
        self.update_inner(key, value, flags, Some(cpu), guard)
    }

    fn delete_elem(&self, key: &[u8]) -> Result<()> {
        self.common.check_key(key)?;
        self.delete_inner(key, None)
    }

    fn for_each(
        &self,
        cpu: u32,
        _guard: &Guard,
        f: &mut dyn FnMut(&[u8], NonNull<u8>) -> bool,
    ) -> Result<u32> {
        self.common.check_cpu(cpu)?;
        let cpu = if self.percpu { cpu } else { 0 };
        let mut n = 0;
        let mut key = vec![0u8; self.key_size];
        for bucket in self.buckets.iter() {
            // Without locks, as the kernel: the callback may update or
            // delete elements of this map. A walk carried into another
            // chain by a reused element just ends this bucket early.
            let mut link = bucket.head.load(Ordering::Acquire);
            let mut steps = 0usize;
            while !is_nulls(link) && steps <= self.common.attr.max_entries as usize {
                steps += 1;
                n += 1;
                // SAFETY: a live element (slab or guard-protected).
                unsafe { crate::value::load_bytes(&mut key, Self::key_ptr(link)) };
                let Some(p) = NonNull::new(self.value_ptr(link, cpu)) else {
                    return Ok(n);
                };
                if !f(&key, p) {
                    return Ok(n);
                }
                link = Self::hdr(link).next.load(Ordering::Acquire);
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::create;

    fn k(n: u32) -> [u8; 4] {
        n.to_ne_bytes()
    }

    #[test]
    fn zero_seed_walks_keys_in_the_kernels_bucket_order() {
        // With BPF_F_ZERO_SEED the kernel's buckets are jhash(key, 0):
        // get_next_key goes through them in order.
        let m = create(MapAttr::new(MapType::HASH, 4, 8, 64).with_flags(uapi::BPF_F_ZERO_SEED))
            .unwrap();
        for n in 0..40 {
            m.update(&k(n), &[0; 8], 0).unwrap();
        }
        let mut buckets = Vec::new();
        let mut key: Option<[u8; 4]> = None;
        let mut next = [0u8; 4];
        while m
            .get_next_key(key.as_ref().map(|x| &x[..]), &mut next)
            .is_ok()
        {
            buckets.push(jhash(&next, 0) & 63);
            key = Some(next);
        }
        assert_eq!(buckets.len(), 40);
        assert!(buckets.windows(2).all(|w| w[0] <= w[1]), "{buckets:?}");
    }

    #[test]
    fn hash_full_map_refuses_new_keys_but_accepts_replacements() {
        for flags in [0, uapi::BPF_F_NO_PREALLOC] {
            let m = create(MapAttr::new(MapType::HASH, 4, 8, 3).with_flags(flags)).unwrap();
            for i in 0..3 {
                m.update(&k(i), &[i as u8; 8], 0).unwrap();
            }
            assert_eq!(m.update(&k(9), &[0; 8], 0).unwrap_err().errno(), 7);
            for _ in 0..10 {
                m.update(&k(1), &[42; 8], 0).unwrap();
            }
            let mut v = [0u8; 8];
            m.lookup(&k(1), &mut v, 0).unwrap();
            assert_eq!(v, [42; 8]);
            assert_eq!(m.update(&k(1), &[0; 8], 1).unwrap_err().errno(), 17);
            assert_eq!(m.update(&k(7), &[0; 8], 2).unwrap_err().errno(), 2);
            m.delete(&k(0)).unwrap();
            assert_eq!(m.delete(&k(0)).unwrap_err().errno(), 2);
            m.update(&k(9), &[9; 8], 1).unwrap();
            let mut seen = Vec::new();
            let mut cur: Option<[u8; 4]> = None;
            let mut next = [0u8; 4];
            while m
                .get_next_key(cur.as_ref().map(|c| &c[..]), &mut next)
                .is_ok()
            {
                seen.push(u32::from_ne_bytes(next));
                cur = Some(next);
            }
            seen.sort();
            assert_eq!(seen, vec![1, 2, 9]);
        }
    }

    #[test]
    fn hash_attribute_errnos() {
        let cases = [
            (MapType::HASH, 0, 8, 1, 0, 22),
            (MapType::HASH, 4, 0, 1, 0, 22),
            (MapType::HASH, 4, 8, 0, 0, 22),
            (MapType::HASH, 4, 8, 1, uapi::BPF_F_NO_COMMON_LRU, 22),
            (MapType::HASH, 4, 8, 1, uapi::BPF_F_MMAPABLE, 22),
            (MapType::LRU_HASH, 4, 8, 1, uapi::BPF_F_NO_PREALLOC, 524),
            (MapType::HASH, 4, 1 << 22, 1, 0, 7),
            (MapType::PERCPU_HASH, 4, 40000, 1, 0, 7),
        ];
        for (t, ks, vs, max, flags, errno) in cases {
            let a = MapAttr::new(t, ks, vs, max).with_flags(flags);
            assert_eq!(
                create(a).err().map(|e| e.errno()),
                Some(errno),
                "{t} {flags}"
            );
        }
    }

    #[test]
    fn lru_evicts_unreferenced_before_referenced() {
        let m = create(MapAttr::new(MapType::LRU_HASH, 4, 8, 4)).unwrap();
        for i in 0..4 {
            m.update(&k(i), &[1; 8], 0).unwrap();
        }
        let g = crate::pin();
        assert!(m.lookup_elem(&k(0), 0, &g).is_some());
        m.update(&k(10), &[2; 8], 0).unwrap();
        let mut v = [0u8; 8];
        m.lookup(&k(0), &mut v, 0).unwrap();
        assert_eq!(m.lookup(&k(1), &mut v, 0).unwrap_err().errno(), 2);
        m.lookup(&k(10), &mut v, 0).unwrap();
    }

    #[test]
    fn percpu_hash_updates_one_cpu_from_programs() {
        let mut a = MapAttr::new(MapType::PERCPU_HASH, 4, 4, 4);
        a.nr_cpus = 2;
        let m = create(a).unwrap();
        m.update_elem(&k(1), &[3; 4], 0, 1).unwrap();
        m.update_elem(&k(1), &[4; 4], 0, 0).unwrap();
        let mut v = [0u8; 16];
        m.lookup(&k(1), &mut v, 0).unwrap();
        assert_eq!(v, [4, 4, 4, 4, 0, 0, 0, 0, 3, 3, 3, 3, 0, 0, 0, 0]);
    }
}
