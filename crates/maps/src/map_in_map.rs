//! ARRAY_OF_MAPS and HASH_OF_MAPS (kernel/bpf/map_in_map.c): slots
//! holding other maps, each compatible with the inner map template given
//! at creation.
//!
//! A program lookup returns a pointer to the slot's `Arc<dyn Map>`; the vm
//! reads it as `&*(ptr as *const Arc<dyn Map>)` while its guard is held.
//! Replaced and deleted entries are dropped after the guards of concurrent
//! readers.

use std::any::Any;
use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::{Arc, RwLock};

use bpfvet_isa::uapi::{self, MapType};
use crossbeam_epoch::{Atomic, Owned, Shared};

use crate::array::{check_array_attr, index_of};
use crate::{Common, Guard, Map, MapAttr, MapError, Result};

type Slot = Atomic<Arc<dyn Map>>;

enum Slots {
    Array(Box<[Slot]>),
    Hash(RwLock<BTreeMap<Vec<u8>, Slot>>),
}

pub struct MapOfMaps {
    common: Common,
    template: MapAttr,
    slots: Slots,
}

/// bpf_map_meta_equal (plus the array rule on max_entries).
fn compatible(template: &MapAttr, inner: &MapAttr) -> bool {
    let same = template.map_type == inner.map_type
        && template.key_size == inner.key_size
        && template.value_size == inner.value_size
        && template.map_flags == inner.map_flags
        && template.spin_lock_off == inner.spin_lock_off
        && template.timer_off == inner.timer_off;
    let array_like = matches!(template.map_type, MapType::ARRAY | MapType::PERCPU_ARRAY);
    same && (!array_like
        || template.map_flags & uapi::BPF_F_INNER_MAP != 0
        || template.max_entries == inner.max_entries)
}

impl MapOfMaps {
    pub fn new(attr: MapAttr) -> Result<MapOfMaps> {
        let Some(template) = attr.inner.as_deref().cloned() else {
            return Err(MapError::BadFd("map-in-map needs an inner map template"));
        };
        if matches!(
            template.map_type,
            MapType::ARRAY_OF_MAPS | MapType::HASH_OF_MAPS
        ) {
            return Err(MapError::Invalid("an inner map cannot itself hold maps"));
        }
        if matches!(template.map_type, MapType::PROG_ARRAY) {
            return Err(MapError::NotSupp);
        }
        if attr.value_size != 4 {
            return Err(MapError::Invalid("map-in-map values are 4-byte map fds"));
        }
        let slots = if attr.map_type == MapType::ARRAY_OF_MAPS {
            check_array_attr(&attr)?;
            if attr.max_entries as u64 * 8 > crate::array::MAX_MAP_BYTES {
                return Err(MapError::NoMem);
            }
            Slots::Array((0..attr.max_entries).map(|_| Atomic::null()).collect())
        } else {
            let allowed = uapi::BPF_F_NO_PREALLOC
                | uapi::BPF_F_NUMA_NODE
                | crate::attr::ACCESS_MASK
                | uapi::BPF_F_ZERO_SEED;
            if attr.map_flags & !allowed != 0 || attr.key_size == 0 || attr.max_entries == 0 {
                return Err(MapError::Invalid("bad hash-of-maps attributes"));
            }
            Slots::Hash(RwLock::new(BTreeMap::new()))
        };
        Ok(MapOfMaps {
            common: Common::new(attr),
            template,
            slots,
        })
    }

    /// Put `inner` at `key` (the syscall update with an inner map fd).
    pub fn update_map(&self, key: &[u8], inner: Arc<dyn Map>, flags: u64) -> Result<()> {
        self.common.check_key(key)?;
        if flags > uapi::BPF_EXIST {
            return Err(MapError::Invalid("unknown update flags"));
        }
        if !compatible(&self.template, inner.attr()) {
            return Err(MapError::Invalid("inner map does not match the template"));
        }
        let guard = crate::pin();
        match &self.slots {
            Slots::Array(a) => {
                let i = index_of(key);
                let slot = a.get(i as usize).ok_or(MapError::TooBig)?;
                if flags == uapi::BPF_NOEXIST {
                    return Err(MapError::Exists);
                }
                let old = slot.swap(
                    Owned::new(inner),
                    std::sync::atomic::Ordering::AcqRel,
                    &guard,
                );
                retire(old, &guard);
            }
            Slots::Hash(h) => {
                let mut h = h.write().unwrap_or_else(|p| p.into_inner());
                let exists = h.contains_key(key);
                crate::htab::check_flags(exists, flags)?;
                if !exists && h.len() >= self.common.attr.max_entries as usize {
                    return Err(MapError::TooBig);
                }
                let slot = h.entry(key.to_vec()).or_insert_with(Atomic::null);
                let old = slot.swap(
                    Owned::new(inner),
                    std::sync::atomic::Ordering::AcqRel,
                    &guard,
                );
                retire(old, &guard);
            }
        }
        Ok(())
    }

    /// The map at `key`, if any.
    pub fn get_map(&self, key: &[u8]) -> Option<Arc<dyn Map>> {
        let guard = crate::pin();
        let p = self.slot_ptr(key, &guard)?;
        // SAFETY: the slot's Arc lives until our guard drops.
        Some(unsafe { (*p.as_ptr()).clone() })
    }

    fn slot_ptr(&self, key: &[u8], guard: &Guard) -> Option<NonNull<Arc<dyn Map>>> {
        if key.len() != self.common.attr.key_size as usize {
            return None;
        }
        let shared = match &self.slots {
            Slots::Array(a) => a
                .get(index_of(key) as usize)?
                .load(std::sync::atomic::Ordering::Acquire, guard),
            Slots::Hash(h) => {
                let h = h.read().unwrap_or_else(|p| p.into_inner());
                h.get(key)?
                    .load(std::sync::atomic::Ordering::Acquire, guard)
            }
        };
        NonNull::new(shared.as_raw() as *mut Arc<dyn Map>)
    }
}

fn retire(old: Shared<'_, Arc<dyn Map>>, guard: &Guard) {
    if !old.is_null() {
        // SAFETY: `old` was just unlinked; readers that saw it are pinned.
        unsafe { guard.defer_destroy(old) };
    }
}

impl Drop for MapOfMaps {
    fn drop(&mut self) {
        let guard = crate::pin();
        let take = |s: &Slot| {
            retire(
                s.swap(Shared::null(), std::sync::atomic::Ordering::AcqRel, &guard),
                &guard,
            )
        };
        match &self.slots {
            Slots::Array(a) => a.iter().for_each(take),
            Slots::Hash(h) => h
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .values()
                .for_each(take),
        }
    }
}

impl Map for MapOfMaps {
    fn attr(&self) -> &MapAttr {
        &self.common.attr
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    /// The syscall lookup returns the inner map's id (bpfvet: its index in
    /// no global table, so ENOTSUPP; use [`MapOfMaps::get_map`]).
    fn lookup(&self, key: &[u8], _value: &mut [u8], _flags: u64) -> Result<()> {
        self.common.check_sys_read()?;
        self.common.check_key(key)?;
        let g = crate::pin();
        self.slot_ptr(key, &g).ok_or(MapError::NotFound)?;
        Err(MapError::NotSupp)
    }
    fn update(&self, key: &[u8], _value: &[u8], _flags: u64) -> Result<()> {
        self.common.check_sys_write()?;
        self.common.check_key(key)?;
        Err(MapError::BadFd(
            "map fds are not modelled; use MapOfMaps::update_map",
        ))
    }
    fn delete(&self, key: &[u8]) -> Result<()> {
        self.common.check_sys_write()?;
        self.delete_elem(key)
    }
    fn get_next_key(&self, key: Option<&[u8]>, next: &mut [u8]) -> Result<()> {
        self.common.check_sys_read()?;
        self.common.check_key(next)?;
        match &self.slots {
            Slots::Array(_) => {
                let max = self.common.attr.max_entries;
                let i = key.map(index_of).unwrap_or(u32::MAX);
                let n = if i >= max {
                    0
                } else if i == max - 1 {
                    return Err(MapError::NotFound);
                } else {
                    i + 1
                };
                next.copy_from_slice(&n.to_ne_bytes());
            }
            Slots::Hash(h) => {
                let h = h.read().unwrap_or_else(|p| p.into_inner());
                let found = match key {
                    Some(k) if h.contains_key(k) => h.range(k.to_vec()..).nth(1),
                    _ => h.iter().next(),
                };
                let (k, _) = found.ok_or(MapError::NotFound)?;
                next.copy_from_slice(k);
            }
        }
        Ok(())
    }
    fn freeze(&self) -> Result<()> {
        self.common.freeze()
    }
    fn lookup_elem(&self, key: &[u8], _cpu: u32, guard: &Guard) -> Option<NonNull<u8>> {
        self.slot_ptr(key, guard).map(|p| p.cast())
    }
    fn update_elem(&self, _k: &[u8], _v: &[u8], _f: u64, _c: u32) -> Result<()> {
        Err(MapError::NotSupp)
    }
    fn delete_elem(&self, key: &[u8]) -> Result<()> {
        self.common.check_key(key)?;
        let guard = crate::pin();
        match &self.slots {
            Slots::Array(a) => {
                let slot = a.get(index_of(key) as usize).ok_or(MapError::TooBig)?;
                let old = slot.swap(Shared::null(), std::sync::atomic::Ordering::AcqRel, &guard);
                if old.is_null() {
                    return Err(MapError::NotFound);
                }
                retire(old, &guard);
            }
            Slots::Hash(h) => {
                let mut h = h.write().unwrap_or_else(|p| p.into_inner());
                let slot = h.remove(key).ok_or(MapError::NotFound)?;
                retire(
                    slot.swap(Shared::null(), std::sync::atomic::Ordering::AcqRel, &guard),
                    &guard,
                );
            }
        }
        Ok(())
    }
    fn for_each(
        &self,
        _c: u32,
        _g: &Guard,
        _f: &mut dyn FnMut(&[u8], NonNull<u8>) -> bool,
    ) -> Result<u32> {
        Err(MapError::NotSupp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inner_maps_must_match_the_template() {
        let inner = MapAttr::new(MapType::ARRAY, 4, 8, 4);
        let mut outer = MapAttr::new(MapType::ARRAY_OF_MAPS, 4, 4, 2);
        assert_eq!(
            crate::create(outer.clone()).err().map(|e| e.errno()),
            Some(9)
        );
        outer.inner = Some(Box::new(inner.clone()));
        let m = crate::create(outer).unwrap();
        let mom = m.as_any().downcast_ref::<MapOfMaps>().unwrap();
        let good = crate::create(inner.clone()).unwrap();
        let wrong_size = crate::create(MapAttr::new(MapType::ARRAY, 4, 8, 5)).unwrap();
        assert_eq!(
            mom.update_map(&0u32.to_ne_bytes(), wrong_size, 0)
                .unwrap_err()
                .errno(),
            22
        );
        mom.update_map(&0u32.to_ne_bytes(), good.clone(), 0)
            .unwrap();
        good.update(&1u32.to_ne_bytes(), &[3; 8], 0).unwrap();
        let g = crate::pin();
        let p = m.lookup_elem(&0u32.to_ne_bytes(), 0, &g).unwrap();
        // SAFETY: the contract of MapOfMaps::lookup_elem, guard held.
        let got = unsafe { &*(p.as_ptr() as *const Arc<dyn Map>) };
        let mut v = [0u8; 8];
        got.lookup(&1u32.to_ne_bytes(), &mut v, 0).unwrap();
        assert_eq!(v, [3; 8]);
        m.delete(&0u32.to_ne_bytes()).unwrap();
        assert_eq!(m.delete(&0u32.to_ne_bytes()).unwrap_err().errno(), 2);

        let mut hom = MapAttr::new(MapType::HASH_OF_MAPS, 4, 4, 1);
        hom.inner = Some(Box::new(inner));
        let h = crate::create(hom).unwrap();
        let hm = h.as_any().downcast_ref::<MapOfMaps>().unwrap();
        hm.update_map(&5u32.to_ne_bytes(), good.clone(), 1).unwrap();
        assert_eq!(
            hm.update_map(&6u32.to_ne_bytes(), good.clone(), 0)
                .unwrap_err()
                .errno(),
            7
        );
        assert!(hm.get_map(&5u32.to_ne_bytes()).is_some());
    }
}
