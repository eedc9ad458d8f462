//! What an agent running as a guest's init needs: the file systems the
//! kernel backend and libbpf look at, its serial port in raw mode, and a
//! clean power-off. Shared by `bpfvet guest-agent` and the fuzzer's guest
//! agent.

use std::fs::File;

/// Mounts proc, sysfs, devtmpfs, bpffs, debugfs, tracefs and cgroup2 at
/// their usual places (errors ignored: an agent reports what fails later).
#[cfg(target_os = "linux")]
pub fn mount_all() {
    use std::ffi::CString;
    let mounts = [
        ("proc", "/proc", "proc"),
        ("sysfs", "/sys", "sysfs"),
        ("devtmpfs", "/dev", "devtmpfs"),
        ("bpf", "/sys/fs/bpf", "bpf"),
        ("debugfs", "/sys/kernel/debug", "debugfs"),
        ("tracefs", "/sys/kernel/tracing", "tracefs"),
        ("cgroup2", "/sys/fs/cgroup", "cgroup2"),
    ];
    for (src, target, fstype) in mounts {
        let _ = std::fs::create_dir_all(target);
        let (Ok(s), Ok(t), Ok(f)) = (
            CString::new(src),
            CString::new(target),
            CString::new(fstype),
        ) else {
            continue;
        };
        // SAFETY: NUL-terminated strings that outlive the call.
        unsafe {
            libc::mount(s.as_ptr(), t.as_ptr(), f.as_ptr(), 0, std::ptr::null());
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub fn mount_all() {}

/// Syncs and powers the guest off (QEMU then exits); outside a guest's
/// init, exits.
pub fn power_off() -> ! {
    #[cfg(target_os = "linux")]
    // SAFETY: sync and reboot take no pointers.
    unsafe {
        libc::sync();
        libc::reboot(libc::RB_POWER_OFF);
    }
    std::process::exit(0)
}

/// The agent port ([`super::vm::AGENT_PORT`]) opened for reading and
/// writing, in raw mode (no echo, no line editing, no output processing);
/// None when it cannot be opened (run by hand, outside a guest).
pub fn open_port() -> Option<File> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(super::vm::AGENT_PORT)
        .ok()?;
    raw_mode(&f);
    Some(f)
}

fn raw_mode(f: &File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a termios read and written back on an open fd.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(f.as_raw_fd(), &mut t) == 0 {
                libc::cfmakeraw(&mut t);
                libc::cfsetospeed(&mut t, libc::B115200);
                libc::tcsetattr(f.as_raw_fd(), libc::TCSANOW, &t);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = f;
}
