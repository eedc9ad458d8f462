//! Booting a kernel under QEMU with an initramfs, and reading what the
//! guest's agent writes to its second serial port (the first one is the
//! kernel console, kept in a file for when the guest dies).

use super::cpio::Cpio;
use super::frame::{Frame, Reader};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The guest's device the agent writes its frames to (the second 16550
/// UART, built into every Debian kernel).
pub const AGENT_PORT: &str = "/dev/ttyS1";
/// Where the executable sits in the initramfs; the kernel runs it as init.
pub const AGENT_PATH: &str = "/bpfvet";

/// Adds `exe` at [`AGENT_PATH`] with the shared libraries it needs (as
/// `ldd` lists them, at the same paths); `scratch` is a directory for a
/// temporary copy. Returns the directories of those
/// libraries, for the guest's LD_LIBRARY_PATH.
pub fn add_executable(cpio: &mut Cpio, exe: &Path, scratch: &Path) -> Result<Vec<String>, String> {
    // Without its debug sections the executable is a quarter of the size,
    // and the guest unpacks it several seconds faster under TCG.
    let stripped = scratch.join("agent");
    let data = match Command::new("strip")
        .arg("--strip-debug")
        .arg("-o")
        .arg(&stripped)
        .arg(exe)
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => std::fs::read(&stripped),
        _ => std::fs::read(exe),
    }
    .map_err(|e| format!("{}: {e}", exe.display()))?;
    let _ = std::fs::remove_file(&stripped);
    cpio.file(AGENT_PATH, 0o755, &data);
    let out = Command::new("ldd")
        .arg(exe)
        .output()
        .map_err(|e| format!("ldd: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut dirs = Vec::new();
    // A static executable has none ("not a dynamic executable").
    for path in ldd_paths(&text) {
        let bytes = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
        cpio.file(&path, 0o755, &bytes);
        if let Some((dir, _)) = path.rsplit_once('/') {
            if !dir.is_empty() && !dirs.iter().any(|d| d == dir) {
                dirs.push(dir.to_string());
            }
        }
    }
    Ok(dirs)
}

/// The absolute paths in `ldd` output: `libc.so.6 => /lib/.../libc.so.6
/// (0x...)` and the loader's own line `/lib64/ld-linux-x86-64.so.2 (0x...)`.
pub fn ldd_paths(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = match l.split_once("=>") {
                Some((_, right)) => right.trim(),
                None => l,
            };
            let path = path.split_whitespace().next()?;
            path.starts_with('/').then(|| path.to_string())
        })
        .collect()
}

/// How to start a guest.
pub struct BootSpec<'a> {
    pub vmlinuz: &'a Path,
    pub initramfs: &'a Path,
    pub memory_mib: u64,
    /// Kernel parameters (`mitigations=off`), before init's environment.
    pub kernel_args: Vec<String>,
    /// Environment of init (`NAME=value`, no spaces).
    pub env: Vec<String>,
    /// Arguments of init after its name (no spaces).
    pub args: Vec<String>,
    /// Where the kernel console goes.
    pub console_log: &'a Path,
}

/// What waiting on a guest gave.
#[derive(Debug)]
pub enum Event {
    Frame(Frame),
    /// The guest is gone (powered off, panicked, QEMU failed).
    Exited,
    /// Nothing came in the time allowed.
    Silent,
    /// KVM could not run the guest; boots from now on use the emulator.
    KvmFailed,
}

/// A running QEMU; killed when dropped.
pub struct Vm {
    child: Child,
    /// What the guest reads from the agent port.
    input: Option<std::process::ChildStdin>,
    /// Serial bytes; None when QEMU reported a KVM failure.
    chunks: Receiver<Option<Vec<u8>>>,
    errors: std::sync::Arc<std::sync::Mutex<String>>,
    reader: Reader,
    queued: std::collections::VecDeque<Frame>,
    console_log: PathBuf,
    pub started: Instant,
    pub accel: &'static str,
}

/// Set once KVM failed to run a guest here (nested KVM can be broken):
/// later boots use the emulator.
static KVM_BROKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// QEMU's words for a guest KVM cannot run.
const KVM_FAILURES: [&str; 3] = ["KVM internal error", "emulation failure", "kvm run failed"];

/// KVM when this process can open /dev/kvm and it has not failed, else
/// QEMU's emulator (TCG); `BPFVET_QEMU_ACCEL=tcg` forces the emulator.
fn accelerator() -> &'static str {
    if std::env::var("BPFVET_QEMU_ACCEL").is_ok_and(|v| v == "tcg")
        || KVM_BROKEN.load(std::sync::atomic::Ordering::Relaxed)
    {
        return "tcg";
    }
    if kvm_known_broken() {
        return "tcg";
    }
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
    {
        Ok(_) => "kvm",
        Err(_) => "tcg",
    }
}

/// A file in the cache naming the host kernel release on which KVM failed
/// to run a guest, so that later runs there go straight to TCG.
fn kvm_marker() -> Option<(PathBuf, String)> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    Some((
        super::image::cache_root()?.join("kvm-broken"),
        release.trim().to_string(),
    ))
}

fn kvm_known_broken() -> bool {
    kvm_marker().is_some_and(|(path, release)| {
        std::fs::read_to_string(path).is_ok_and(|t| t.trim() == release)
    })
}

fn remember_kvm_broken() {
    KVM_BROKEN.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some((path, release)) = kvm_marker() {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::write(path, format!("{release}\n"));
    }
}

/// The host's nr_cpu_ids: one past the highest CPU of
/// /sys/devices/system/cpu/possible (`0-1`, `0-3,8-11`), 1 when unknown,
/// at most 255 (QEMU's q35 limit without an IOMMU).
pub fn host_possible_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|t| possible_cpus(&t))
        .unwrap_or(1)
        .clamp(1, 255)
}

fn possible_cpus(list: &str) -> Option<usize> {
    list.trim()
        .split(',')
        .filter_map(|r| r.rsplit('-').next()?.trim().parse::<usize>().ok())
        .max()
        .map(|m| m + 1)
}

pub const QEMU: &str = "qemu-system-x86_64";

/// Why QEMU cannot run here, or None.
pub fn qemu_unavailable() -> Option<String> {
    match Command::new(QEMU)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => None,
        Ok(s) => Some(format!("{QEMU} --version failed ({s})")),
        Err(e) => Some(format!(
            "{QEMU} not found ({e}); install Debian's qemu-system-x86"
        )),
    }
}

impl Vm {
    pub fn boot(spec: &BootSpec) -> Result<Vm, String> {
        let accel = accelerator();
        let mut cmdline = vec![
            "console=ttyS0".to_string(),
            // A panic ends the guest at once; -no-reboot then ends QEMU.
            "panic=-1".into(),
            "oops=panic".into(),
            "quiet".into(),
            format!("rdinit={AGENT_PATH}"),
        ];
        cmdline.extend(spec.kernel_args.iter().cloned());
        cmdline.extend(spec.env.iter().cloned());
        cmdline.push("--".into());
        cmdline.extend(spec.args.iter().cloned());
        let mut cmd = Command::new(QEMU);
        cmd.args(["-nodefaults", "-no-reboot", "-display", "none"])
            .args(["-machine", "q35"])
            // One host thread runs all vCPUs under TCG: the kernel patches
            // its own code at boot (static calls, alternatives), which
            // multi-threaded TCG with several vCPUs can catch half done.
            .args([
                "-accel",
                if accel == "kvm" {
                    "kvm"
                } else {
                    "tcg,thread=single"
                },
            ])
            .args(["-cpu", if accel == "kvm" { "host" } else { "max" }])
            // As many CPUs as the host: the verifier bounds
            // bpf_get_smp_processor_id() by nr_cpu_ids, which changes what
            // it explores (hotpluggable CPUs, maxcpus, do not count there).
            .args(["-smp", &host_possible_cpus().to_string()])
            .args(["-m", &format!("{}M", spec.memory_mib)])
            .arg("-kernel")
            .arg(spec.vmlinuz)
            .arg("-initrd")
            .arg(spec.initramfs)
            .args(["-append", &cmdline.join(" ")])
            .arg("-serial")
            .arg(format!("file:{}", spec.console_log.display()))
            .args(["-serial", "stdio"])
            // The agent port's input: requests of an interactive agent
            // (Vm::send); other agents never read it.
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: prctl is async-signal-safe. A killed bpfvet takes its
            // guest with it.
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
        }
        let mut child = cmd.spawn().map_err(|e| format!("starting {QEMU}: {e}"))?;
        let input = child.stdin.take();
        let mut stdout = child.stdout.take().ok_or("no QEMU stdout")?;
        let mut stderr = child.stderr.take().ok_or("no QEMU stderr")?;
        let (tx, chunks) = mpsc::channel();
        let errors = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (err_tx, err_text) = (tx.clone(), errors.clone());
        // QEMU keeps running a guest KVM failed on: its message ends the wait.
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 4096];
            while let Ok(n @ 1..) = stderr.read(&mut buf) {
                let mut text = err_text.lock().unwrap_or_else(|e| e.into_inner());
                text.push_str(&String::from_utf8_lossy(&buf[..n]));
                if KVM_FAILURES.iter().any(|f| text.contains(f)) {
                    let _ = err_tx.send(None);
                }
            }
        });
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match stdout.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.send(Some(buf[..n].to_vec())).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Ok(Vm {
            child,
            input,
            chunks,
            errors,
            reader: Reader::new(),
            queued: Default::default(),
            console_log: spec.console_log.to_path_buf(),
            started: Instant::now(),
            accel,
        })
    }

    /// The next frame, or why there is none within `patience`.
    pub fn next(&mut self, patience: Duration) -> Event {
        let deadline = Instant::now() + patience;
        loop {
            if let Some(f) = self.queued.pop_front() {
                return Event::Frame(f);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.chunks.recv_timeout(left) {
                Ok(Some(bytes)) => self.queued.extend(self.reader.push(&bytes)),
                Ok(None) => {
                    remember_kvm_broken();
                    return Event::KvmFailed;
                }
                Err(RecvTimeoutError::Timeout) => return Event::Silent,
                Err(RecvTimeoutError::Disconnected) => {
                    let _ = self.child.wait();
                    return Event::Exited;
                }
            }
        }
    }

    /// Writes `bytes` to the guest's agent port (QEMU feeds them to the
    /// guest as the port can take them).
    pub fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        use std::io::Write;
        let input = self
            .input
            .as_mut()
            .ok_or_else(|| std::io::Error::other("the guest's input is closed"))?;
        input.write_all(bytes)?;
        input.flush()
    }

    /// The last lines of the kernel console and QEMU's own errors: why a
    /// guest died.
    pub fn last_words(&mut self, lines: usize) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut text = std::fs::read_to_string(&self.console_log).unwrap_or_default();
        text.push_str(&self.errors.lock().unwrap_or_else(|e| e.into_inner()));
        let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl Drop for Vm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::ldd_paths;

    #[test]
    fn possible_cpu_lists() {
        use super::possible_cpus;
        assert_eq!(possible_cpus("0-1\n"), Some(2));
        assert_eq!(possible_cpus("0"), Some(1));
        assert_eq!(possible_cpus("0-3,8-11"), Some(12));
        assert_eq!(possible_cpus(""), None);
    }

    #[test]
    fn ldd_lines_give_the_library_paths() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f01)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f02)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f03)\n";
        assert_eq!(
            ldd_paths(text),
            [
                "/lib/x86_64-linux-gnu/libgcc_s.so.1",
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2"
            ]
        );
        assert!(ldd_paths("\tnot a dynamic executable\n").is_empty());
        assert!(ldd_paths("\tlibfoo.so => not found\n").is_empty());
    }
}
