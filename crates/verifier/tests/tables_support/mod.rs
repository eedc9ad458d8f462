//! The host kernel as oracle for the table tests: raw BPF_PROG_LOAD of tiny
//! programs, and a vmlinux BTF name lookup for the types that need an
//! attach BTF id.

#![allow(dead_code)]

use bpfvet_isa::Insn;
use bpfvet_kernel::oracle;
use bpfvet_kernel::sys::MapCreateAttr;

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
        bpfvet_kernel::report::last_error_line(&self.log).unwrap_or("")
    }
}

/// Loads `insns` (GPL, log level 1) and closes the fd.
pub fn load(spec: &LoadSpec, insns: &[Insn]) -> LoadResult {
    let mut p = oracle::RawProgram::new(spec.prog_type, insns);
    p.log_level = 1;
    p.log_size = 1 << 16;
    p.prog_flags = spec.prog_flags;
    p.expected_attach_type = spec.expected_attach_type;
    p.attach_btf_id = spec.attach_btf_id;
    let v = oracle::load(&p);
    LoadResult {
        ok: v.accepted(),
        errno: v.errno().map_or(0, |e| e.0),
        log: v.log,
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
    oracle::unavailable()
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

/// A map for programs that need a map argument; closed on drop.
pub type MapFd = bpfvet_kernel::sys::Fd;

/// BPF_MAP_CREATE of a BPF_MAP_TYPE_ARRAY.
pub fn create_array_map(key_size: u32, value_size: u32, max_entries: u32) -> Option<MapFd> {
    oracle::array_map(key_size, value_size, max_entries).ok()
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
    oracle::create_map(MapCreateAttr {
        map_type,
        key_size,
        value_size,
        max_entries,
        map_flags: flags,
        inner_map_fd: inner.map_or(0, |m| m.raw() as u32),
        ..Default::default()
    })
    .ok()
}

/// The two slots of `dst = map_by_fd(fd)`.
pub fn ld_map_fd(dst: u8, fd: i32) -> [Insn; 2] {
    [Insn::new(0x18, dst, 1, 0, fd), Insn::new(0, 0, 0, 0, 0)]
}
