//! Map creation attributes (the fields of BPF_MAP_CREATE that matter to a
//! map's semantics) and the checks every map type shares.

use bpfvet_isa::uapi::{self, MapType};

use crate::value::{ValueLayout, SPIN_LOCK_SIZE, TIMER_SIZE};
use crate::{MapError, Result};

/// What BPF_MAP_CREATE is given, plus what the kernel learns from BTF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapAttr {
    pub map_type: MapType,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    pub map_flags: u32,
    /// Bloom filter hash count, arena address, or RHASH's initial size hint.
    pub map_extra: u64,
    /// Only read when `map_flags` has BPF_F_NUMA_NODE.
    pub numa_node: u32,
    /// The inner map template of ARRAY_OF_MAPS / HASH_OF_MAPS (what the
    /// kernel copies from `inner_map_fd`).
    pub inner: Option<Box<MapAttr>>,
    /// Offset of the value's `struct bpf_spin_lock`, from BTF.
    pub spin_lock_off: Option<u32>,
    /// Offset of the value's `struct bpf_timer`, from BTF.
    pub timer_off: Option<u32>,
    /// Number of possible CPUs: per-CPU maps keep this many values per key.
    pub nr_cpus: u32,
}

impl MapAttr {
    /// Attributes with no flags, no BTF fields and the host's CPU count.
    pub fn new(map_type: MapType, key_size: u32, value_size: u32, max_entries: u32) -> MapAttr {
        MapAttr {
            map_type,
            key_size,
            value_size,
            max_entries,
            map_flags: 0,
            map_extra: 0,
            numa_node: 0,
            inner: None,
            spin_lock_off: None,
            timer_off: None,
            nr_cpus: possible_cpus(),
        }
    }

    pub fn with_flags(mut self, map_flags: u32) -> MapAttr {
        self.map_flags = map_flags;
        self
    }

    pub fn is_percpu(&self) -> bool {
        matches!(
            self.map_type,
            MapType::PERCPU_ARRAY | MapType::PERCPU_HASH | MapType::LRU_PERCPU_HASH
        )
    }

    /// Size of one value as seen by the syscall side: per-CPU maps carry
    /// `nr_cpus` values each rounded up to 8 bytes.
    pub fn syscall_value_size(&self) -> usize {
        if self.is_percpu() {
            round8(self.value_size as usize) * self.nr_cpus as usize
        } else {
            self.value_size as usize
        }
    }

    pub(crate) fn layout(&self) -> ValueLayout {
        ValueLayout {
            size: self.value_size as usize,
            lock_off: self.spin_lock_off.map(|o| o as usize),
            timer_off: self.timer_off.map(|o| o as usize),
        }
    }
}

pub(crate) fn round8(n: usize) -> usize {
    (n + 7) & !7
}

/// Largest kmalloc (4 MiB with 4 KiB pages): the kernel's bound on
/// key + value sizes of most maps.
pub(crate) const KMALLOC_MAX_SIZE: u64 = 1 << 22;
/// The per-CPU allocator's unit: the bound on per-CPU value sizes.
pub(crate) const PCPU_MIN_UNIT_SIZE: u32 = 32 << 10;

pub(crate) const ACCESS_MASK: u32 =
    uapi::BPF_F_RDONLY | uapi::BPF_F_WRONLY | uapi::BPF_F_RDONLY_PROG | uapi::BPF_F_WRONLY_PROG;

/// The kernel's `bpf_map_flags_access_ok`: at most one of RDONLY/WRONLY for
/// each side.
pub(crate) fn access_ok(flags: u32) -> bool {
    let both = |a: u32, b: u32| flags & a != 0 && flags & b != 0;
    !both(uapi::BPF_F_RDONLY, uapi::BPF_F_WRONLY)
        && !both(uapi::BPF_F_RDONLY_PROG, uapi::BPF_F_WRONLY_PROG)
}

/// Checks `map_create` makes before the type's own: NUMA node, map_extra,
/// and the BTF special fields.
pub(crate) fn check_common(attr: &MapAttr) -> Result<()> {
    // One NUMA node here, as on the hosts we mirror.
    if attr.map_flags & uapi::BPF_F_NUMA_NODE != 0 && attr.numa_node != 0 {
        return Err(MapError::Invalid("numa_node is not an online node"));
    }
    let extra_ok = matches!(
        attr.map_type,
        MapType::BLOOM_FILTER | MapType::ARENA | MapType::RHASH
    );
    if attr.map_extra != 0 && !extra_ok {
        return Err(MapError::Invalid(
            "map_extra is only for bloom filter, arena and rhash",
        ));
    }
    if attr.nr_cpus == 0 {
        return Err(MapError::Invalid("nr_cpus must be at least 1"));
    }
    check_special_fields(attr)
}

fn check_special_fields(attr: &MapAttr) -> Result<()> {
    let vs = attr.value_size as u64;
    if let Some(o) = attr.spin_lock_off {
        if o % 4 != 0 || o as u64 + SPIN_LOCK_SIZE as u64 > vs {
            return Err(MapError::Invalid("bpf_spin_lock misplaced in the value"));
        }
        if !matches!(
            attr.map_type,
            MapType::HASH | MapType::ARRAY | MapType::RHASH
        ) {
            return Err(MapError::OpNotSupp("bpf_spin_lock in this map type"));
        }
    }
    if let Some(o) = attr.timer_off {
        if o % 8 != 0 || o as u64 + TIMER_SIZE as u64 > vs {
            return Err(MapError::Invalid("bpf_timer misplaced in the value"));
        }
        if !matches!(
            attr.map_type,
            MapType::HASH | MapType::LRU_HASH | MapType::ARRAY | MapType::RHASH
        ) {
            return Err(MapError::OpNotSupp("bpf_timer in this map type"));
        }
    }
    if let (Some(l), Some(t)) = (attr.spin_lock_off, attr.timer_off) {
        let (l, t) = (l as u64, t as u64);
        if l < t + TIMER_SIZE as u64 && t < l + SPIN_LOCK_SIZE as u64 {
            return Err(MapError::Invalid("bpf_spin_lock overlaps bpf_timer"));
        }
    }
    Ok(())
}

/// The host's possible CPUs (what the kernel's per-CPU maps are sized by),
/// from /sys; falls back to the available parallelism.
pub fn possible_cpus() -> u32 {
    std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|s| parse_cpu_list(s.trim()))
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get() as u32)
                .unwrap_or(1)
        })
}

/// "0-3,5" -> 6 (the highest CPU + 1, as num_possible_cpus counts).
fn parse_cpu_list(s: &str) -> Option<u32> {
    let mut max = None;
    for part in s.split(',') {
        let last = part.rsplit('-').next()?;
        let n: u32 = last.trim().parse().ok()?;
        max = Some(max.map_or(n, |m: u32| m.max(n)));
    }
    max.map(|m| m + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(parse_cpu_list("0-1"), Some(2));
        assert_eq!(parse_cpu_list("0"), Some(1));
        assert_eq!(parse_cpu_list("0-3,7"), Some(8));
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn spin_lock_must_fit_and_be_aligned() {
        let mut a = MapAttr::new(MapType::HASH, 4, 8, 1);
        a.spin_lock_off = Some(6);
        assert_eq!(check_common(&a).unwrap_err().errno(), 22);
        a.spin_lock_off = Some(8);
        assert_eq!(check_common(&a).unwrap_err().errno(), 22);
        a.spin_lock_off = Some(4);
        assert!(check_common(&a).is_ok());
        a.map_type = MapType::PERCPU_HASH;
        assert_eq!(check_common(&a).unwrap_err().errno(), 95);
    }
}
