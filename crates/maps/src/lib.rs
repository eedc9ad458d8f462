//! BPF maps with the semantics of Linux 6.18's (see issue 5), plus RHASH,
//! the resizable hash map (SEEDS.md §2).
//!
//! Create a map with [`create`] from a [`MapAttr`]; the result is an
//! `Arc<dyn Map>` shared by Rust callers and the vm. Types: ARRAY,
//! PERCPU_ARRAY, HASH, PERCPU_HASH, LRU_HASH, LRU_PERCPU_HASH, RHASH, QUEUE,
//! STACK, RINGBUF ([`RingBuf`]), PROG_ARRAY ([`ProgArray`]), ARRAY_OF_MAPS
//! and HASH_OF_MAPS ([`MapOfMaps`]); reach a type's own API with
//! `map.as_any().downcast_ref::<T>()`.
//!
//! # Two sides, as in the kernel
//! * The **syscall side** ([`Map::lookup`], [`Map::update`], ...) copies
//!   keys and values in and out and checks permissions (BPF_F_RDONLY,
//!   frozen maps). Per-CPU maps take and return `nr_cpus` values, each
//!   rounded up to 8 bytes ([`MapAttr::syscall_value_size`]).
//! * The **program side** ([`Map::lookup_elem`], [`Map::update_elem`], ...)
//!   is what BPF helpers call: lookups return a raw pointer into the map.
//!
//! # The pointer contract (for the vm)
//! Pin an epoch guard (`bpfvet_maps::pin()`) before a program run and hold
//! it until the run ends; pass it to every [`Map::lookup_elem`]. A pointer
//! returned by a lookup stays valid, readable and writable (value_size
//! bytes, 8-byte aligned) until that guard is dropped, even if the element
//! is deleted, replaced or RHASH resizes meanwhile. What the pointer shows
//! after a concurrent change follows the kernel:
//! * ARRAY / PERCPU_ARRAY: memory lives as long as the map; in-place.
//! * HASH family (preallocated, the default): a deleted element's memory
//!   returns to the map's pool at once and may be reused for another key,
//!   so a program may see another key's value, exactly as in the kernel.
//!   Replaced values are new elements swapped in: the old pointer keeps the
//!   old value until reused. BPF_F_NO_PREALLOC elements are freed only after
//!   the guard drops.
//! * RHASH: elements are freed after every guard pinned before their
//!   removal is dropped; updates of an existing key copy in place, so a
//!   concurrent reader may see a torn value (use BPF_F_LOCK for consistency).
//!
//! Programs write values with plain stores; the maps read and write values
//! with relaxed atomic word accesses, so a racing program sees torn words at
//! worst, never undefined behaviour on the Rust side. The embedded
//! `struct bpf_spin_lock` is a u32: 0 free, 1 held (the vm's bpf_spin_lock
//! must use the same encoding, see [`value::ValueLock`]).
//!
//! Per-CPU maps: the program side takes the CPU number (`cpu < nr_cpus`)
//! and addresses that CPU's value only.

use std::any::Any;
use std::ptr::NonNull;
use std::sync::Arc;

pub use crossbeam_epoch::{pin, Guard};

pub mod accounting;
pub mod array;
mod attr;
#[cfg(feature = "bench")]
pub mod bench;
mod error;
pub mod hash;
pub mod htab;
pub mod map_in_map;
pub mod prog_array;
pub mod queue_stack;
pub mod rhash;
pub mod ringbuf;
mod sync;
pub mod user_ringbuf;
pub mod value;

pub use attr::{possible_cpus, MapAttr};
pub use error::{MapError, Result};
pub use map_in_map::MapOfMaps;
pub use prog_array::ProgArray;
pub use ringbuf::RingBuf;

use bpfvet_isa::uapi::{self, MapType};

/// What one batch call returned. The cursor is the last key handed out
/// (the kernel's generic batch cursor; its HASH walks use a bucket index
/// instead, so a HASH batch resumed after concurrent changes may differ).
pub struct Batch {
    /// `count * key_size` bytes.
    pub keys: Vec<u8>,
    /// `count * syscall_value_size` bytes.
    pub values: Vec<u8>,
    pub count: u32,
    /// Where the next call starts; None when the walk reached the end (the
    /// kernel's ENOENT with a partial count).
    pub cursor: Option<Vec<u8>>,
}

/// Called with the value of an element a map frees or reuses; see
/// [`Map::set_free_hook`].
pub type FreeHook = Arc<dyn Fn(NonNull<u8>) + Send + Sync>;

/// A BPF map. All methods take `&self`: maps are shared between threads.
pub trait Map: Send + Sync + 'static {
    fn attr(&self) -> &MapAttr;
    /// For downcasting to a type's own API (ring buffer consumer, ...).
    fn as_any(&self) -> &dyn Any;

    /// Registers `hook` (once), called with the value of every element the
    /// map frees or reuses (delete, replacing update, LRU eviction): where
    /// the kernel's bpf_obj_free_fields cancels the value's `bpf_timer` or
    /// `bpf_wq`. The element's memory is still valid during the call. False
    /// when the map frees no elements this way (arrays, per-CPU maps) or a
    /// hook is set already.
    fn set_free_hook(&self, hook: FreeHook) -> bool {
        let _ = hook;
        false
    }

    // ---- syscall side ----
    // An operation a map type does not define answers ENOTSUPP, as the
    // kernel does for a missing map op (ring buffers define none of the
    // element operations): the defaults below.

    /// BPF_MAP_LOOKUP_ELEM: copy the value out (`flags`: 0 or BPF_F_LOCK).
    fn lookup(&self, key: &[u8], value: &mut [u8], flags: u64) -> Result<()> {
        let _ = (key, value, flags);
        Err(MapError::NotSupp)
    }
    /// BPF_MAP_UPDATE_ELEM with BPF_ANY / BPF_NOEXIST / BPF_EXIST, optionally
    /// | BPF_F_LOCK.
    fn update(&self, key: &[u8], value: &[u8], flags: u64) -> Result<()> {
        let _ = (key, value, flags);
        Err(MapError::NotSupp)
    }
    /// BPF_MAP_DELETE_ELEM.
    fn delete(&self, key: &[u8]) -> Result<()> {
        let _ = key;
        Err(MapError::NotSupp)
    }
    /// BPF_MAP_LOOKUP_AND_DELETE_ELEM (pop for queue/stack).
    fn lookup_and_delete(&self, key: &[u8], value: &mut [u8], flags: u64) -> Result<()> {
        let _ = (key, value);
        // The syscall's own checks come before the type's ENOTSUPP.
        if flags & !uapi::BPF_F_LOCK != 0
            || (flags & uapi::BPF_F_LOCK != 0 && self.attr().spin_lock_off.is_none())
        {
            return Err(MapError::Invalid("bad lookup_and_delete flags"));
        }
        Err(MapError::NotSupp)
    }
    /// BPF_MAP_GET_NEXT_KEY: `None` asks for the first key.
    fn get_next_key(&self, key: Option<&[u8]>, next: &mut [u8]) -> Result<()> {
        let _ = (key, next);
        Err(MapError::NotSupp)
    }
    /// BPF_MAP_FREEZE: no more syscall-side writes.
    fn freeze(&self) -> Result<()>;

    // ---- program side ----

    /// bpf_map_lookup_elem: a pointer to the value (of `cpu` for per-CPU
    /// maps), valid while `guard` is held.
    fn lookup_elem(&self, key: &[u8], cpu: u32, guard: &Guard) -> Option<NonNull<u8>> {
        let _ = (key, cpu, guard);
        None
    }
    /// bpf_map_update_elem (per-CPU maps: only `cpu`'s value is written).
    fn update_elem(&self, key: &[u8], value: &[u8], flags: u64, cpu: u32) -> Result<()> {
        let _ = (key, value, flags, cpu);
        Err(MapError::NotSupp)
    }
    /// [`Map::update_elem`] for a caller that already holds a pinned guard
    /// (a program run, as the kernel's helper runs inside the program's RCU
    /// section): the hash maps then skip pinning again per update.
    fn update_elem_guarded(
        &self,
        key: &[u8],
        value: &[u8],
        flags: u64,
        cpu: u32,
        guard: &Guard,
    ) -> Result<()> {
        let _ = guard;
        self.update_elem(key, value, flags, cpu)
    }
    /// bpf_map_delete_elem.
    fn delete_elem(&self, key: &[u8]) -> Result<()> {
        let _ = key;
        Err(MapError::NotSupp)
    }
    /// bpf_for_each_map_elem: calls `f(key, value)` until it returns false;
    /// returns the number of calls. Each element is visited at most once per
    /// bucket pass, so it always ends.
    fn for_each(
        &self,
        cpu: u32,
        guard: &Guard,
        f: &mut dyn FnMut(&[u8], NonNull<u8>) -> bool,
    ) -> Result<u32> {
        let _ = (cpu, guard, f);
        Err(MapError::NotSupp)
    }
    /// bpf_map_push_elem (queue/stack).
    fn push_elem(&self, value: &[u8], flags: u64) -> Result<()> {
        let _ = (value, flags);
        Err(MapError::NotSupp)
    }
    /// bpf_map_pop_elem (queue/stack).
    fn pop_elem(&self, value: &mut [u8]) -> Result<()> {
        let _ = value;
        Err(MapError::NotSupp)
    }
    /// bpf_map_peek_elem (queue/stack).
    fn peek_elem(&self, value: &mut [u8]) -> Result<()> {
        let _ = value;
        Err(MapError::NotSupp)
    }

    // ---- batch operations (cursor = the last key returned) ----

    /// BPF_MAP_LOOKUP_BATCH / BPF_MAP_LOOKUP_AND_DELETE_BATCH.
    fn lookup_batch(&self, cursor: Option<&[u8]>, max_count: u32, delete: bool) -> Result<Batch> {
        batch_walk(self, cursor, max_count, delete)
    }

    /// BPF_MAP_UPDATE_BATCH: stops at the first failure, returning how many
    /// were done and the error.
    fn update_batch(&self, keys: &[u8], values: &[u8], flags: u64) -> (u32, Result<()>) {
        let ks = self.attr().key_size as usize;
        let vs = self.attr().syscall_value_size();
        if ks == 0 || !keys.len().is_multiple_of(ks) || values.len() != keys.len() / ks * vs {
            return (
                0,
                Err(MapError::Invalid("batch buffers do not match the count")),
            );
        }
        let mut done = 0;
        for (k, v) in keys.chunks(ks).zip(values.chunks(vs.max(1))) {
            if let Err(e) = self.update(k, v, flags) {
                return (done, Err(e));
            }
            done += 1;
        }
        (done, Ok(()))
    }

    /// BPF_MAP_DELETE_BATCH: stops at the first failure.
    fn delete_batch(&self, keys: &[u8]) -> (u32, Result<()>) {
        let ks = self.attr().key_size as usize;
        if ks == 0 || !keys.len().is_multiple_of(ks) {
            return (0, Err(MapError::Invalid("batch keys are not whole keys")));
        }
        let mut done = 0;
        for k in keys.chunks(ks) {
            if let Err(e) = self.delete(k) {
                return (done, Err(e));
            }
            done += 1;
        }
        (done, Ok(()))
    }
}

fn batch_walk<M: Map + ?Sized>(
    map: &M,
    cursor: Option<&[u8]>,
    max_count: u32,
    delete: bool,
) -> Result<Batch> {
    let attr = map.attr();
    let ks = attr.key_size as usize;
    let vs = attr.syscall_value_size();
    if ks == 0 {
        return Err(MapError::NotSupp);
    }
    if max_count == 0 {
        return Err(MapError::Invalid("batch count is zero"));
    }
    let mut out = Batch {
        keys: Vec::new(),
        values: Vec::new(),
        count: 0,
        cursor: None,
    };
    let mut prev: Option<Vec<u8>> = cursor.map(|c| c.to_vec());
    let mut next = vec![0u8; ks];
    let mut value = vec![0u8; vs];
    // Bounded: at most max_count elements, and each failed lookup (an
    // element deleted meanwhile) moves on to the next key.
    let mut budget = attr.max_entries as u64 * 2 + 16;
    while out.count < max_count && budget > 0 {
        budget -= 1;
        match map.get_next_key(prev.as_deref(), &mut next) {
            Ok(()) => {}
            Err(MapError::NotFound) => return Ok(out),
            Err(e) => return Err(e),
        }
        prev = Some(next.clone());
        let r = if delete {
            map.lookup_and_delete(&next, &mut value, 0)
        } else {
            map.lookup(&next, &mut value, 0)
        };
        match r {
            Ok(()) => {}
            Err(MapError::NotFound) => continue,
            Err(e) => return Err(e),
        }
        out.keys.extend_from_slice(&next);
        out.values.extend_from_slice(&value);
        out.count += 1;
    }
    out.cursor = prev;
    Ok(out)
}

/// What every map keeps besides its elements: attributes, the frozen bit,
/// and the syscall-side argument checks.
pub(crate) struct Common {
    pub attr: MapAttr,
    frozen: sync::AtomicBool,
}

impl Common {
    pub fn new(attr: MapAttr) -> Common {
        Common {
            attr,
            frozen: sync::AtomicBool::new(false),
        }
    }

    pub fn layout(&self) -> value::ValueLayout {
        self.attr.layout()
    }

    /// map_get_sys_perms: BPF_F_RDONLY or a frozen map refuses writes.
    pub fn check_sys_write(&self) -> Result<()> {
        if self.attr.map_flags & uapi::BPF_F_RDONLY != 0 {
            return Err(MapError::Perm("map was created BPF_F_RDONLY"));
        }
        if self.frozen.load(std::sync::atomic::Ordering::Acquire) {
            return Err(MapError::Perm("map is frozen"));
        }
        Ok(())
    }

    pub fn check_sys_read(&self) -> Result<()> {
        if self.attr.map_flags & uapi::BPF_F_WRONLY != 0 {
            return Err(MapError::Perm("map was created BPF_F_WRONLY"));
        }
        Ok(())
    }

    /// Syscall lookups take only BPF_F_LOCK, and only on a map whose value
    /// has a spin lock.
    pub fn check_lookup_flags(&self, flags: u64) -> Result<bool> {
        if flags & !uapi::BPF_F_LOCK != 0 {
            return Err(MapError::Invalid("lookup flags other than BPF_F_LOCK"));
        }
        self.check_lock_flag(flags)
    }

    /// Syscall lookup_and_delete on a keyed map: the kernel's checks in its
    /// order. Returns whether BPF_F_LOCK was asked for.
    pub fn check_lookup_and_delete(
        &self,
        key: &[u8],
        value_len: usize,
        flags: u64,
    ) -> Result<bool> {
        if flags & !uapi::BPF_F_LOCK != 0 {
            return Err(MapError::Invalid(
                "lookup_and_delete flags other than BPF_F_LOCK",
            ));
        }
        self.check_sys_read()?;
        self.check_sys_write()?;
        let locked = self.check_lock_flag(flags)?;
        self.check_key(key)?;
        self.check_sys_value(value_len)?;
        Ok(locked)
    }

    /// Syscall get_next_key on a keyed map: `key` None asks for the first.
    pub fn check_get_next_key(&self, key: Option<&[u8]>, next: &[u8]) -> Result<()> {
        self.check_sys_read()?;
        if let Some(k) = key {
            self.check_key(k)?;
        }
        self.check_key(next)
    }

    pub fn check_lock_flag(&self, flags: u64) -> Result<bool> {
        let locked = flags & uapi::BPF_F_LOCK != 0;
        if locked && self.attr.spin_lock_off.is_none() {
            return Err(MapError::Invalid(
                "BPF_F_LOCK on a value without bpf_spin_lock",
            ));
        }
        Ok(locked)
    }

    pub fn check_key(&self, key: &[u8]) -> Result<()> {
        if key.len() != self.attr.key_size as usize {
            return Err(MapError::Invalid("key buffer is not key_size bytes"));
        }
        Ok(())
    }

    pub fn check_sys_value(&self, value_len: usize) -> Result<()> {
        if value_len != self.attr.syscall_value_size() {
            return Err(MapError::Invalid(
                "value buffer is not the map's value size",
            ));
        }
        Ok(())
    }

    pub fn check_prog_value(&self, value_len: usize) -> Result<()> {
        if value_len != self.attr.value_size as usize {
            return Err(MapError::Invalid("value buffer is not value_size bytes"));
        }
        Ok(())
    }

    pub fn check_cpu(&self, cpu: u32) -> Result<()> {
        if cpu >= self.attr.nr_cpus {
            return Err(MapError::Invalid("cpu is not below nr_cpus"));
        }
        Ok(())
    }

    /// map_freeze: a second freeze is EBUSY.
    pub fn freeze(&self) -> Result<()> {
        if self.attr.map_flags & uapi::BPF_F_RDONLY != 0 {
            return Err(MapError::Perm("map was created BPF_F_RDONLY"));
        }
        if self.frozen.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return Err(MapError::Busy);
        }
        Ok(())
    }
}

/// BPF_MAP_CREATE: validate `attr` as the kernel does and build the map.
pub fn create(attr: MapAttr) -> Result<Arc<dyn Map>> {
    attr::check_common(&attr)?;
    Ok(match attr.map_type {
        MapType::ARRAY | MapType::PERCPU_ARRAY => Arc::new(array::ArrayMap::new(attr)?),
        MapType::HASH | MapType::PERCPU_HASH | MapType::LRU_HASH | MapType::LRU_PERCPU_HASH => {
            Arc::new(htab::HashMap::new(attr)?)
        }
        MapType::RHASH => Arc::new(rhash::RHashMap::new(attr)?),
        MapType::QUEUE | MapType::STACK => Arc::new(queue_stack::QueueStack::new(attr)?),
        MapType::RINGBUF => Arc::new(RingBuf::new(attr)?),
        MapType::USER_RINGBUF => Arc::new(user_ringbuf::UserRingBuf::new(attr)?),
        MapType::PROG_ARRAY => Arc::new(ProgArray::new(attr)?),
        MapType::ARRAY_OF_MAPS | MapType::HASH_OF_MAPS => Arc::new(MapOfMaps::new(attr)?),
        _ => return Err(MapError::Invalid("map type not supported by bpfvet")),
    })
}
