//! The raw bpf(2) system call: one `#[repr(C)]` attribute struct per command
//! we use (laid out as `union bpf_attr` in include/uapi/linux/bpf.h), an
//! owned file descriptor, and errno values as data.

use std::fmt;

/// Commands of `enum bpf_cmd` that the backend issues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Cmd {
    MapCreate = 0,
    MapLookupElem = 1,
    MapUpdateElem = 2,
    MapDeleteElem = 3,
    MapGetNextKey = 4,
    ProgLoad = 5,
    ProgTestRun = 10,
    ObjGetInfoByFd = 15,
    BtfLoad = 18,
    MapLookupAndDeleteElem = 21,
    MapFreeze = 22,
    MapLookupBatch = 24,
}

/// An errno value returned by the kernel.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

impl Errno {
    pub const EPERM: Errno = Errno(1);
    pub const ENOENT: Errno = Errno(2);
    pub const ESRCH: Errno = Errno(3);
    pub const E2BIG: Errno = Errno(7);
    pub const EBADF: Errno = Errno(9);
    pub const EACCES: Errno = Errno(13);
    pub const EFAULT: Errno = Errno(14);
    pub const EINVAL: Errno = Errno(22);
    pub const ENOSPC: Errno = Errno(28);
    pub const ENOSYS: Errno = Errno(38);
    pub const EOPNOTSUPP: Errno = Errno(95);
    /// Kernel-internal ENOTSUPP, which does leak to user space from bpf().
    pub const ENOTSUPP: Errno = Errno(524);

    /// The symbolic name, e.g. "EINVAL", or "errno N".
    pub fn name(self) -> String {
        let n = match self.0 {
            1 => "EPERM",
            2 => "ENOENT",
            3 => "ESRCH",
            4 => "EINTR",
            7 => "E2BIG",
            9 => "EBADF",
            11 => "EAGAIN",
            12 => "ENOMEM",
            13 => "EACCES",
            14 => "EFAULT",
            16 => "EBUSY",
            17 => "EEXIST",
            19 => "ENODEV",
            22 => "EINVAL",
            24 => "EMFILE",
            28 => "ENOSPC",
            34 => "ERANGE",
            38 => "ENOSYS",
            95 => "EOPNOTSUPP",
            524 => "ENOTSUPP",
            _ => return format!("errno {}", self.0),
        };
        n.to_string()
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A file descriptor the kernel gave us; closed on drop.
#[derive(Debug)]
pub struct Fd(i32);

impl Fd {
    pub fn raw(&self) -> i32 {
        self.0
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        close(self.0);
    }
}

#[cfg(target_os = "linux")]
fn close(fd: i32) {
    // SAFETY: `fd` came from a successful bpf() call and is owned by exactly
    // one `Fd`, so it is open and closed once.
    unsafe {
        libc::close(fd);
    }
}

#[cfg(not(target_os = "linux"))]
fn close(_fd: i32) {}

/// Issues bpf(cmd, attr, size_of::<A>()), returning the non-negative result.
///
/// `A` must be one of the `#[repr(C)]` attribute structs below; every
/// pointer stored in it must stay valid for the duration of the call.
#[cfg(target_os = "linux")]
pub fn bpf<A: Attr>(cmd: Cmd, attr: &mut A) -> Result<i64, Errno> {
    loop {
        // SAFETY: `attr` is a live, exclusively borrowed repr(C) struct of
        // the size we pass; the kernel reads and writes only within it and
        // through the user pointers it holds, which the callers keep alive.
        let r = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                cmd as u32 as libc::c_long,
                attr as *mut A as *mut libc::c_void,
                std::mem::size_of::<A>() as libc::c_long,
            )
        };
        if r >= 0 {
            return Ok(r as i64);
        }
        let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        // Loads can be interrupted by signals; libbpf retries on EAGAIN too.
        if e == 4 || e == 11 {
            continue;
        }
        return Err(Errno(e));
    }
}

#[cfg(not(target_os = "linux"))]
pub fn bpf<A: Attr>(_cmd: Cmd, _attr: &mut A) -> Result<i64, Errno> {
    Err(Errno::ENOSYS)
}

/// Issues a command whose result is a new file descriptor.
pub fn bpf_fd<A: Attr>(cmd: Cmd, attr: &mut A) -> Result<Fd, Errno> {
    let r = bpf(cmd, attr)?;
    i32::try_from(r).map(Fd).map_err(|_| Errno::EINVAL)
}

/// Marker for the attribute structs: plain old data, safe to zero.
pub trait Attr: Default {}

/// Pointer to user memory as the kernel wants it (`__aligned_u64`).
pub fn ptr<T>(p: *const T) -> u64 {
    p as usize as u64
}

/// A BPF object name (maps, programs): at most 15 bytes of [A-Za-z0-9_.],
/// NUL-terminated, as the kernel's name check accepts.
pub fn obj_name(name: &str) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (slot, b) in out.iter_mut().take(15).zip(name.bytes()) {
        *slot = if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' {
            b
        } else {
            b'_'
        };
    }
    out
}

#[repr(C)]
#[derive(Default, Debug)]
pub struct MapCreateAttr {
    pub map_type: u32,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    pub map_flags: u32,
    pub inner_map_fd: u32,
    pub numa_node: u32,
    pub map_name: [u8; 16],
    pub map_ifindex: u32,
    pub btf_fd: u32,
    pub btf_key_type_id: u32,
    pub btf_value_type_id: u32,
    pub btf_vmlinux_value_type_id: u32,
    pub map_extra: u64,
    pub value_type_btf_obj_fd: i32,
    pub map_token_fd: i32,
    /// 6.18: pointer to the SHA-256 digest of the one program allowed to
    /// use the map, and its size (32).
    pub excl_prog_hash: u64,
    pub excl_prog_hash_size: u32,
    pub _pad: u32,
}
impl Attr for MapCreateAttr {}

#[repr(C)]
#[derive(Default, Debug)]
pub struct MapElemAttr {
    pub map_fd: u32,
    pub _pad: u32,
    pub key: u64,
    /// `value` or `next_key`.
    pub value: u64,
    pub flags: u64,
}
impl Attr for MapElemAttr {}

/// BPF_MAP_*_BATCH: `in_batch`/`out_batch` are the cursor, `count` is the
/// capacity on entry and the number of elements on return.
#[repr(C)]
#[derive(Default, Debug)]
pub struct MapBatchAttr {
    pub in_batch: u64,
    pub out_batch: u64,
    pub keys: u64,
    pub values: u64,
    pub count: u32,
    pub map_fd: u32,
    pub elem_flags: u64,
    pub flags: u64,
}
impl Attr for MapBatchAttr {}

#[repr(C)]
#[derive(Default, Debug)]
pub struct MapFreezeAttr {
    pub map_fd: u32,
}
impl Attr for MapFreezeAttr {}

#[repr(C)]
#[derive(Default, Debug)]
pub struct ProgLoadAttr {
    pub prog_type: u32,
    pub insn_cnt: u32,
    pub insns: u64,
    pub license: u64,
    pub log_level: u32,
    pub log_size: u32,
    pub log_buf: u64,
    pub kern_version: u32,
    pub prog_flags: u32,
    pub prog_name: [u8; 16],
    pub prog_ifindex: u32,
    pub expected_attach_type: u32,
    pub prog_btf_fd: u32,
    pub func_info_rec_size: u32,
    pub func_info: u64,
    pub func_info_cnt: u32,
    pub line_info_rec_size: u32,
    pub line_info: u64,
    pub line_info_cnt: u32,
    pub attach_btf_id: u32,
    pub attach_prog_fd: u32,
    pub core_relo_cnt: u32,
    pub fd_array: u64,
    pub core_relos: u64,
    pub core_relo_rec_size: u32,
    /// Output: the log size the whole log would need, NUL included.
    pub log_true_size: u32,
    pub prog_token_fd: i32,
    /// 6.13+: how many leading fd_array entries bind maps and BTFs up front.
    pub fd_array_cnt: u32,
}
impl Attr for ProgLoadAttr {}

#[repr(C)]
#[derive(Default, Debug)]
pub struct BtfLoadAttr {
    pub btf: u64,
    pub btf_log_buf: u64,
    pub btf_size: u32,
    pub btf_log_size: u32,
    pub btf_log_level: u32,
    pub btf_log_true_size: u32,
    pub btf_flags: u32,
    pub btf_token_fd: i32,
}
impl Attr for BtfLoadAttr {}

#[repr(C)]
#[derive(Default, Debug)]
pub struct InfoByFdAttr {
    pub bpf_fd: u32,
    pub info_len: u32,
    pub info: u64,
}
impl Attr for InfoByFdAttr {}

#[repr(C)]
#[derive(Default, Debug)]
pub struct TestRunAttr {
    pub prog_fd: u32,
    pub retval: u32,
    pub data_size_in: u32,
    pub data_size_out: u32,
    pub data_in: u64,
    pub data_out: u64,
    pub repeat: u32,
    pub duration: u32,
    pub ctx_size_in: u32,
    pub ctx_size_out: u32,
    pub ctx_in: u64,
    pub ctx_out: u64,
    pub flags: u32,
    pub cpu: u32,
    pub batch_size: u32,
    pub _pad: u32,
}
impl Attr for TestRunAttr {}

/// `struct bpf_prog_info`, up to the fields this backend reads.
#[repr(C)]
#[derive(Default, Debug, Clone)]
pub struct ProgInfo {
    pub prog_type: u32,
    pub id: u32,
    pub tag: [u8; 8],
    pub jited_prog_len: u32,
    pub xlated_prog_len: u32,
    pub jited_prog_insns: u64,
    pub xlated_prog_insns: u64,
    pub load_time: u64,
    pub created_by_uid: u32,
    pub nr_map_ids: u32,
    pub map_ids: u64,
    pub name: [u8; 16],
    pub ifindex: u32,
    pub gpl_compatible: u32,
    pub netns_dev: u64,
    pub netns_ino: u64,
    pub nr_jited_ksyms: u32,
    pub nr_jited_func_lens: u32,
    pub jited_ksyms: u64,
    pub jited_func_lens: u64,
    pub btf_id: u32,
    pub func_info_rec_size: u32,
    pub func_info: u64,
    pub nr_func_info: u32,
    pub nr_line_info: u32,
    pub line_info: u64,
    pub jited_line_info: u64,
    pub nr_jited_line_info: u32,
    pub line_info_rec_size: u32,
    pub jited_line_info_rec_size: u32,
    pub nr_prog_tags: u32,
    pub prog_tags: u64,
    pub run_time_ns: u64,
    pub run_cnt: u64,
    pub recursion_misses: u64,
    pub verified_insns: u32,
    pub attach_btf_obj_id: u32,
    pub attach_btf_id: u32,
    pub _pad: u32,
}

/// Reads `bpf_prog_info` of a loaded program.
pub fn prog_info(fd: &Fd) -> Result<ProgInfo, Errno> {
    let mut info = ProgInfo::default();
    let mut attr = InfoByFdAttr {
        bpf_fd: fd.raw() as u32,
        info_len: std::mem::size_of::<ProgInfo>() as u32,
        info: ptr(&mut info as *mut ProgInfo),
    };
    bpf(Cmd::ObjGetInfoByFd, &mut attr)?;
    Ok(info)
}

// The offsets the kernel's UAPI fixes; a wrong field order fails the build.
const _: () = {
    assert!(std::mem::size_of::<MapCreateAttr>() == 96);
    assert!(std::mem::offset_of!(MapCreateAttr, excl_prog_hash) == 80);
    assert!(std::mem::offset_of!(MapCreateAttr, map_extra) == 64);
    assert!(std::mem::size_of::<MapElemAttr>() == 32);
    assert!(std::mem::offset_of!(ProgLoadAttr, expected_attach_type) == 68);
    assert!(std::mem::offset_of!(ProgLoadAttr, fd_array) == 120);
    assert!(std::mem::offset_of!(ProgLoadAttr, log_true_size) == 140);
    assert!(std::mem::offset_of!(ProgLoadAttr, fd_array_cnt) == 148);
    assert!(std::mem::size_of::<BtfLoadAttr>() == 40);
    assert!(std::mem::offset_of!(TestRunAttr, ctx_out) == 56);
    assert!(std::mem::offset_of!(TestRunAttr, batch_size) == 72);
    assert!(std::mem::offset_of!(ProgInfo, verified_insns) == 216);
    assert!(std::mem::size_of::<ProgInfo>() == 232);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_names_are_truncated_and_sanitised() {
        let n = obj_name("a-very-long-program-name");
        assert_eq!(&n[..15], b"a_very_long_pro");
        assert_eq!(n[15], 0);
        assert_eq!(&obj_name("x.rodata")[..9], b"x.rodata\0");
    }

    #[test]
    fn errno_names() {
        assert_eq!(Errno::EPERM.to_string(), "EPERM");
        assert_eq!(Errno(524).to_string(), "ENOTSUPP");
        assert_eq!(Errno(200).to_string(), "errno 200");
    }
}
