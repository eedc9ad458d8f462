//! Running a bpf(2) call with fewer capabilities than the process has.
//!
//! Capabilities are per thread on Linux: a short-lived thread lowers its
//! effective set with capset(2) (the permitted set stays, nothing else in
//! the process changes), makes the call and ends. Unprivileged loads also
//! need kernel.unprivileged_bpf_disabled=0; it is lowered while such loads
//! run and restored when the last one ends, one process at a time (a lock
//! file). A process killed meanwhile leaves it at 0.

use bpfvet_isa::Privileges;
use std::sync::Mutex;

const SYSCTL: &str = "/proc/sys/kernel/unprivileged_bpf_disabled";

/// Runs `f` on a thread holding the effective capabilities of `level`.
/// Err says why that level cannot be had on this host.
pub fn run_with<T: Send>(level: Privileges, f: impl FnOnce() -> T + Send) -> Result<T, String> {
    let Some(caps) = level.effective_caps() else {
        return Ok(f());
    };
    let _sysctl = if level == Privileges::Unprivileged {
        Some(SysctlGuard::enter()?)
    } else {
        None
    };
    std::thread::scope(|s| {
        s.spawn(move || {
            set_effective_caps(caps)?;
            Ok(f())
        })
        .join()
        .map_err(|_| "the reduced-capability thread panicked".to_string())?
    })
}

/// Whether `level` can be had here; Err says why not (for a visible SKIP).
pub fn available(level: Privileges) -> Result<(), String> {
    run_with(level, || ())
}

#[cfg(target_os = "linux")]
fn set_effective_caps(mask: u64) -> Result<(), String> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let mut hdr = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: capget/capset read and write exactly one header and two data
    // records (version 3), which live on this stack frame.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut hdr, data.as_mut_ptr()) };
    if r != 0 {
        return Err(format!("capget: {}", std::io::Error::last_os_error()));
    }
    let permitted = u64::from(data[0].permitted) | (u64::from(data[1].permitted) << 32);
    if mask & !permitted != 0 {
        return Err("the process lacks the capabilities to lower to".into());
    }
    data[0].effective = mask as u32;
    data[1].effective = (mask >> 32) as u32;
    // SAFETY: as above.
    let r = unsafe { libc::syscall(libc::SYS_capset, &hdr, data.as_ptr()) };
    if r != 0 {
        return Err(format!("capset: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn set_effective_caps(_mask: u64) -> Result<(), String> {
    Err("capabilities are a Linux feature".into())
}

/// Serialises the lowered sysctl across processes (parallel tests, several
/// bpfvet runs): without it one process could restore the old value while
/// another loads, or save the lowered 0 as the value to restore.
const LOCK_NAME: &str = "bpfvet-unprivileged-bpf.lock";

/// The holders of the lowered sysctl in this process, the value to restore
/// and the cross-process lock held meanwhile.
struct SysctlUsers {
    count: usize,
    restore: String,
    lock: Option<std::fs::File>,
}

static SYSCTL_USERS: Mutex<SysctlUsers> = Mutex::new(SysctlUsers {
    count: 0,
    restore: String::new(),
    lock: None,
});

struct SysctlGuard;

/// Opens the lock file and blocks until this process holds it.
fn lock_across_processes() -> Result<std::fs::File, String> {
    use std::os::fd::AsRawFd;
    let run_lock = std::path::Path::new("/run/lock");
    let dir = if run_lock.is_dir() {
        run_lock.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let path = dir.join(LOCK_NAME);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(format!(
            "cannot lock {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(file)
}

impl SysctlGuard {
    fn enter() -> Result<SysctlGuard, String> {
        let mut users = SYSCTL_USERS.lock().unwrap_or_else(|e| e.into_inner());
        if users.count == 0 {
            let lock = lock_across_processes()?;
            let old = std::fs::read_to_string(SYSCTL)
                .map_err(|e| format!("cannot read {SYSCTL}: {e}"))?;
            if old.trim() != "0" {
                std::fs::write(SYSCTL, "0").map_err(|e| {
                    format!(
                        "unprivileged loads need {SYSCTL}=0 (it is {}): {e}",
                        old.trim()
                    )
                })?;
            }
            users.restore = old.trim().to_string();
            users.lock = Some(lock);
        }
        users.count += 1;
        Ok(SysctlGuard)
    }
}

impl Drop for SysctlGuard {
    fn drop(&mut self) {
        let mut users = SYSCTL_USERS.lock().unwrap_or_else(|e| e.into_inner());
        users.count -= 1;
        if users.count == 0 {
            if users.restore != "0" {
                let _ = std::fs::write(SYSCTL, &users.restore);
            }
            // Closing the file releases the lock for the next process.
            users.lock = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowered_thread_lacks_the_capabilities_and_the_caller_keeps_them() {
        fn effective() -> u64 {
            let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
            let hex = status
                .lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .unwrap()
                .trim();
            u64::from_str_radix(hex, 16).unwrap()
        }
        let before = effective();
        if before & (1 << bpfvet_isa::privileges::cap::BPF) == 0 {
            println!("SKIP: the test process lacks CAP_BPF");
            return;
        }
        let inside = run_with(Privileges::Bpf, effective).unwrap();
        assert_eq!(inside, 1 << bpfvet_isa::privileges::cap::BPF);
        assert_eq!(effective(), before);
    }
}
