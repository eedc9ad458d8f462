//! The kernel side of the fuzzer in a guest kernel under QEMU (the
//! crate's guest session): one guest per run, booted with this test
//! executable as init (`fuzz_guest_agent`), which loads each program the
//! host sends over the agent port into the guest's kernel and answers with
//! the verdict. bpfvet stays on the host, given the guest's build options
//! (`BPFVET_KERNEL_CONFIG`) and vmlinux BTF (`BPFVET_VMLINUX_BTF`); the
//! agent checks that its BTF is that file, so kfunc ids and attach targets
//! mean the same on both sides.
//!
//! Host side: `BPFVET_FUZZ_KERNEL=6.18` (a version, as `--backend
//! kernel=`), `BPFVET_FUZZ_GUEST_JIT=0` turns the guest's JIT off
//! (`net.core.bpf_jit_enable=0`), `BPFVET_CPU_MITIGATIONS=off` boots it
//! with `mitigations=off` (bpfvet reads the same variable), and the agent
//! loads at `BPFVET_FUZZ_PRIVILEGES` as the host side would.

use super::diff::Theirs;
use super::gen::GenProgram;
use bpfvet_isa::uapi::{AttachType, ProgType};
use bpfvet_isa::Insn;
use bpfvet_kernel::guest::{cpio::Cpio, frame, image, vm};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Duration;

pub const KERNEL_ENV: &str = "BPFVET_FUZZ_KERNEL";
pub const JIT_ENV: &str = "BPFVET_FUZZ_GUEST_JIT";
/// Set on the guest's command line: the test executable is the agent.
pub const AGENT_ENV: &str = "BPFVET_FUZZ_GUEST_AGENT";
const PRIVILEGES_ENV: &str = "BPFVET_FUZZ_PRIVILEGES";

const BOOT_PATIENCE: Duration = Duration::from_secs(300);
/// The kernel's 1M-insn limit under TCG takes minutes.
const PROGRAM_PATIENCE: Duration = Duration::from_secs(600);

/// FNV-1a of a file's bytes, to tell two BTF blobs apart.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// A program of an object as one request line: `prog TYPE ATTACH SECTION
/// SLEEPABLE FUNCS INSNS` (`-` for none; funcs `off:type_id,...`, the
/// func_info records; insns as hex of their 8-byte encodings). The agent
/// rebuilds the object of that one program with [`super::diff::object`].
pub fn encode(p: &bpfvet_object::Program) -> String {
    let attach = p
        .expected_attach_type
        .filter(|_| !p.section.is_empty())
        .map_or("-".to_string(), |a| a.0.to_string());
    let section = if p.section.is_empty() {
        "-"
    } else {
        &p.section
    };
    let funcs: Vec<String> = p
        .func_info
        .iter()
        .map(|f| format!("{}:{}", f.insn_off, f.type_id))
        .collect();
    let mut hex = String::with_capacity(p.insns.len() * 16);
    for i in &p.insns {
        for b in i.to_bytes() {
            hex.push_str(&format!("{b:02x}"));
        }
    }
    // A struct_ops member by its raw ids, with the names bpfvet reads.
    let struct_ops = p
        .struct_ops
        .as_ref()
        .and_then(|m| {
            let raw = m.raw?;
            Some(format!(
                " so:{}:{}:{}:{}",
                raw.type_id, raw.member_idx, m.type_name, m.member
            ))
        })
        .unwrap_or_default();
    format!(
        "prog {} {attach} {section} {} {} {hex}{struct_ops}\n",
        p.prog_type.0,
        sleep_and_flags(p),
        if funcs.is_empty() {
            "-".to_string()
        } else {
            funcs.join(",")
        },
    )
}

/// The request's sleepable field, with the program's other prog_flags
/// after a colon when it has any.
fn sleep_and_flags(p: &bpfvet_object::Program) -> String {
    match p.prog_flags {
        0 => u8::from(p.sleepable).to_string(),
        f => format!("{}:{f:#x}", u8::from(p.sleepable)),
    }
}

/// The struct_ops member of a request line's `so:` field.
fn decode_struct_ops(field: &str) -> Option<bpfvet_object::StructOpsMember> {
    let mut parts = field.strip_prefix("so:")?.split(':');
    let type_id = parts.next()?.parse().ok()?;
    let member_idx = parts.next()?.parse().ok()?;
    Some(bpfvet_object::StructOpsMember {
        map: String::new(),
        type_name: parts.next()?.to_string(),
        member: parts.next()?.to_string(),
        raw: Some(bpfvet_object::struct_ops::KernelMember {
            type_id,
            member_idx,
        }),
    })
}

/// The program of a request line (its section is leaked: the agent runs
/// until the guest powers off).
pub fn decode(line: &str) -> Option<GenProgram> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let (fields, struct_ops) = match f.len() {
        7 => (&f[..], None),
        8 => (&f[..7], Some(decode_struct_ops(f[7])?)),
        _ => return None,
    };
    let [tag, prog_type, attach, section, sleepable, funcs, hex] = fields[..] else {
        return None;
    };
    if tag != "prog" {
        return None;
    }
    let (sleepable, prog_flags) = match sleepable.split_once(':') {
        Some((s, f)) => (s, bpfvet_isa::uapi::parse_prog_flags(f).ok()?),
        None => (sleepable, 0),
    };
    let attach = match (attach, section) {
        ("-", _) | (_, "-") => None,
        (a, s) => Some((
            AttachType(a.parse().ok()?),
            &*Box::leak(s.to_string().into_boxed_str()),
        )),
    };
    let funcs = if funcs == "-" {
        Vec::new()
    } else {
        funcs
            .split(',')
            .map(|r| {
                let (o, t) = r.split_once(':')?;
                Some((o.parse().ok()?, t.parse().ok()?))
            })
            .collect::<Option<Vec<(usize, u32)>>>()?
    };
    if hex.is_empty() || hex.len() % 16 != 0 {
        return None;
    }
    let bytes = (0..hex.len() / 2)
        .map(|k| u8::from_str_radix(hex.get(2 * k..2 * k + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    let insns = bytes
        .chunks_exact(8)
        .map(|c| Some(Insn::from_bytes(c.try_into().ok()?)))
        .collect::<Option<Vec<Insn>>>()?;
    Some(GenProgram {
        prog_type: ProgType(prog_type.parse().ok()?),
        insns,
        sleepable: sleepable == "1",
        // func_info travels as records: an empty list stays empty.
        prog_btf: false,
        attach,
        funcs,
        struct_ops,
        // The request line carries none of these (see `theirs`).
        load: Default::default(),
        license: "GPL",
        prog_flags,
    })
}

/// The kernel's answer as a frame payload (one line).
fn theirs_payload(t: &Theirs) -> String {
    let one = |s: &str| s.replace(['\n', '\r'], " ");
    match t {
        Theirs::Accepted { insns } => {
            format!("accept {}", insns.map_or("-".into(), |n| n.to_string()))
        }
        Theirs::Rejected(e) => format!("reject {}", one(e)),
        Theirs::Refused(e) => format!("refused {}", one(e)),
    }
}

fn theirs_of_payload(p: &str) -> Theirs {
    let (kind, rest) = p.split_once(' ').unwrap_or((p, ""));
    match kind {
        "accept" => Theirs::Accepted {
            insns: rest.parse().ok(),
        },
        "reject" => Theirs::Rejected(rest.to_string()),
        _ => Theirs::Refused(rest.to_string()),
    }
}

/// The names of a BTF's functions and variables.
fn btf_symbols(btf: &bpfvet_object::btf::Btf) -> Vec<String> {
    use bpfvet_object::btf::Kind;
    btf.ids()
        .filter_map(|id| btf.type_by_id(id))
        .filter(|t| matches!(t.kind, Kind::Func | Kind::Var))
        .map(|t| btf.name(t).to_string())
        .filter(|n| !n.is_empty())
        .collect()
}

/// Writes the guest's symbol list as bpfvet reads kallsyms: every BTF
/// function and variable but the ones its kallsyms lacks.
fn write_kallsyms(btf: &[u8], missing: &str, path: &std::path::Path) -> Result<(), String> {
    let btf = bpfvet_object::btf::Btf::from_bytes(btf).map_err(|e| e.to_string())?;
    let missing: std::collections::HashSet<&str> = missing.split_whitespace().collect();
    let mut text = String::new();
    for name in btf_symbols(&btf) {
        if !missing.contains(name.as_str()) {
            text.push_str("0000000000000000 T ");
            text.push_str(&name);
            text.push('\n');
        }
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// A booted guest and what it takes to boot it again.
pub struct Guest {
    vm: vm::Vm,
    kernel: image::GuestKernel,
    initramfs: PathBuf,
    console: PathBuf,
    memory_mib: u64,
    env: Vec<String>,
    pub release: String,
    /// The guest's net.core.bpf_jit_enable as the agent read it.
    pub jit: String,
    /// Whether the guest's command line turned CPU mitigations off, as
    /// the agent read it (`off` or `on`).
    pub mitigations: String,
    pub boots: usize,
    /// The agent's list of BTF symbols its kallsyms lacks.
    nosyms: Option<String>,
}

impl Guest {
    /// The guest `BPFVET_FUZZ_KERNEL` names, booted; None when unset.
    pub fn from_env() -> Result<Option<Guest>, String> {
        let Ok(version) = std::env::var(KERNEL_ENV) else {
            return Ok(None);
        };
        if let Some(why) = vm::qemu_unavailable() {
            return Err(why);
        }
        let spec = image::KernelSpec::parse(&version)?;
        let kernel = image::resolve(&spec, &|m| eprintln!("{m}"))?;
        let btf_path = bpfvet_object::vmlinux_btf_path();
        if std::env::var_os(bpfvet_object::VMLINUX_ENV).is_none() {
            return Err(format!(
                "{} must name the guest's vmlinux BTF (batch.sh extracts it)",
                bpfvet_object::VMLINUX_ENV
            ));
        }
        let btf = std::fs::read(&btf_path).map_err(|e| format!("{}: {e}", btf_path.display()))?;
        let work = std::env::temp_dir().join(format!("bpfvet-fuzz-guest-{}", std::process::id()));
        std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
        let mut cpio = Cpio::new();
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let libs = vm::add_executable(&mut cpio, &exe, &work)?;
        let image = cpio.finish();
        let initramfs = work.join("initramfs.cpio");
        std::fs::write(&initramfs, &image).map_err(|e| e.to_string())?;
        let jit = std::env::var(JIT_ENV).unwrap_or_else(|_| "1".into());
        let env = vec![
            format!("LD_LIBRARY_PATH={}", libs.join(":")),
            format!("{AGENT_ENV}=1"),
            format!("{JIT_ENV}={jit}"),
            format!("BPFVET_FUZZ_GUEST_BTF={}:{:x}", btf.len(), fnv(&btf)),
            format!("{PRIVILEGES_ENV}={}", super::diff::fuzz_privileges()),
        ];
        let memory_mib = 1024 + 2 * (image.len() as u64).div_ceil(1 << 20);
        let console = work.join("console.log");
        let vm = Self::boot_vm(&kernel, &initramfs, &console, memory_mib, &env)?;
        let mut g = Guest {
            vm,
            kernel,
            initramfs,
            console,
            memory_mib,
            env,
            release: String::new(),
            jit: String::new(),
            mitigations: String::new(),
            boots: 0,
            nosyms: None,
        };
        g.hello()?;
        let want = if bpfvet_verifier::cpu_mitigations_off() {
            "off"
        } else {
            "on"
        };
        if g.mitigations != want {
            return Err(format!(
                "the guest's mitigations are {}, bpfvet is told {want}",
                g.mitigations
            ));
        }
        // bpfvet's kallsyms is the guest's (read at its first kfunc or
        // ksym, after this): kept next to the BTF copy's directory (which
        // must hold BTF only), for RESCORE runs too.
        let dir = btf_path.parent().and_then(std::path::Path::parent);
        if let (Some(missing), Some(dir)) = (g.nosyms.take(), dir) {
            let path = dir.join("kallsyms");
            write_kallsyms(&btf, &missing, &path)?;
            std::env::set_var(bpfvet_verifier::KALLSYMS_ENV, &path);
        }
        Ok(Some(g))
    }

    fn boot_vm(
        kernel: &image::GuestKernel,
        initramfs: &std::path::Path,
        console: &std::path::Path,
        memory_mib: u64,
        env: &[String],
    ) -> Result<vm::Vm, String> {
        vm::Vm::boot(&vm::BootSpec {
            vmlinuz: &kernel.vmlinuz,
            initramfs,
            memory_mib,
            kernel_args: if bpfvet_verifier::cpu_mitigations_off() {
                vec!["mitigations=off".into()]
            } else {
                Vec::new()
            },
            env: env.to_vec(),
            args: [
                "fuzz_guest_agent",
                "--ignored",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ]
            .map(String::from)
            .to_vec(),
            console_log: console,
        })
    }

    /// Waits for the agent's first frame: release, JIT setting, and
    /// whether its BTF is the one bpfvet reads.
    fn hello(&mut self) -> Result<(), String> {
        loop {
            match self.vm.next(BOOT_PATIENCE) {
                vm::Event::Frame(f) if f.kind == "hello" => {
                    let mut parts = f.payload.split_whitespace();
                    self.release = parts.next().unwrap_or("").to_string();
                    self.jit = parts.next().unwrap_or("").to_string();
                    self.mitigations = parts.next().unwrap_or("").to_string();
                    self.boots += 1;
                    return Ok(());
                }
                vm::Event::Frame(f) if f.kind == "nosyms" => self.nosyms = Some(f.payload),
                vm::Event::Frame(f) if f.kind == "fatal" => {
                    return Err(format!("the guest agent failed: {}", f.payload))
                }
                vm::Event::Frame(_) => {}
                vm::Event::KvmFailed => {
                    self.vm = Self::boot_vm(
                        &self.kernel,
                        &self.initramfs,
                        &self.console,
                        self.memory_mib,
                        &self.env,
                    )?;
                }
                _ => {
                    return Err(format!(
                        "kernel {} did not start the agent: {}",
                        self.kernel.label,
                        self.vm.last_words(15)
                    ))
                }
            }
        }
    }

    /// The guest kernel's verdict on `p`. A guest that dies on it is
    /// booted again; the program is then a refusal naming the death.
    pub fn theirs(&mut self, p: &bpfvet_object::Program) -> Theirs {
        // What a request line cannot carry would be lost on the way.
        if p.struct_ops.as_ref().is_some_and(|m| m.raw.is_none())
            || p.load != bpfvet_object::LoadAttrs::default()
        {
            return Theirs::Refused(
                "not sent to the guest: struct_ops members by name and load attributes have no request form"
                    .into(),
            );
        }
        if let Err(e) = self.vm.send(encode(p).as_bytes()) {
            return self.died(&format!("writing to the guest: {e}"));
        }
        loop {
            match self.vm.next(PROGRAM_PATIENCE) {
                vm::Event::Frame(f) if f.kind == "theirs" => return theirs_of_payload(&f.payload),
                vm::Event::Frame(_) => {}
                other => return self.died(&format!("{other:?}")),
            }
        }
    }

    fn died(&mut self, how: &str) -> Theirs {
        let words = self.vm.last_words(40);
        let why = words
            .lines()
            .find(|l| {
                ["Kernel panic", "BUG:", "Oops", "general protection"]
                    .iter()
                    .any(|k| l.contains(k))
            })
            .or(words.lines().last())
            .unwrap_or("")
            .trim()
            .to_string();
        eprintln!("guest died ({how}): {words}");
        match Self::boot_vm(
            &self.kernel,
            &self.initramfs,
            &self.console,
            self.memory_mib,
            &self.env,
        ) {
            Ok(vm) => {
                self.vm = vm;
                if let Err(e) = self.hello() {
                    eprintln!("guest did not come back: {e}");
                }
            }
            Err(e) => eprintln!("guest did not come back: {e}"),
        }
        Theirs::Refused(format!("the guest died ({how}): {why}"))
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        let _ = self.vm.send(b"quit\n");
        let _ = self.vm.next(Duration::from_secs(10));
        if let Some(dir) = self.initramfs.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The agent: the guest's init. Loads every program the host sends into
/// this kernel, answers with the verdict, powers off at `quit` or at the
/// end of its input.
pub fn agent() {
    let init = std::process::id() == 1;
    if init {
        bpfvet_kernel::guest::agent::mount_all();
    }
    let Some(port) = bpfvet_kernel::guest::agent::open_port() else {
        eprintln!("no agent port");
        bpfvet_kernel::guest::agent::power_off();
    };
    let mut out = match port.try_clone() {
        Ok(f) => f,
        Err(_) => bpfvet_kernel::guest::agent::power_off(),
    };
    let mut send = |kind: &str, payload: &str| {
        let _ = out.write_all(frame::encode(kind, payload).as_bytes());
        let _ = out.flush();
    };
    if std::env::var(JIT_ENV).is_ok_and(|v| v == "0") {
        let _ = std::fs::write("/proc/sys/net/core/bpf_jit_enable", "0\n");
    }
    let jit = std::fs::read_to_string("/proc/sys/net/core/bpf_jit_enable")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    // The host's bpfvet reads a copy of this kernel's BTF: it must be the same.
    let btf = std::fs::read(bpfvet_object::HOST_VMLINUX).unwrap_or_default();
    let mine = format!("{}:{:x}", btf.len(), fnv(&btf));
    let want = std::env::var("BPFVET_FUZZ_GUEST_BTF").unwrap_or_default();
    if mine != want {
        send(
            "fatal",
            &format!("the guest's vmlinux BTF ({mine}) is not the host's copy ({want})"),
        );
        bpfvet_kernel::guest::agent::power_off();
    }
    let kernel = match bpfvet_kernel::Kernel::open() {
        Ok(k) => super::oracle::Oracle::Host(k),
        Err(e) => {
            send("fatal", &format!("{e}"));
            bpfvet_kernel::guest::agent::power_off();
        }
    };
    // The functions and variables of this BTF kallsyms cannot find: the
    // host's bpfvet checks kfunc and ksym addresses against this kernel.
    let names = bpfvet_object::btf::Btf::from_bytes(&btf)
        .map(|b| btf_symbols(&b))
        .unwrap_or_default();
    let kallsyms: std::collections::HashSet<String> = std::fs::read_to_string("/proc/kallsyms")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect();
    let missing: Vec<String> = names
        .into_iter()
        .filter(|n| !kallsyms.contains(n))
        .collect();
    send("nosyms", &missing.join(" "));
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let mitigations = if cmdline.split_whitespace().any(|a| a == "mitigations=off") {
        "off"
    } else {
        "on"
    };
    send("hello", &format!("{release} {jit} {mitigations}"));
    let mut lines = std::io::BufReader::new(port);
    let mut line = String::new();
    loop {
        line.clear();
        match lines.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let line = line.trim();
        if line == "quit" {
            break;
        }
        if line.is_empty() {
            continue;
        }
        let theirs = match decode(line) {
            Some(p) => {
                let obj = super::diff::object(std::slice::from_ref(&p));
                super::diff::run_theirs(&kernel, &obj, 0)
            }
            None => Theirs::Refused("the agent could not read the request".into()),
        };
        send("theirs", &theirs_payload(&theirs));
    }
    if init {
        bpfvet_kernel::guest::agent::power_off();
    }
}
