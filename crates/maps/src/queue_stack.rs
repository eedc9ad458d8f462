//! QUEUE and STACK (kernel/bpf/queue_stack_maps.c): a ring of
//! max_entries + 1 slots under one lock; values only, no keys.

use std::any::Any;
use std::ptr::NonNull;
use std::sync::Mutex;

use bpfvet_isa::uapi::{self, MapType};

use crate::attr::{access_ok, ACCESS_MASK, KMALLOC_MAX_SIZE};
use crate::{Common, Guard, Map, MapAttr, MapError, Result};

struct Ring {
    buf: Vec<u8>,
    /// Next slot to write.
    head: usize,
    /// Oldest slot.
    tail: usize,
}

pub struct QueueStack {
    common: Common,
    is_stack: bool,
    size: usize,
    vs: usize,
    ring: Mutex<Ring>,
}

impl QueueStack {
    pub fn new(attr: MapAttr) -> Result<QueueStack> {
        if attr.max_entries == 0
            || attr.key_size != 0
            || attr.value_size == 0
            || attr.map_flags & !(uapi::BPF_F_NUMA_NODE | ACCESS_MASK) != 0
            || !access_ok(attr.map_flags)
        {
            return Err(MapError::Invalid("bad queue/stack attributes"));
        }
        if attr.value_size as u64 > KMALLOC_MAX_SIZE
            || attr.max_entries >= u32::MAX / attr.value_size
        {
            return Err(MapError::TooBig);
        }
        let size = attr.max_entries as usize + 1;
        let vs = attr.value_size as usize;
        let bytes = size as u64 * vs as u64;
        if bytes > crate::array::MAX_MAP_BYTES {
            return Err(MapError::NoMem);
        }
        let mut buf = Vec::new();
        buf.try_reserve_exact(bytes as usize)
            .map_err(|_| MapError::NoMem)?;
        buf.resize(bytes as usize, 0);
        Ok(QueueStack {
            is_stack: attr.map_type == MapType::STACK,
            common: Common::new(attr),
            size,
            vs,
            ring: Mutex::new(Ring {
                buf,
                head: 0,
                tail: 0,
            }),
        })
    }

    fn ring(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn take(&self, out: &mut [u8], delete: bool) -> Result<()> {
        if out.len() != self.vs {
            return Err(MapError::Invalid("value buffer is not value_size bytes"));
        }
        let mut r = self.ring();
        if r.head == r.tail {
            return Err(MapError::NotFound);
        }
        let slot = if self.is_stack {
            if r.head == 0 {
                self.size - 1
            } else {
                r.head - 1
            }
        } else {
            r.tail
        };
        out.copy_from_slice(&r.buf[slot * self.vs..][..self.vs]);
        if delete {
            if self.is_stack {
                r.head = slot;
            } else {
                r.tail = (r.tail + 1) % self.size;
            }
        }
        Ok(())
    }
}

impl Map for QueueStack {
    fn attr(&self) -> &MapAttr {
        &self.common.attr
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    /// Peek.
    fn lookup(&self, key: &[u8], value: &mut [u8], flags: u64) -> Result<()> {
        self.common.check_sys_read()?;
        self.common.check_lookup_flags(flags)?;
        self.common.check_key(key)?;
        self.take(value, false)
    }

    /// Push.
    fn update(&self, key: &[u8], value: &[u8], flags: u64) -> Result<()> {
        self.common.check_sys_write()?;
        self.common.check_lock_flag(flags)?;
        self.common.check_key(key)?;
        self.push_elem(value, flags)
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        self.common.check_sys_write()?;
        self.common.check_key(key)?;
        Err(MapError::Invalid(
            "queue/stack elements cannot be deleted by key",
        ))
    }

    /// Pop.
    fn lookup_and_delete(&self, key: &[u8], value: &mut [u8], flags: u64) -> Result<()> {
        if flags & !uapi::BPF_F_LOCK != 0 {
            return Err(MapError::Invalid(
                "lookup_and_delete flags other than BPF_F_LOCK",
            ));
        }
        self.common.check_sys_read()?;
        self.common.check_sys_write()?;
        if flags != 0 {
            return Err(MapError::Invalid("queue/stack pop takes no flags"));
        }
        self.common.check_key(key)?;
        self.take(value, true)
    }

    fn get_next_key(&self, _key: Option<&[u8]>, _next: &mut [u8]) -> Result<()> {
        self.common.check_sys_read()?;
        Err(MapError::Invalid("queue/stack have no keys"))
    }

    fn freeze(&self) -> Result<()> {
        self.common.freeze()
    }

    fn lookup_elem(&self, _key: &[u8], _cpu: u32, _guard: &Guard) -> Option<NonNull<u8>> {
        None
    }

    fn update_elem(&self, _key: &[u8], value: &[u8], flags: u64, _cpu: u32) -> Result<()> {
        self.push_elem(value, flags)
    }

    fn delete_elem(&self, _key: &[u8]) -> Result<()> {
        Err(MapError::Invalid(
            "queue/stack elements cannot be deleted by key",
        ))
    }

    fn for_each(
        &self,
        _cpu: u32,
        _g: &Guard,
        _f: &mut dyn FnMut(&[u8], NonNull<u8>) -> bool,
    ) -> Result<u32> {
        Err(MapError::NotSupp)
    }

    fn push_elem(&self, value: &[u8], flags: u64) -> Result<()> {
        if flags & uapi::BPF_NOEXIST != 0 || flags > uapi::BPF_EXIST {
            return Err(MapError::Invalid("push flags must be BPF_ANY or BPF_EXIST"));
        }
        if value.len() != self.vs {
            return Err(MapError::Invalid("value buffer is not value_size bytes"));
        }
        let mut r = self.ring();
        if (r.head + 1) % self.size == r.tail {
            if flags != uapi::BPF_EXIST {
                return Err(MapError::TooBig);
            }
            // Full and BPF_EXIST: drop the oldest.
            r.tail = (r.tail + 1) % self.size;
        }
        let head = r.head;
        r.buf[head * self.vs..][..self.vs].copy_from_slice(value);
        r.head = (head + 1) % self.size;
        Ok(())
    }

    fn pop_elem(&self, value: &mut [u8]) -> Result<()> {
        self.take(value, true)
    }

    fn peek_elem(&self, value: &mut [u8]) -> Result<()> {
        self.take(value, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::create;

    #[test]
    fn stack_is_lifo_queue_is_fifo_and_exist_overwrites_oldest() {
        for (t, order) in [(MapType::QUEUE, [2u8, 3]), (MapType::STACK, [3u8, 2])] {
            let m = create(MapAttr::new(t, 0, 1, 2)).unwrap();
            m.update(&[], &[1], 0).unwrap();
            m.update(&[], &[2], 0).unwrap();
            assert_eq!(m.update(&[], &[9], 0).unwrap_err().errno(), 7);
            assert_eq!(m.update(&[], &[9], 1).unwrap_err().errno(), 22);
            m.update(&[], &[3], 2).unwrap();
            let mut v = [0u8];
            for want in order {
                m.lookup_and_delete(&[], &mut v, 0).unwrap();
                assert_eq!(v[0], want, "{t}");
            }
            assert_eq!(m.lookup(&[], &mut v, 0).unwrap_err().errno(), 2);
            assert_eq!(m.delete(&[]).unwrap_err().errno(), 22);
        }
    }
}
