//! `--backend kernel=VERSION`: the kernel backend run inside a guest
//! kernel under QEMU. The host writes an initramfs holding this very
//! executable (started by the guest kernel as init, in `guest-agent`
//! mode), the objects and a request; the agent loads every program with
//! the host kernel backend's code — so CO-RE resolves against the guest's
//! own BTF — and sends one row per program back over a serial port. A
//! guest that dies costs the program it was on (reported as lost, by
//! name); the next boot goes on after it.

use super::backend::{base_row, KernelBackend, RunOptions};
use super::row::Row;
use bpfvet_kernel::guest::{agent, cpio::Cpio, frame, image::GuestKernel, vm};
use bpfvet_object::Object;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One object of a batch, as the host read it.
pub struct BatchObject {
    pub name: String,
    pub path: PathBuf,
    pub obj: Object,
    pub progs: Vec<usize>,
}

/// What the agent is asked to do.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct Request {
    pub objects: Vec<RequestObject>,
    pub text_programs: bool,
    pub log_level: u32,
    pub log_size: Option<u32>,
    pub keep_log: bool,
    /// The guest kernel's build config in the initramfs, for `CONFIG_*`.
    pub kconfig: Option<String>,
    /// For tests of the recovery: the agent dies (ending the guest) when
    /// it reaches this program, on the first boot only.
    #[serde(default)]
    pub crash_at: Option<usize>,
}

/// Sets `Request::crash_at` (tests only).
const CRASH_AT_ENV: &str = "BPFVET_GUEST_CRASH_AT";

#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct RequestObject {
    /// Its path in the guest.
    pub path: String,
    /// As rows name it.
    pub name: String,
    pub progs: Vec<RequestProgram>,
}

/// A program and what the host's `--prog-type` rules and `--prog-flags`
/// made of it, so the guest need not know the rules.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct RequestProgram {
    pub index: usize,
    pub name: String,
    pub prog_type: u32,
    pub attach: Option<u32>,
    pub prog_flags: u32,
}

/// The agent's first frame.
#[derive(Debug, Serialize, Deserialize)]
pub struct Hello {
    pub release: String,
    /// Seconds since the guest kernel started.
    pub uptime: f64,
}

/// One result: `ordinal` counts programs over all objects of the request.
#[derive(Debug, Serialize, Deserialize)]
pub struct RowFrame {
    pub ordinal: usize,
    pub row: Row,
}

const OBJECTS_DIR: &str = "/objects";
const REQUEST_PATH: &str = "/request.json";
const KCONFIG_PATH: &str = "/kconfig";
/// How long a guest may take to boot to the agent's first frame (TCG
/// boots in seconds; this is for a loaded machine).
const BOOT_PATIENCE: Duration = Duration::from_secs(180);
/// How long one program may take: the kernel's own 1M-insn limit takes a
/// few seconds on the host, and TCG is tens of times slower.
const PROGRAM_PATIENCE: Duration = Duration::from_secs(600);
/// Guest memory besides the initramfs (Cilium's preallocated maps need
/// about this much).
const BASE_MEMORY_MIB: u64 = 1024;

/// Timings of one guest run, for the user and the benchmarks.
#[derive(Debug, Default)]
pub struct GuestStats {
    pub boots: usize,
    pub boot_time: Duration,
    pub verify_time: Duration,
    pub lost: Vec<String>,
    pub release: String,
    pub accel: &'static str,
}

pub fn build_request(batch: &[BatchObject], opts: &RunOptions, text_programs: bool) -> Request {
    Request {
        objects: batch
            .iter()
            .enumerate()
            .map(|(i, b)| RequestObject {
                path: format!("{OBJECTS_DIR}/{i}.o"),
                name: b.name.clone(),
                progs: b
                    .progs
                    .iter()
                    .map(|&p| {
                        let prog = &b.obj.programs[p];
                        RequestProgram {
                            index: p,
                            name: prog.name.clone(),
                            prog_type: prog.prog_type.0,
                            attach: prog.expected_attach_type.map(|a| a.0),
                            prog_flags: prog.prog_flags,
                        }
                    })
                    .collect(),
            })
            .collect(),
        text_programs,
        log_level: opts.log_level,
        log_size: opts.log_size,
        keep_log: opts.keep_log,
        kconfig: None,
        crash_at: std::env::var(CRASH_AT_ENV)
            .ok()
            .and_then(|v| v.parse().ok()),
    }
}

/// A row for a program the guest never reported.
fn lost_row(b: &BatchObject, idx: usize, label: &str, why: &str) -> Row {
    let mut row = base_row(&b.name, &b.obj, idx);
    row.set(super::fields::Stat::Verdict, 0);
    row.reason = Some(format!(
        "{}: lost: kernel {label} died while verifying it ({why})",
        super::row::REFUSED
    ));
    row
}

/// Verifies the batch in guests of `kernel`; one row per program in
/// batch order, like the host backend's.
pub fn run_batch(
    kernel: &GuestKernel,
    batch: &[BatchObject],
    opts: &RunOptions,
    text_programs: bool,
) -> anyhow::Result<(Vec<Row>, GuestStats)> {
    use anyhow::{anyhow, Context};
    let mut request = build_request(batch, opts, text_programs);
    let slots: Vec<(usize, usize)> = batch
        .iter()
        .enumerate()
        .flat_map(|(o, b)| b.progs.iter().map(move |&p| (o, p)))
        .collect();
    let mut rows: Vec<Option<Row>> = vec![None; slots.len()];
    let mut stats = GuestStats::default();
    if slots.is_empty() {
        return Ok((Vec::new(), stats));
    }
    let work = tempdir()?;
    let mut cpio = Cpio::new();
    let exe = std::env::current_exe().context("finding the bpfvet executable")?;
    let lib_dirs = vm::add_executable(&mut cpio, &exe, &work).map_err(|e| anyhow!(e))?;
    for (i, b) in batch.iter().enumerate() {
        let bytes =
            std::fs::read(&b.path).with_context(|| format!("reading {}", b.path.display()))?;
        cpio.file(&format!("{OBJECTS_DIR}/{i}.o"), 0o644, &bytes);
    }
    if let Some(config) = &kernel.config {
        if let Ok(bytes) = std::fs::read(config) {
            cpio.file(KCONFIG_PATH, 0o644, &bytes);
            request.kconfig = Some(KCONFIG_PATH.into());
        }
    }
    cpio.file(REQUEST_PATH, 0o644, &serde_json::to_vec(&request)?);
    let image = cpio.finish();
    let initramfs = work.join("initramfs.cpio");
    std::fs::write(&initramfs, &image).context("writing the initramfs")?;
    let console_log = work.join("console.log");
    // The initramfs is unpacked into guest memory next to its own copy.
    let memory_mib = BASE_MEMORY_MIB + 2 * (image.len() as u64).div_ceil(1 << 20);
    drop(image);

    let mut start = 0usize;
    // A guest that fails to boot once (an emulation hiccup) gets a second
    // chance; twice is an error.
    let mut retried_boot = false;
    while start < slots.len() {
        let spec = vm::BootSpec {
            vmlinuz: &kernel.vmlinuz,
            initramfs: &initramfs,
            memory_mib,
            // The guest runs as bpfvet is told the target kernel does.
            kernel_args: if bpfvet_verifier::cpu_mitigations_off() {
                vec!["mitigations=off".into()]
            } else {
                Vec::new()
            },
            env: vec![format!("LD_LIBRARY_PATH={}", lib_dirs.join(":"))],
            args: vec![
                "guest-agent".into(),
                REQUEST_PATH.into(),
                "--start".into(),
                start.to_string(),
            ],
            console_log: &console_log,
        };
        let mut guest = vm::Vm::boot(&spec).map_err(|e| anyhow!(e))?;
        stats.boots += 1;
        stats.accel = guest.accel;
        match guest.next(BOOT_PATIENCE) {
            vm::Event::Frame(f) if f.kind == "hello" => {
                let hello: Hello = serde_json::from_str(&f.payload)?;
                stats.boot_time += guest.started.elapsed();
                stats.release = hello.release;
            }
            vm::Event::KvmFailed if stats.release.is_empty() => {
                eprintln!(
                    "bpfvet: kernel {}: KVM cannot run it here; using QEMU's emulator (TCG)",
                    kernel.label
                );
                stats.boots -= 1;
                continue;
            }
            other if !retried_boot => {
                let why = panic_line(&guest.last_words(60));
                eprintln!(
                    "bpfvet: kernel {} did not start the agent ({}: {why}); booting again",
                    kernel.label,
                    describe(&other)
                );
                retried_boot = true;
                stats.boots -= 1;
                continue;
            }
            other => {
                let words = guest.last_words(15);
                return Err(anyhow!(
                    "kernel {} did not start the agent ({}): {words}",
                    kernel.label,
                    describe(&other)
                ));
            }
        }
        let verifying = Instant::now();
        let mut next = start;
        let ended = loop {
            match guest.next(PROGRAM_PATIENCE) {
                vm::Event::Frame(f) if f.kind == "row" => {
                    let r: RowFrame =
                        serde_json::from_str(&f.payload).context("reading a row from the guest")?;
                    if r.ordinal < rows.len() {
                        rows[r.ordinal] = Some(r.row);
                        next = r.ordinal + 1;
                    }
                }
                vm::Event::Frame(f) if f.kind == "done" => break None,
                vm::Event::Frame(f) if f.kind == "fatal" => {
                    let words = guest.last_words(5);
                    return Err(anyhow!(
                        "the agent in kernel {} failed: {}\n{words}",
                        kernel.label,
                        f.payload
                    ));
                }
                vm::Event::Frame(_) => {}
                other => break Some(other),
            }
        };
        stats.verify_time += verifying.elapsed();
        match ended {
            None => break,
            Some(event) => {
                if next >= slots.len() {
                    break;
                }
                let words = guest.last_words(60);
                let last = panic_line(&words);
                let (o, p) = slots[next];
                let b = &batch[o];
                let why = format!("{}: {last}", describe(&event));
                eprintln!(
                    "bpfvet: kernel {}: {}/{} lost: {why}",
                    kernel.label, b.name, b.obj.programs[p].name
                );
                stats
                    .lost
                    .push(format!("{}/{}", b.name, b.obj.programs[p].name));
                rows[next] = Some(lost_row(b, p, &kernel.label, &why));
                start = next + 1;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    let rows = rows
        .into_iter()
        .zip(&slots)
        .map(|(r, &(o, p))| {
            r.unwrap_or_else(|| {
                lost_row(
                    &batch[o],
                    p,
                    &kernel.label,
                    "the guest ended without reporting it",
                )
            })
        })
        .collect();
    Ok((rows, stats))
}

/// The console line that says why a guest died: the panic's reason, an
/// oops or OOM line, else the last line.
fn panic_line(console: &str) -> String {
    let lines: Vec<&str> = console.lines().collect();
    let strip = |l: &str| {
        // "[   12.345678] text" -> "text"
        l.split_once("] ")
            .filter(|(t, _)| t.trim_start().starts_with('['))
            .map_or(l, |(_, rest)| rest)
            .trim()
            .to_string()
    };
    for key in [
        "Kernel panic",
        "BUG:",
        "Out of memory",
        "Oops",
        "general protection",
    ] {
        if let Some(l) = lines.iter().find(|l| l.contains(key)) {
            return strip(l);
        }
    }
    lines.last().map_or_else(String::new, |l| strip(l))
}

fn describe(e: &vm::Event) -> &'static str {
    match e {
        vm::Event::Exited => "the guest stopped",
        vm::Event::Silent => "the guest went silent",
        vm::Event::KvmFailed => "KVM failed to run the guest",
        vm::Event::Frame(_) => "unexpected message",
    }
}

fn tempdir() -> anyhow::Result<PathBuf> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "bpfvet-guest-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// `bpfvet guest-agent`: init of the guest (not for users).
#[derive(clap::Args)]
pub struct AgentArgs {
    request: PathBuf,
    /// Programs (counted over the whole request) already reported.
    #[arg(long, default_value_t = 0)]
    start: usize,
}

/// Where frames go: the agent port, else stdout (when run by hand).
struct Channel(Box<dyn std::io::Write>);

impl Channel {
    fn open() -> Channel {
        match agent::open_port() {
            Some(f) => Channel(Box::new(f)),
            None => Channel(Box::new(std::io::stdout())),
        }
    }

    fn send(&mut self, kind: &str, payload: &impl Serialize) {
        let text = serde_json::to_string(payload).unwrap_or_default();
        let _ = self.0.write_all(frame::encode(kind, &text).as_bytes());
        let _ = self.0.flush();
    }
}

/// `6.1.0-50-amd64` -> KERNEL_VERSION(6, 1, 0), as `.kconfig`'s
/// LINUX_KERNEL_VERSION sees it (sublevel capped at 255, as the kernel's).
pub fn version_code(release: &str) -> Option<u32> {
    let mut nums = release
        .split(|c: char| !c.is_ascii_digit())
        .take(3)
        .map(|s| s.parse::<u32>().ok());
    let major = nums.next()??;
    let minor = nums.next()??;
    let patch = nums.next().flatten().unwrap_or(0).min(255);
    Some((major << 16) | (minor.min(255) << 8) | patch)
}

fn uname_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

pub fn agent(args: AgentArgs) -> anyhow::Result<std::process::ExitCode> {
    let init = std::process::id() == 1;
    if init {
        agent::mount_all();
    }
    let mut out = Channel::open();
    let result = agent_run(&args, &mut out);
    if let Err(e) = &result {
        out.send("fatal", &crate::error_text(e));
    }
    if init {
        agent::power_off();
    }
    result.map(|_| std::process::ExitCode::SUCCESS)
}

fn agent_run(args: &AgentArgs, out: &mut Channel) -> anyhow::Result<()> {
    use anyhow::Context;
    let request: Request = serde_json::from_slice(
        &std::fs::read(&args.request)
            .with_context(|| format!("reading {}", args.request.display()))?,
    )?;
    let release = uname_release();
    let uptime = std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    out.send(
        "hello",
        &Hello {
            release: release.clone(),
            uptime,
        },
    );
    let mut load_opts = bpfvet_object::LoadOptions {
        text_programs: request.text_programs,
        kconfig: request.kconfig.as_ref().map(PathBuf::from),
        ..Default::default()
    };
    if let Some(v) = version_code(&release) {
        load_opts.kernel_version = v;
    }
    load_opts
        .preload_target()
        .context("reading the guest's /sys/kernel/btf/vmlinux")?;
    let mut kernel = KernelBackend::open(false, true)?;
    let opts = RunOptions {
        log_level: request.log_level,
        log_size: request.log_size,
        keep_log: request.keep_log,
        quiet: true,
        ..Default::default()
    };
    let mut ordinal = 0usize;
    for o in &request.objects {
        let first = ordinal;
        ordinal += o.progs.len();
        if ordinal <= args.start {
            continue;
        }
        let obj = std::fs::read(&o.path)
            .map_err(|e| e.to_string())
            .and_then(|bytes| {
                Object::parse(&bytes, Path::new(&o.name), &load_opts)
                    .map_err(|e| crate::error_text(&e.into()))
            });
        let mut wanted = Vec::new();
        let mut obj = match obj {
            Ok(obj) => obj,
            Err(why) => {
                for (k, p) in o.progs.iter().enumerate() {
                    let n = first + k;
                    if n >= args.start {
                        let mut row = Row::new(&o.name, &p.name);
                        row.set(super::fields::Stat::Verdict, 0);
                        row.reason = Some(format!("refused: the guest could not read it: {why}"));
                        out.send("row", &RowFrame { ordinal: n, row });
                    }
                }
                continue;
            }
        };
        for (k, p) in o.progs.iter().enumerate() {
            let n = first + k;
            if n < args.start {
                continue;
            }
            match obj.programs.get_mut(p.index).filter(|q| q.name == p.name) {
                Some(prog) => {
                    prog.prog_type = bpfvet_isa::uapi::ProgType(p.prog_type);
                    prog.expected_attach_type = p.attach.map(bpfvet_isa::uapi::AttachType);
                    prog.prog_flags = p.prog_flags;
                    wanted.push((n, p.index));
                }
                None => {
                    let mut row = Row::new(&o.name, &p.name);
                    row.set(super::fields::Stat::Verdict, 0);
                    row.reason =
                        Some("refused: the guest read another program list from the object".into());
                    out.send("row", &RowFrame { ordinal: n, row });
                }
            }
        }
        let indexes: Vec<usize> = wanted.iter().map(|&(_, i)| i).collect();
        let mut ordinals = wanted.iter().map(|&(n, _)| n);
        let crash_at = request.crash_at.filter(|_| args.start == 0);
        if let Some(&(n, _)) = wanted.first() {
            if crash_at == Some(n) {
                std::process::abort();
            }
        }
        kernel.verify_each(&o.name, &obj, &indexes, &opts, |row| {
            let n = ordinals.next().unwrap_or(usize::MAX);
            out.send("row", &RowFrame { ordinal: n, row });
            // The next program's load is where a test asks the guest to die.
            if let Some(&(next, _)) = wanted.iter().find(|&&(m, _)| m > n) {
                if crash_at == Some(next) {
                    std::process::abort();
                }
            }
        });
    }
    out.send("done", &());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_panic_reason_is_the_line_kept() {
        let console = "[    1.0] Run /bpfvet as init process\n\
                       [    9.1] BUG: kernel NULL pointer dereference, address: 0000000000000008\n\
                       [    9.2] RIP: 0010:foo+0x1/0x2\n\
                       [    9.3] Kernel panic - not syncing: Fatal exception\n\
                       [    9.4] Kernel Offset: 0x1 from 0xffffffff81000000\n";
        assert_eq!(
            panic_line(console),
            "Kernel panic - not syncing: Fatal exception"
        );
        assert_eq!(panic_line("[ 1.0] a\n[ 2.0] powered off\n"), "powered off");
        assert_eq!(panic_line(""), "");
    }

    #[test]
    fn version_codes() {
        assert_eq!(version_code("6.1.0-50-amd64"), Some(0x060100));
        assert_eq!(version_code("6.12.117+deb13-amd64"), Some(0x060c75));
        assert_eq!(version_code("6.1.300"), Some(0x0601ff));
        assert_eq!(version_code("6.18"), Some(0x061200));
        assert_eq!(version_code("x"), None);
    }

    #[test]
    fn a_request_survives_the_trip() {
        let obj = Object::single_program("p", bpfvet_isa::uapi::ProgType::XDP, vec![]);
        let batch = [BatchObject {
            name: "a.o".into(),
            path: "/tmp/a.o".into(),
            obj,
            progs: vec![0],
        }];
        let opts = RunOptions {
            log_level: 2,
            ..Default::default()
        };
        let r = build_request(&batch, &opts, true);
        assert_eq!(r.objects[0].path, "/objects/0.o");
        assert_eq!(r.objects[0].progs[0].name, "p");
        assert_eq!(
            r.objects[0].progs[0].prog_type,
            bpfvet_isa::uapi::ProgType::XDP.0
        );
        let back: Request = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        // A row keeps its values, reason and rejection through a frame.
        let mut row = Row::new("a.o", "p");
        row.set(super::super::fields::Stat::TotalInsns, 42);
        row.rejection = Some(super::super::row::Rejection {
            error: "R0 !read_ok".into(),
            ..Default::default()
        });
        let line = frame::encode(
            "row",
            &serde_json::to_string(&RowFrame {
                ordinal: 3,
                row: row.clone(),
            })
            .unwrap(),
        );
        let f = frame::Reader::new().push(line.as_bytes());
        let back: RowFrame = serde_json::from_str(&f[0].payload).unwrap();
        assert_eq!((back.ordinal, back.row), (3, row));
    }
}
