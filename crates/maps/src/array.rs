//! ARRAY and PERCPU_ARRAY (kernel/bpf/arraymap.c): a fixed slab of
//! zero-initialised values indexed by a u32 key; elements can't be deleted.

use std::any::Any;
use std::ptr::NonNull;

use bpfvet_isa::uapi::{self, MapType};

use crate::attr::{access_ok, round8, ACCESS_MASK, PCPU_MIN_UNIT_SIZE};
use crate::value::Slab;
use crate::value::ValueLayout;
use crate::{Common, Guard, Map, MapAttr, MapError, Result};

const CREATE_FLAG_MASK: u32 = uapi::BPF_F_NUMA_NODE
    | uapi::BPF_F_MMAPABLE
    | ACCESS_MASK
    | uapi::BPF_F_PRESERVE_ELEMS
    | uapi::BPF_F_INNER_MAP;

/// Map memory beyond this is refused with ENOMEM rather than attempted.
pub(crate) const MAX_MAP_BYTES: u64 = 1 << 32;

pub struct ArrayMap {
    common: Common,
    slab: Slab,
    /// round8(value_size): the stride of one CPU's value.
    stride: usize,
    /// Bytes per index (stride * nr_cpus for per-CPU arrays).
    elem_bytes: usize,
    percpu: bool,
}

/// array_map_alloc_check, shared with PROG_ARRAY and ARRAY_OF_MAPS.
pub(crate) fn check_array_attr(attr: &MapAttr) -> Result<()> {
    let percpu = attr.map_type == MapType::PERCPU_ARRAY;
    if attr.max_entries == 0
        || attr.key_size != 4
        || attr.value_size == 0
        || attr.map_flags & !CREATE_FLAG_MASK != 0
        || !access_ok(attr.map_flags)
        || (percpu && attr.map_flags & uapi::BPF_F_NUMA_NODE != 0)
    {
        return Err(MapError::Invalid("bad array attributes"));
    }
    if attr.map_type != MapType::ARRAY
        && attr.map_flags & (uapi::BPF_F_MMAPABLE | uapi::BPF_F_INNER_MAP) != 0
    {
        return Err(MapError::Invalid(
            "BPF_F_MMAPABLE/BPF_F_INNER_MAP only for ARRAY",
        ));
    }
    if attr.map_type != MapType::PERF_EVENT_ARRAY
        && attr.map_flags & uapi::BPF_F_PRESERVE_ELEMS != 0
    {
        return Err(MapError::Invalid(
            "BPF_F_PRESERVE_ELEMS only for PERF_EVENT_ARRAY",
        ));
    }
    // Guards round_up(value_size, 8) against overflow.
    if attr.value_size > i32::MAX as u32 {
        return Err(MapError::TooBig);
    }
    if percpu && round8(attr.value_size as usize) > PCPU_MIN_UNIT_SIZE as usize {
        return Err(MapError::TooBig);
    }
    Ok(())
}

pub(crate) fn index_of(key: &[u8]) -> u32 {
    u32::from_ne_bytes([key[0], key[1], key[2], key[3]])
}

/// Where an array's values are, for a runtime that computes lookups
/// itself: index `i` (below `entries`) on CPU `c` (0 unless per-CPU) is at
/// `base + i * elem_bytes + c * cpu_stride`. The memory lives as long as
/// the map and never moves.
#[derive(Clone, Copy, Debug)]
pub struct ArrayLayout {
    pub base: *mut u8,
    pub elem_bytes: usize,
    pub cpu_stride: usize,
    pub entries: u32,
}

// SAFETY: the layout only names memory the map owns; every access through
// it is the caller's (and goes through the same atomics as the map's own).
unsafe impl Send for ArrayLayout {}
// SAFETY: as above.
unsafe impl Sync for ArrayLayout {}

impl ArrayMap {
    pub fn layout(&self) -> ArrayLayout {
        ArrayLayout {
            base: self.slab.base(),
            elem_bytes: self.elem_bytes,
            cpu_stride: if self.percpu { self.stride } else { 0 },
            entries: self.common.attr.max_entries,
        }
    }

    pub fn new(attr: MapAttr) -> Result<ArrayMap> {
        check_array_attr(&attr)?;
        let percpu = attr.map_type == MapType::PERCPU_ARRAY;
        let stride = round8(attr.value_size as usize);
        let elem_bytes = if percpu {
            stride * attr.nr_cpus as usize
        } else {
            stride
        };
        let total = elem_bytes as u64 * attr.max_entries as u64;
        if total > MAX_MAP_BYTES {
            return Err(MapError::NoMem);
        }
        let slab = Slab::new_zeroed(total as usize)?;
        Ok(ArrayMap {
            common: Common::new(attr),
            slab,
            stride,
            elem_bytes,
            percpu,
        })
    }

    /// One CPU's whole slot: what the syscall side copies for per-CPU maps.
    fn pcpu_layout(&self) -> ValueLayout {
        ValueLayout {
            size: self.stride,
            ..ValueLayout::default()
        }
    }

    fn slot(&self, index: u32, cpu: u32) -> *mut u8 {
        let off = index as usize * self.elem_bytes + cpu as usize * self.stride;
        // SAFETY: callers check index < max_entries and cpu < nr_cpus, so
        // the offset is inside the slab.
        unsafe { self.slab.base().add(off) }
    }

    fn index_in_range(&self, key: &[u8]) -> Result<u32> {
        self.common.check_key(key)?;
        let i = index_of(key);
        if i >= self.common.attr.max_entries {
            return Err(MapError::TooBig);
        }
        Ok(i)
    }

    /// The update flag checks of array_map_update_elem (or the per-CPU
    /// variant, which does not know BPF_F_LOCK).
    fn check_update_flags(&self, flags: u64) -> Result<bool> {
        let bad = if self.percpu {
            flags > uapi::BPF_EXIST
        } else {
            flags & !uapi::BPF_F_LOCK > uapi::BPF_EXIST
        };
        if bad {
            return Err(MapError::Invalid("unknown update flags"));
        }
        Ok(flags & uapi::BPF_F_LOCK != 0)
    }

    fn do_update(&self, key: &[u8], value: &[u8], flags: u64, cpu: Option<u32>) -> Result<()> {
        let locked = self.check_update_flags(flags)?;
        let i = self.index_in_range(key)?;
        if flags & 3 == uapi::BPF_NOEXIST {
            return Err(MapError::Exists);
        }
        let locked = locked && self.common.check_lock_flag(flags)?;
        let layout = self.common.layout();
        match cpu {
            // SAFETY: slot() is in range; the value buffer was checked.
            Some(c) => unsafe { layout.store(self.slot(i, c), value, locked) },
            None => {
                // The syscall side copies whole 8-byte-rounded slots.
                let pcpu = self.pcpu_layout();
                for c in 0..self.common.attr.nr_cpus {
                    let src = &value[c as usize * self.stride..][..self.stride];
                    // SAFETY: as above.
                    unsafe { pcpu.copy_in(self.slot(i, c), src) };
                }
            }
        }
        Ok(())
    }
}

impl Map for ArrayMap {
    fn attr(&self) -> &MapAttr {
        &self.common.attr
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn lookup(&self, key: &[u8], value: &mut [u8], flags: u64) -> Result<()> {
        self.common.check_sys_read()?;
        let locked = self.common.check_lookup_flags(flags)?;
        self.common.check_sys_value(value.len())?;
        let i = self.index_in_range(key).map_err(|_| MapError::NotFound)?;
        let layout = self.common.layout();
        if self.percpu {
            for c in 0..self.common.attr.nr_cpus {
                let dst = &mut value[c as usize * self.stride..][..self.stride];
                // SAFETY: in range.
                unsafe { self.pcpu_layout().copy_out(dst, self.slot(i, c)) };
            }
        } else {
            // SAFETY: in range.
            unsafe { layout.load(value, self.slot(i, 0), locked) };
        }
        Ok(())
    }

    fn update(&self, key: &[u8], value: &[u8], flags: u64) -> Result<()> {
        self.common.check_sys_write()?;
        self.common.check_lock_flag(flags)?;
        self.common.check_sys_value(value.len())?;
        self.do_update(key, value, flags, if self.percpu { None } else { Some(0) })
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        self.common.check_sys_write()?;
        self.delete_elem(key)
    }

    fn get_next_key(&self, key: Option<&[u8]>, next: &mut [u8]) -> Result<()> {
        self.common.check_sys_read()?;
        if next.len() != 4 {
            return Err(MapError::Invalid("next key buffer is not 4 bytes"));
        }
        let max = self.common.attr.max_entries;
        let index = match key {
            Some(k) => {
                self.common.check_key(k)?;
                index_of(k)
            }
            None => u32::MAX,
        };
        let n = if index >= max {
            0
        } else if index == max - 1 {
            return Err(MapError::NotFound);
        } else {
            index + 1
        };
        next.copy_from_slice(&n.to_ne_bytes());
        Ok(())
    }

    fn freeze(&self) -> Result<()> {
        self.common.freeze()
    }

    fn lookup_elem(&self, key: &[u8], cpu: u32, _guard: &Guard) -> Option<NonNull<u8>> {
        let i = self.index_in_range(key).ok()?;
        if cpu >= self.common.attr.nr_cpus {
            return None;
        }
        NonNull::new(self.slot(i, if self.percpu { cpu } else { 0 }))
    }

    fn update_elem(&self, key: &[u8], value: &[u8], flags: u64, cpu: u32) -> Result<()> {
        self.common.check_prog_value(value.len())?;
        self.common.check_cpu(cpu)?;
        self.do_update(key, value, flags, Some(if self.percpu { cpu } else { 0 }))
    }

    fn delete_elem(&self, key: &[u8]) -> Result<()> {
        self.common.check_key(key)?;
        Err(MapError::Invalid("array elements cannot be deleted"))
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
        for i in 0..self.common.attr.max_entries {
            n += 1;
            let Some(p) = NonNull::new(self.slot(i, cpu)) else {
                break;
            };
            if !f(&i.to_ne_bytes(), p) {
                break;
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::create;

    #[test]
    fn array_errnos_follow_the_kernel() {
        let m = create(MapAttr::new(MapType::ARRAY, 4, 8, 4)).unwrap();
        let mut v = [0u8; 8];
        assert_eq!(
            m.update(&4u32.to_ne_bytes(), &[1; 8], 0)
                .unwrap_err()
                .errno(),
            7
        );
        assert_eq!(
            m.update(&1u32.to_ne_bytes(), &[1; 8], 1)
                .unwrap_err()
                .errno(),
            17
        );
        assert_eq!(
            m.update(&1u32.to_ne_bytes(), &[1; 8], 8)
                .unwrap_err()
                .errno(),
            22
        );
        assert_eq!(
            m.update(&1u32.to_ne_bytes(), &[1; 8], 4)
                .unwrap_err()
                .errno(),
            22
        );
        assert_eq!(m.delete(&1u32.to_ne_bytes()).unwrap_err().errno(), 22);
        assert_eq!(
            m.lookup(&9u32.to_ne_bytes(), &mut v, 0)
                .unwrap_err()
                .errno(),
            2
        );
        m.update(&1u32.to_ne_bytes(), &[7; 8], 2).unwrap();
        m.lookup(&1u32.to_ne_bytes(), &mut v, 0).unwrap();
        assert_eq!(v, [7; 8]);
        let mut next = [0u8; 4];
        m.get_next_key(Some(&3u32.to_ne_bytes()), &mut next)
            .unwrap_err();
        m.get_next_key(Some(&77u32.to_ne_bytes()), &mut next)
            .unwrap();
        assert_eq!(next, 0u32.to_ne_bytes());
        m.freeze().unwrap();
        assert_eq!(m.freeze().unwrap_err().errno(), 16);
        assert_eq!(
            m.update(&1u32.to_ne_bytes(), &[1; 8], 0)
                .unwrap_err()
                .errno(),
            1
        );
    }

    #[test]
    fn array_attribute_checks() {
        for (k, v, max, flags, errno) in [
            (8, 8, 1, 0, 22),
            (4, 0, 1, 0, 22),
            (4, 8, 0, 0, 22),
            (4, 8, 1, uapi::BPF_F_NO_PREALLOC, 22),
            (4, 8, 1, uapi::BPF_F_RDONLY | uapi::BPF_F_WRONLY, 22),
            (4, (1 << 31) + 1, 1, 0, 7),
        ] {
            let a = MapAttr::new(MapType::ARRAY, k, v, max).with_flags(flags);
            assert_eq!(create(a).err().map(|e| e.errno()), Some(errno));
        }
        let a = MapAttr::new(MapType::PERCPU_ARRAY, 4, 8, 1).with_flags(uapi::BPF_F_MMAPABLE);
        assert_eq!(create(a).err().map(|e| e.errno()), Some(22));
    }

    #[test]
    fn percpu_array_keeps_one_value_per_cpu() {
        let mut a = MapAttr::new(MapType::PERCPU_ARRAY, 4, 4, 2);
        a.nr_cpus = 3;
        let m = create(a).unwrap();
        m.update_elem(&0u32.to_ne_bytes(), &[5; 4], 0, 2).unwrap();
        let mut all = [0xffu8; 24];
        m.lookup(&0u32.to_ne_bytes(), &mut all, 0).unwrap();
        assert_eq!(&all[16..20], &[5; 4]);
        assert_eq!(&all[..16], &[0; 16]);
        assert_eq!(&all[20..], &[0; 4]);
    }
}
