//! Maps created in the kernel from an object's [`MapDef`]s, and the element
//! operations (lookup, update, delete, get_next_key) on them.

use crate::sys::{self, bpf, bpf_fd, Cmd, Errno, Fd, MapCreateAttr, MapElemAttr, MapFreezeAttr};
use bpfvet_isa::uapi::{MapType, BPF_F_NUMA_NODE};
use bpfvet_object::MapDef;

/// A map living in the kernel.
#[derive(Debug)]
pub struct KernelMap {
    fd: Fd,
    pub name: String,
    pub map_type: MapType,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    /// An arena's user-space mapping, kept while the map lives.
    _arena: Option<ArenaMapping>,
}

/// The user mapping of a BPF arena (address, length). libbpf maps every
/// arena right after creating it; the verifier rejects programs using an
/// arena whose user address is not set by map_extra or such a mapping.
#[derive(Debug)]
struct ArenaMapping(usize, usize);

impl ArenaMapping {
    fn map(def: &MapDef, fd: &Fd) -> Result<ArenaMapping, Errno> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let len = usize::try_from(page)
            .ok()
            .and_then(|p| p.checked_mul(def.max_entries as usize))
            .filter(|&l| l > 0)
            .ok_or(Errno::EINVAL)?;
        // At map_extra when given (never over an existing mapping).
        let (addr, fixed) = match def.map_extra {
            0 => (std::ptr::null_mut(), 0),
            a => (a as usize as *mut libc::c_void, libc::MAP_FIXED_NOREPLACE),
        };
        // SAFETY: a new shared mapping of the arena's fd; it replaces no
        // existing mapping (MAP_FIXED_NOREPLACE) and is unmapped on drop.
        let p = unsafe {
            libc::mmap(
                addr,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | fixed,
                fd.raw(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            return Err(Errno(e));
        }
        Ok(ArenaMapping(p as usize, len))
    }
}

impl Drop for ArenaMapping {
    fn drop(&mut self) {
        // SAFETY: (address, length) is a mapping this value made.
        unsafe { libc::munmap(self.0 as *mut libc::c_void, self.1) };
    }
}

/// Why a map could not be created.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapCreateError {
    #[error("map type {0} is not supported by the kernel backend")]
    Unsupported(MapType),
    #[error("map {map} ({map_type}) has no inner map template in the object")]
    NoInnerTemplate { map: String, map_type: MapType },
    #[error("map {map} cannot be created at the loader's level: {why}")]
    Privileges { map: String, why: String },
    #[error("{what} of map {map} failed: {errno}")]
    Syscall {
        map: String,
        what: &'static str,
        errno: Errno,
    },
}

/// Per-CPU maps hold one value slot per possible CPU, each rounded up to 8
/// bytes, in user-space lookups and updates.
fn is_percpu(t: MapType) -> bool {
    matches!(
        t,
        MapType::PERCPU_HASH
            | MapType::PERCPU_ARRAY
            | MapType::LRU_PERCPU_HASH
            | MapType::PERCPU_CGROUP_STORAGE
    )
}

pub fn possible_cpus() -> usize {
    // The kernel's own list, e.g. "0-3" or "0,2-5".
    std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|s| parse_cpu_list(s.trim()))
        .unwrap_or(1)
}

fn parse_cpu_list(s: &str) -> Option<usize> {
    let mut n = 0;
    for part in s.split(',') {
        n += match part.split_once('-') {
            Some((a, b)) => b.parse::<usize>().ok()? - a.parse::<usize>().ok()? + 1,
            None => {
                part.parse::<usize>().ok()?;
                1
            }
        };
    }
    Some(n)
}

/// max_entries the map is created with (see `MapDef::created_max_entries`).
pub fn effective_max_entries(def: &MapDef) -> u32 {
    def.created_max_entries(possible_cpus() as u32)
}

/// Map types whose key/value BTF types libbpf does not pass to the kernel
/// (their values are fds, events or nothing).
fn btf_types_dropped(t: MapType) -> bool {
    matches!(
        t,
        MapType::PERF_EVENT_ARRAY
            | MapType::CGROUP_ARRAY
            | MapType::STACK_TRACE
            | MapType::ARRAY_OF_MAPS
            | MapType::HASH_OF_MAPS
            | MapType::DEVMAP
            | MapType::DEVMAP_HASH
            | MapType::CPUMAP
            | MapType::XSKMAP
            | MapType::SOCKMAP
            | MapType::SOCKHASH
            | MapType::QUEUE
            | MapType::STACK
            | MapType::ARENA
            | MapType::RINGBUF
            | MapType::USER_RINGBUF
    )
}

impl KernelMap {
    /// Creates the map, first with its BTF key/value types, then (as libbpf
    /// does when the kernel rejects them) without.
    pub fn create(
        def: &MapDef,
        btf_fd: Option<&Fd>,
        inner: Option<&KernelMap>,
    ) -> Result<KernelMap, MapCreateError> {
        if def.map_type == MapType::STRUCT_OPS || def.map_type == MapType::RHASH {
            return Err(MapCreateError::Unsupported(def.map_type));
        }
        let is_map_in_map = matches!(def.map_type, MapType::ARRAY_OF_MAPS | MapType::HASH_OF_MAPS);
        if is_map_in_map && inner.is_none() {
            return Err(MapCreateError::NoInnerTemplate {
                map: def.name.clone(),
                map_type: def.map_type,
            });
        }
        let max_entries = effective_max_entries(def);
        // Ring buffers have no key or value; BTF-defined ones may still name
        // a value type (loaders drop it, the kernel insists on 0).
        let is_ringbuf = matches!(def.map_type, MapType::RINGBUF | MapType::USER_RINGBUF);
        // Perf event arrays hold 4-byte fds whatever event type the BTF
        // definition names as value (loaders rewrite it, as here).
        let (key_size, value_size) = match def.map_type {
            _ if is_ringbuf => (0, 0),
            MapType::PERF_EVENT_ARRAY => (4, 4),
            _ => (def.key_size, def.value_size),
        };
        let mut attr = MapCreateAttr {
            map_type: def.map_type.0,
            key_size,
            value_size,
            max_entries,
            map_flags: def.map_flags,
            inner_map_fd: inner.map_or(0, |m| m.fd.raw() as u32),
            numa_node: if def.map_flags & BPF_F_NUMA_NODE != 0 {
                def.numa_node
            } else {
                0
            },
            map_name: sys::obj_name(&def.name),
            map_extra: def.map_extra,
            ..Default::default()
        };
        if let Some(hash) = &def.excl_prog_hash {
            attr.excl_prog_hash = sys::ptr(hash.as_ptr());
            attr.excl_prog_hash_size = hash.len() as u32;
        }
        let with_btf = btf_fd
            .filter(|_| def.btf_value_type_id != 0 || def.btf_key_type_id != 0)
            .filter(|_| !btf_types_dropped(def.map_type));
        if let Some(btf) = with_btf {
            attr.btf_fd = btf.raw() as u32;
            attr.btf_key_type_id = def.btf_key_type_id;
            attr.btf_value_type_id = def.btf_value_type_id;
        }
        let mut result = bpf_fd(Cmd::MapCreate, &mut attr);
        if result.is_err() && with_btf.is_some() {
            attr.btf_fd = 0;
            attr.btf_key_type_id = 0;
            attr.btf_value_type_id = 0;
            result = bpf_fd(Cmd::MapCreate, &mut attr);
        }
        let fd = result.map_err(|errno| MapCreateError::Syscall {
            map: def.name.clone(),
            what: "BPF_MAP_CREATE",
            errno,
        })?;
        let arena = match def.map_type {
            MapType::ARENA if !def.arena_unmapped => Some(ArenaMapping::map(def, &fd).map_err(
                |errno| MapCreateError::Syscall {
                    map: def.name.clone(),
                    what: "mmap of the arena",
                    errno,
                },
            )?),
            _ => None,
        };
        Ok(KernelMap {
            _arena: arena,
            fd,
            name: def.name.clone(),
            map_type: def.map_type,
            key_size,
            value_size,
            max_entries,
        })
    }

    /// Creates a struct_ops map as libbpf does: its value is the kernel's
    /// `bpf_struct_ops_<type>` wrapper (`vmlinux_value`: that type's id and
    /// size in vmlinux BTF), with one entry of a 4-byte key; the kernel
    /// wants the object's BTF fd even though no type id of it is passed.
    pub fn create_struct_ops(
        def: &MapDef,
        btf_fd: Option<&Fd>,
        vmlinux_value: (u32, u32),
    ) -> Result<KernelMap, MapCreateError> {
        let (value_type_id, value_size) = vmlinux_value;
        let mut attr = MapCreateAttr {
            map_type: MapType::STRUCT_OPS.0,
            key_size: 4,
            value_size,
            max_entries: 1,
            map_flags: def.map_flags,
            map_name: sys::obj_name(&def.name),
            btf_fd: btf_fd.map_or(0, |f| f.raw() as u32),
            btf_vmlinux_value_type_id: value_type_id,
            ..Default::default()
        };
        let fd = bpf_fd(Cmd::MapCreate, &mut attr).map_err(|errno| MapCreateError::Syscall {
            map: def.name.clone(),
            what: "BPF_MAP_CREATE",
            errno,
        })?;
        Ok(KernelMap {
            _arena: None,
            fd,
            name: def.name.clone(),
            map_type: MapType::STRUCT_OPS,
            key_size: 4,
            value_size,
            max_entries: 1,
        })
    }

    pub fn fd(&self) -> &Fd {
        &self.fd
    }

    /// Bytes a user-space value buffer needs (all CPUs for per-CPU maps).
    pub fn value_buf_size(&self) -> usize {
        if is_percpu(self.map_type) {
            (self.value_size as usize).div_ceil(8) * 8 * possible_cpus()
        } else {
            self.value_size as usize
        }
    }

    fn check_key(&self, key: &[u8]) -> Result<(), Errno> {
        if key.len() != self.key_size as usize {
            return Err(Errno::EINVAL);
        }
        Ok(())
    }

    /// The value stored under `key`, or None when there is none (ENOENT).
    pub fn lookup(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Errno> {
        self.check_key(key)?;
        let mut value = vec![0u8; self.value_buf_size()];
        let mut attr = MapElemAttr {
            map_fd: self.fd.raw() as u32,
            key: sys::ptr(key.as_ptr()),
            value: sys::ptr(value.as_mut_ptr()),
            ..Default::default()
        };
        match bpf(Cmd::MapLookupElem, &mut attr) {
            Ok(_) => Ok(Some(value)),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Updates `key` with `flags` (BPF_ANY / BPF_NOEXIST / BPF_EXIST / BPF_F_LOCK).
    pub fn update(&self, key: &[u8], value: &[u8], flags: u64) -> Result<(), Errno> {
        self.check_key(key)?;
        if value.len() != self.value_buf_size() {
            return Err(Errno::EINVAL);
        }
        let mut attr = MapElemAttr {
            map_fd: self.fd.raw() as u32,
            key: sys::ptr(key.as_ptr()),
            value: sys::ptr(value.as_ptr()),
            flags,
            ..Default::default()
        };
        bpf(Cmd::MapUpdateElem, &mut attr).map(|_| ())
    }

    pub fn delete(&self, key: &[u8]) -> Result<(), Errno> {
        self.check_key(key)?;
        let mut attr = MapElemAttr {
            map_fd: self.fd.raw() as u32,
            key: sys::ptr(key.as_ptr()),
            ..Default::default()
        };
        bpf(Cmd::MapDeleteElem, &mut attr).map(|_| ())
    }

    /// The key after `key` (the first key when `key` is None), or None at
    /// the end of the map.
    pub fn next_key(&self, key: Option<&[u8]>) -> Result<Option<Vec<u8>>, Errno> {
        if let Some(k) = key {
            self.check_key(k)?;
        }
        let mut next = vec![0u8; self.key_size as usize];
        let mut attr = MapElemAttr {
            map_fd: self.fd.raw() as u32,
            key: key.map_or(0, |k| sys::ptr(k.as_ptr())),
            value: sys::ptr(next.as_mut_ptr()),
            ..Default::default()
        };
        match bpf(Cmd::MapGetNextKey, &mut attr) {
            Ok(_) => Ok(Some(next)),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Makes the map read-only for user space (BPF_MAP_FREEZE), as libbpf
    /// does for `.rodata` and `.kconfig` after filling them.
    pub fn freeze(&self) -> Result<(), Errno> {
        let mut attr = MapFreezeAttr {
            map_fd: self.fd.raw() as u32,
        };
        bpf(Cmd::MapFreeze, &mut attr).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0"), Some(1));
        assert_eq!(parse_cpu_list("0-3"), Some(4));
        assert_eq!(parse_cpu_list("0,2-5"), Some(5));
        assert_eq!(parse_cpu_list("x"), None);
    }
}
