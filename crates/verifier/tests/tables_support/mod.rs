//! The host kernel as oracle for the table tests: raw BPF_PROG_LOAD of tiny
//! programs, and a vmlinux BTF name lookup for the types that need an
//! attach BTF id.

#![allow(dead_code)]

use bpfvet_isa::Insn;

const BPF_PROG_LOAD: libc::c_long = 5;
/// Bytes of `union bpf_attr` we fill for BPF_PROG_LOAD (up to and
/// including `attach_btf_id`, rounded to 8).
const ATTR_SIZE: usize = 144;
pub const BPF_F_SLEEPABLE: u32 = 1 << 4;

#[derive(Clone, Copy, Debug, Default)]
pub struct LoadSpec {
    pub prog_type: u32,
    pub expected_attach_type: u32,
    pub attach_btf_id: u32,
    pub prog_flags: u32,
}

pub struct LoadResult {
    pub ok: bool,
    pub errno: i32,
    pub log: String,
}

impl LoadResult {
    /// The kernel's last log line before the statistics line.
    pub fn last_error_line(&self) -> &str {
        self.log
            .lines()
            .rfind(|l| !l.is_empty() && !l.starts_with("processed "))
            .unwrap_or("")
    }
}

fn put_u32(buf: &mut [u8], off: usize, v: u32) {
    buf[off..off + 4].copy_from_slice(&v.to_ne_bytes());
}

fn put_u64(buf: &mut [u8], off: usize, v: u64) {
    buf[off..off + 8].copy_from_slice(&v.to_ne_bytes());
}

/// Loads `insns` (GPL, log level 1) and closes the fd.
pub fn load(spec: &LoadSpec, insns: &[Insn]) -> LoadResult {
    let code = bpfvet_isa::insns_to_bytes(insns);
    let license = b"GPL\0";
    let mut log = vec![0u8; 1 << 16];
    let mut attr = [0u8; ATTR_SIZE];
    put_u32(&mut attr, 0, spec.prog_type);
    put_u32(&mut attr, 4, insns.len() as u32);
    put_u64(&mut attr, 8, code.as_ptr() as u64);
    put_u64(&mut attr, 16, license.as_ptr() as u64);
    put_u32(&mut attr, 24, 1);
    put_u32(&mut attr, 28, log.len() as u32);
    put_u64(&mut attr, 32, log.as_mut_ptr() as u64);
    put_u32(&mut attr, 44, spec.prog_flags);
    put_u32(&mut attr, 68, spec.expected_attach_type);
    put_u32(&mut attr, 108, spec.attach_btf_id);
    // SAFETY: `attr` is a fully initialised bpf_attr prefix of ATTR_SIZE
    // bytes; the pointers in it (code, license, log) outlive the call and
    // the log buffer's length is the one we pass.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_PROG_LOAD,
            attr.as_ptr(),
            ATTR_SIZE as libc::c_uint,
        )
    };
    let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    if fd >= 0 {
        // SAFETY: the fd was just returned to us by the kernel and is closed once.
        unsafe { libc::close(fd as libc::c_int) };
    }
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    LoadResult {
        ok: fd >= 0,
        errno: if fd >= 0 { 0 } else { errno },
        log: String::from_utf8_lossy(&log[..end]).into_owned(),
    }
}

pub fn mov_r0(imm: i32) -> Insn {
    Insn::new(0xb7, 0, 0, 0, imm)
}

pub fn exit() -> Insn {
    Insn::new(0x95, 0, 0, 0, 0)
}

pub fn call(helper: u32) -> Insn {
    Insn::new(0x85, 0, 0, 0, helper as i32)
}

/// `dst = *(size *)(src + off)`, size in bytes.
pub fn ldx(size: u32, dst: u8, src: u8, off: i16) -> Insn {
    Insn::new(0x61 & !0x18 | size_bits(size), dst, src, off, 0)
}

/// `*(size *)(dst + off) = src`.
pub fn stx(size: u32, dst: u8, src: u8, off: i16) -> Insn {
    Insn::new(0x63 & !0x18 | size_bits(size), dst, src, off, 0)
}

fn size_bits(size: u32) -> u8 {
    match size {
        4 => 0x00,
        2 => 0x08,
        1 => 0x10,
        _ => 0x18,
    }
}

/// None when the kernel oracle is usable; otherwise why not.
pub fn kernel_unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    let r = load(
        &LoadSpec {
            prog_type: 1,
            ..Default::default()
        },
        &[mov_r0(0), exit()],
    );
    if !r.ok {
        return Some(format!("bpf(BPF_PROG_LOAD) fails with errno {}", r.errno));
    }
    None
}

/// BTF kinds used to look types up.
pub const BTF_KIND_TYPEDEF: u32 = 8;
pub const BTF_KIND_FUNC: u32 = 12;

/// Type ids of (kind, name) types in /sys/kernel/btf/vmlinux.
pub fn vmlinux_btf_ids(names: &[(u32, &str)]) -> Vec<Option<u32>> {
    let Ok(data) = std::fs::read("/sys/kernel/btf/vmlinux") else {
        return vec![None; names.len()];
    };
    let mut out = vec![None; names.len()];
    let rd = |o: usize| -> Option<u32> {
        data.get(o..o + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    };
    let (Some(hdr_len), Some(type_off), Some(type_len), Some(str_off)) =
        (rd(4), rd(8), rd(12), rd(16))
    else {
        return out;
    };
    let types = hdr_len as usize + type_off as usize;
    let strs = hdr_len as usize + str_off as usize;
    let name_at = |off: u32| -> &[u8] {
        let s = &data[strs + off as usize..];
        &s[..s.iter().position(|&b| b == 0).unwrap_or(0)]
    };
    let mut pos = types;
    let mut id = 1u32;
    while pos + 12 <= types + type_len as usize {
        let (name_off, info) = (rd(pos).unwrap(), rd(pos + 4).unwrap());
        let kind = (info >> 24) & 0x1f;
        let vlen = (info & 0xffff) as usize;
        let name = name_at(name_off);
        for (i, (k, n)) in names.iter().enumerate() {
            if out[i].is_none() && kind == *k && name == n.as_bytes() {
                out[i] = Some(id);
            }
        }
        pos += 12
            + match kind {
                1 => 4,             // INT
                3 => 12,            // ARRAY
                4 | 5 => 12 * vlen, // STRUCT, UNION
                6 => 8 * vlen,      // ENUM
                13 => 8 * vlen,     // FUNC_PROTO
                14 => 4,            // VAR
                15 => 12 * vlen,    // DATASEC
                17 => 4,            // DECL_TAG
                19 => 12 * vlen,    // ENUM64
                _ => 0,
            };
        id += 1;
    }
    out
}

/// An array map for programs that need a map argument; closed on drop.
pub struct MapFd(pub i32);

impl Drop for MapFd {
    fn drop(&mut self) {
        // SAFETY: the fd came from BPF_MAP_CREATE and is closed once.
        unsafe { libc::close(self.0) };
    }
}

/// BPF_MAP_CREATE of a BPF_MAP_TYPE_ARRAY.
pub fn create_array_map(key_size: u32, value_size: u32, max_entries: u32) -> Option<MapFd> {
    create_map(2, key_size, value_size, max_entries, 0, None)
}

/// BPF_MAP_CREATE; `inner` is the template map of a map-in-map.
pub fn create_map(
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    flags: u32,
    inner: Option<&MapFd>,
) -> Option<MapFd> {
    let mut attr = [0u8; 72];
    put_u32(&mut attr, 0, map_type);
    put_u32(&mut attr, 4, key_size);
    put_u32(&mut attr, 8, value_size);
    put_u32(&mut attr, 12, max_entries);
    put_u32(&mut attr, 16, flags);
    put_u32(&mut attr, 20, inner.map_or(0, |m| m.0 as u32));
    // SAFETY: `attr` is an initialised bpf_attr prefix for BPF_MAP_CREATE
    // (command 0) holding no pointers.
    let fd = unsafe { libc::syscall(libc::SYS_bpf, 0, attr.as_ptr(), attr.len() as libc::c_uint) };
    (fd >= 0).then_some(MapFd(fd as i32))
}

/// The two slots of `dst = map_by_fd(fd)`.
pub fn ld_map_fd(dst: u8, fd: i32) -> [Insn; 2] {
    [Insn::new(0x18, dst, 1, 0, fd), Insn::new(0, 0, 0, 0, 0)]
}
