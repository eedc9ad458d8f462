//! PROG_ARRAY (kernel/bpf/arraymap.c, fd arrays): slots holding programs
//! for bpf_tail_call. A slot holds a program id of the caller's choosing
//! (the loader's table of programs), where the kernel takes a program fd.

use std::any::Any;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use bpfvet_isa::uapi;

use crate::array::{check_array_attr, index_of};
use crate::{Common, Guard, Map, MapAttr, MapError, Result};

pub struct ProgArray {
    common: Common,
    /// 0 = empty, else program id + 1.
    slots: Box<[AtomicU64]>,
}

impl ProgArray {
    pub fn new(attr: MapAttr) -> Result<ProgArray> {
        if attr.value_size != 4 {
            return Err(MapError::Invalid(
                "prog array values are 4-byte program fds",
            ));
        }
        if attr.map_flags & (uapi::BPF_F_RDONLY_PROG | uapi::BPF_F_WRONLY_PROG) != 0 {
            return Err(MapError::Invalid(
                "prog array cannot be RDONLY_PROG/WRONLY_PROG",
            ));
        }
        check_array_attr(&attr)?;
        if attr.max_entries as u64 * 8 > crate::array::MAX_MAP_BYTES {
            return Err(MapError::NoMem);
        }
        Ok(ProgArray {
            slots: (0..attr.max_entries).map(|_| AtomicU64::new(0)).collect(),
            common: Common::new(attr),
        })
    }

    /// The program in slot `index` (what bpf_tail_call jumps to).
    pub fn get(&self, index: u32) -> Option<u32> {
        let v = self.slots.get(index as usize)?.load(Ordering::Acquire);
        (v != 0).then(|| (v - 1) as u32)
    }

    /// Put program `prog` in slot `index` (BPF_ANY only, E2BIG past the end).
    pub fn set(&self, index: u32, prog: u32, flags: u64) -> Result<()> {
        if flags != uapi::BPF_ANY {
            return Err(MapError::Invalid("prog array updates take BPF_ANY only"));
        }
        let slot = self.slots.get(index as usize).ok_or(MapError::TooBig)?;
        slot.store(prog as u64 + 1, Ordering::Release);
        Ok(())
    }

    /// Empty slot `index`: ENOENT if already empty.
    pub fn clear(&self, index: u32) -> Result<()> {
        let slot = self.slots.get(index as usize).ok_or(MapError::TooBig)?;
        if slot.swap(0, Ordering::AcqRel) == 0 {
            return Err(MapError::NotFound);
        }
        Ok(())
    }
}

impl Map for ProgArray {
    fn attr(&self) -> &MapAttr {
        &self.common.attr
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    /// The syscall lookup returns the program id.
    fn lookup(&self, key: &[u8], value: &mut [u8], flags: u64) -> Result<()> {
        self.common.check_sys_read()?;
        self.common.check_lookup_flags(flags)?;
        self.common.check_key(key)?;
        self.common.check_sys_value(value.len())?;
        let id = self.get(index_of(key)).ok_or(MapError::NotFound)?;
        value.copy_from_slice(&id.to_ne_bytes());
        Ok(())
    }
    fn update(&self, key: &[u8], value: &[u8], flags: u64) -> Result<()> {
        self.common.check_sys_write()?;
        self.common.check_lock_flag(flags)?;
        self.common.check_key(key)?;
        self.common.check_sys_value(value.len())?;
        self.set(index_of(key), index_of(value), flags)
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
        let i = key.map(index_of).unwrap_or(u32::MAX);
        let n = if i >= max {
            0
        } else if i == max - 1 {
            return Err(MapError::NotFound);
        } else {
            i + 1
        };
        next.copy_from_slice(&n.to_ne_bytes());
        Ok(())
    }
    fn freeze(&self) -> Result<()> {
        self.common.freeze()
    }
    fn lookup_elem(&self, _k: &[u8], _c: u32, _g: &Guard) -> Option<NonNull<u8>> {
        // The verifier forbids program lookups in prog arrays.
        None
    }
    fn update_elem(&self, _k: &[u8], _v: &[u8], _f: u64, _c: u32) -> Result<()> {
        Err(MapError::NotSupp)
    }
    fn delete_elem(&self, key: &[u8]) -> Result<()> {
        self.common.check_key(key)?;
        self.clear(index_of(key))
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
    use bpfvet_isa::uapi::MapType;

    #[test]
    fn prog_array_slots() {
        let m = crate::create(MapAttr::new(MapType::PROG_ARRAY, 4, 4, 2)).unwrap();
        let pa = m.as_any().downcast_ref::<ProgArray>().unwrap();
        assert_eq!(
            m.update(&5u32.to_ne_bytes(), &7u32.to_ne_bytes(), 0)
                .unwrap_err()
                .errno(),
            7
        );
        assert_eq!(
            m.update(&1u32.to_ne_bytes(), &7u32.to_ne_bytes(), 2)
                .unwrap_err()
                .errno(),
            22
        );
        m.update(&1u32.to_ne_bytes(), &7u32.to_ne_bytes(), 0)
            .unwrap();
        assert_eq!(pa.get(1), Some(7));
        assert_eq!(pa.get(0), None);
        m.delete(&1u32.to_ne_bytes()).unwrap();
        assert_eq!(m.delete(&1u32.to_ne_bytes()).unwrap_err().errno(), 2);
        let bad = MapAttr::new(MapType::PROG_ARRAY, 4, 8, 2);
        assert_eq!(crate::create(bad).err().map(|e| e.errno()), Some(22));
    }
}
