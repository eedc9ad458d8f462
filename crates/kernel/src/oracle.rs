//! The host kernel as a test oracle for hand-built programs and maps: one
//! BPF_PROG_LOAD of raw instructions (no object, no BTF, maps by fd) giving
//! the verdict, errno and log; and map creation from bare attributes. The
//! differential tests of every crate go through here instead of their own
//! bpf(2) wrappers.

use crate::report::last_error_line;
use crate::sys::{self, bpf_fd, Cmd, Errno, Fd, MapCreateAttr, ProgLoadAttr};
use bpfvet_isa::{Insn, Privileges};

/// A program as the kernel's BPF_PROG_LOAD sees it, GPL-licensed.
#[derive(Clone, Debug)]
pub struct RawProgram<'a> {
    pub prog_type: u32,
    pub insns: &'a [Insn],
    /// `BPF_LOG_LEVEL1` (1), `2`, `| 4` for the statistics lines.
    pub log_level: u32,
    pub log_size: usize,
    pub prog_flags: u32,
    pub expected_attach_type: u32,
    pub attach_btf_id: u32,
    /// Map fds that `BPF_PSEUDO_MAP_IDX` instructions index.
    pub fd_array: &'a [i32],
    /// The capabilities the loading thread holds.
    pub privileges: Privileges,
}

impl<'a> RawProgram<'a> {
    /// Level-1 log with statistics, 1 MiB of log.
    pub fn new(prog_type: u32, insns: &'a [Insn]) -> RawProgram<'a> {
        RawProgram {
            prog_type,
            insns,
            log_level: 1 | 4,
            log_size: 1 << 20,
            prog_flags: 0,
            expected_attach_type: 0,
            attach_btf_id: 0,
            fd_array: &[],
            privileges: Privileges::Root,
        }
    }
}

/// What the kernel said about a `RawProgram`.
#[derive(Debug)]
pub struct RawVerdict {
    /// The loaded program (dropping it unloads it), or the load's errno.
    pub result: Result<Fd, Errno>,
    pub log: String,
}

impl RawVerdict {
    pub fn accepted(&self) -> bool {
        self.result.is_ok()
    }

    pub fn errno(&self) -> Option<Errno> {
        self.result.as_ref().err().copied()
    }

    /// The last log line that is not statistics: the error of a rejection.
    pub fn error_line(&self) -> &str {
        last_error_line(&self.log).unwrap_or("")
    }

    /// `processed N insns` of the statistics line (log level with 4).
    pub fn processed_insns(&self) -> Option<u64> {
        self.log
            .lines()
            .find_map(|l| l.strip_prefix("processed "))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse().ok())
    }
}

/// Loads `p` into the host kernel.
pub fn load(p: &RawProgram) -> RawVerdict {
    let code = bpfvet_isa::insns_to_bytes(p.insns);
    let license = b"GPL\0";
    // The kernel insists on no buffer at level 0, and a buffer otherwise.
    let log_size = if p.log_level == 0 {
        0
    } else {
        p.log_size.max(1)
    };
    let mut log = vec![0u8; log_size];
    let mut attr = ProgLoadAttr {
        prog_type: p.prog_type,
        insn_cnt: p.insns.len() as u32,
        insns: sys::ptr(code.as_ptr()),
        license: sys::ptr(license.as_ptr()),
        log_level: p.log_level,
        log_size: u32::try_from(log.len()).unwrap_or(u32::MAX),
        log_buf: if log.is_empty() {
            0
        } else {
            sys::ptr(log.as_mut_ptr())
        },
        prog_flags: p.prog_flags,
        expected_attach_type: p.expected_attach_type,
        attach_btf_id: p.attach_btf_id,
        fd_array: if p.fd_array.is_empty() {
            0
        } else {
            sys::ptr(p.fd_array.as_ptr())
        },
        ..Default::default()
    };
    // A level this host cannot give fails like a load the kernel refuses
    // for want of a capability; callers SKIP on `privileges::available`.
    let result = crate::privileges::run_with(p.privileges, || bpf_fd(Cmd::ProgLoad, &mut attr))
        .unwrap_or(Err(Errno::EPERM));
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    RawVerdict {
        result,
        log: String::from_utf8_lossy(&log[..end]).into_owned(),
    }
}

/// Creates a map from bare attributes (`inner_map_fd` for map-in-map).
pub fn create_map(mut attr: MapCreateAttr) -> Result<Fd, Errno> {
    bpf_fd(Cmd::MapCreate, &mut attr)
}

/// An ARRAY map, e.g. to reference from a test program.
pub fn array_map(key_size: u32, value_size: u32, max_entries: u32) -> Result<Fd, Errno> {
    create_map(MapCreateAttr {
        map_type: bpfvet_isa::uapi::MapType::ARRAY.0,
        key_size,
        value_size,
        max_entries,
        ..Default::default()
    })
}

/// Why the host kernel cannot serve as oracle here (not root, no bpf(2)),
/// or None when it can: for tests to print `SKIP: <reason>`.
pub fn unavailable() -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Some("not root: the host kernel cannot serve as oracle".into());
        }
    }
    let exit = [Insn::new(0xb7, 0, 0, 0, 0), Insn::new(0x95, 0, 0, 0, 0)];
    let mut probe = RawProgram::new(bpfvet_isa::uapi::ProgType::SOCKET_FILTER.0, &exit);
    probe.log_level = 0;
    match load(&probe).result {
        Ok(_) => None,
        Err(e) => Some(format!("bpf(BPF_PROG_LOAD) of `r0 = 0; exit` fails: {e}")),
    }
}
