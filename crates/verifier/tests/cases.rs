//! Verifier behaviour tests written as small programs in the kernel-log
//! syntax (tests/cases/*.case), one behaviour per file. Directives at the
//! top say what must happen:
//!
//! ```text
//! # prog_type: xdp                 (libbpf's name; default socket_filter)
//! # verdict: reject                (accept | reject)
//! # error: R2 !read_ok             (for reject: the kernel's error line)
//! # processed: 3                   (optional: processed insns)
//! # states: 0                      (optional: total_states)
//! # map: array 4 48                (a map: type, key and value size, 16
//!                                   entries; `map_idx[N]` is the Nth)
//! ```
//!
//! Each case is checked against bpfvet and, when the host kernel can load
//! programs (root and a working bpf(2)), replayed against the kernel too,
//! so every expectation is also checked against the oracle.

use bpfvet_isa::uapi::{MapType, ProgType};
use bpfvet_object::{MapDef, MapInit, MapOrigin, Object};
use bpfvet_verifier::{verify, Options, Verdict};
use std::path::PathBuf;

struct Case {
    name: String,
    prog_type: ProgType,
    accept: bool,
    error: Option<String>,
    processed: Option<u64>,
    states: Option<u64>,
    maps: Vec<MapDef>,
    text: String,
}

fn map_def(spec: &str) -> MapDef {
    let f: Vec<&str> = spec.split_whitespace().collect();
    let (ty, key, value) = match f[..] {
        [t, k, v] => (t, k, v),
        _ => panic!("map: expected `type key_size value_size`, got {spec:?}"),
    };
    MapDef {
        name: format!("map{}", ty),
        section: ".maps".into(),
        origin: MapOrigin::BtfMaps,
        map_type: MapType::from_name(ty).expect("known map type"),
        key_size: key.parse().expect("key size"),
        value_size: value.parse().expect("value size"),
        max_entries: 16,
        map_flags: 0,
        map_extra: 0,
        numa_node: 0,
        pinning: 0,
        btf_key_type_id: 0,
        btf_value_type_id: 0,
        inner: None,
        init: MapInit::None,
        frozen: false,
    }
}

fn parse(name: &str, src: &str) -> Case {
    let mut c = Case {
        name: name.to_string(),
        prog_type: ProgType::SOCKET_FILTER,
        accept: true,
        error: None,
        processed: None,
        states: None,
        maps: Vec::new(),
        text: String::new(),
    };
    for line in src.lines() {
        if let Some(d) = line.strip_prefix("# ") {
            if let Some((k, v)) = d.split_once(':') {
                let v = v.trim();
                match k.trim() {
                    "prog_type" => c.prog_type = ProgType::from_name(v).expect("known prog type"),
                    "verdict" => c.accept = v == "accept",
                    "error" => c.error = Some(v.to_string()),
                    "processed" => c.processed = Some(v.parse().expect("number")),
                    "states" => c.states = Some(v.parse().expect("number")),
                    "map" => c.maps.push(map_def(v)),
                    _ => {}
                }
                continue;
            }
        }
        c.text.push_str(line);
        c.text.push('\n');
    }
    c
}

fn object(c: &Case) -> Object {
    let insns =
        bpfvet_isa::asm::assemble_insns(&c.text).unwrap_or_else(|e| panic!("{}: {e}", c.name));
    let mut obj = Object::single_program(&c.name, c.prog_type, insns);
    obj.maps = c.maps.clone();
    obj
}

/// The kernel's verdict for a program with maps: the kernel backend creates
/// them and resolves `map_idx[N]`.
fn kernel_load_with_maps(obj: &Object) -> Option<(bool, String, Option<u64>, String)> {
    use bpfvet_kernel::{Kernel, LoadOptions, Verdict as KVerdict};
    let kernel = Kernel::open().ok()?;
    let session = kernel.open_object(obj);
    let opts = LoadOptions {
        log_level: 1,
        ..LoadOptions::default()
    };
    let rep = session.load_program(0, &opts)?;
    let ok = match rep.verdict {
        KVerdict::Accepted => true,
        KVerdict::Rejected => false,
        KVerdict::Refused(r) => panic!("{}: kernel refused: {r}", obj.programs[0].name),
    };
    let last = last_error_line(&rep.log);
    Some((ok, last, rep.processed_insns(), rep.log))
}

/// The log's last line that is not statistics.
fn last_error_line(text: &str) -> String {
    text.lines()
        .rfind(|l| {
            !l.is_empty()
                && !l.starts_with("processed ")
                && !l.starts_with("verification time")
                && !l.starts_with("stack depth")
        })
        .unwrap_or("")
        .to_string()
}

/// What the host kernel says: (accepted, last log line, processed insns, log).
fn kernel_load(obj: &Object) -> Option<(bool, String, Option<u64>, String)> {
    #[repr(C)]
    #[derive(Default)]
    struct LoadAttr {
        prog_type: u32,
        insn_cnt: u32,
        insns: u64,
        license: u64,
        log_level: u32,
        log_size: u32,
        log_buf: u64,
        kern_version: u32,
        prog_flags: u32,
        pad: [u64; 16],
    }
    let p = &obj.programs[0];
    let bytes = bpfvet_isa::insns_to_bytes(&p.insns);
    let mut log = vec![0u8; 1 << 20];
    let license = b"GPL\0";
    let attr = LoadAttr {
        prog_type: p.prog_type.0,
        insn_cnt: p.insns.len() as u32,
        insns: bytes.as_ptr() as u64,
        license: license.as_ptr() as u64,
        log_level: 1 | 4,
        log_size: log.len() as u32,
        log_buf: log.as_mut_ptr() as u64,
        ..Default::default()
    };
    // SAFETY: BPF_PROG_LOAD (5) reads `attr` and the buffers it points to,
    // all alive for the call; the kernel writes at most log_size bytes.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            5,
            &attr as *const LoadAttr,
            std::mem::size_of::<LoadAttr>(),
        )
    };
    let errno = std::io::Error::last_os_error().raw_os_error();
    if fd >= 0 {
        // SAFETY: fd was just returned by the kernel and is ours to close.
        unsafe { libc::close(fd as i32) };
    } else if matches!(errno, Some(libc::EPERM) | Some(libc::ENOSYS)) {
        return None;
    }
    let end = log.iter().position(|b| *b == 0).unwrap_or(0);
    let text = String::from_utf8_lossy(&log[..end]).into_owned();
    let processed = text
        .lines()
        .find_map(|l| l.strip_prefix("processed "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok());
    let last = last_error_line(&text);
    Some((fd >= 0, last, processed, text))
}

#[test]
fn cases() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("cases dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "case"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let mut failures = Vec::new();
    let mut kernel_checked = 0;
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let c = parse(&name, &std::fs::read_to_string(f).unwrap());
        let obj = object(&c);
        let out = verify(&obj, 0, &Options::default());
        match (&out.verdict, c.accept) {
            (Verdict::Accepted, true) => {}
            (Verdict::Rejected { error, .. }, false) => {
                if let Some(want) = &c.error {
                    if error != want {
                        failures.push(format!("{name}: error {error:?}, expected {want:?}"));
                    }
                }
            }
            (v, _) => failures.push(format!(
                "{name}: verdict {v:?}, expected accept={}",
                c.accept
            )),
        }
        if let Some(n) = c.processed {
            if out.stats.processed_insns != n {
                failures.push(format!(
                    "{name}: processed {} expected {n}",
                    out.stats.processed_insns
                ));
            }
        }
        if let Some(n) = c.states {
            if out.stats.total_states != n {
                failures.push(format!(
                    "{name}: states {} expected {n}",
                    out.stats.total_states
                ));
            }
        }
        // The same expectations against the oracle.
        let kernel = if obj.maps.is_empty() {
            kernel_load(&obj)
        } else {
            kernel_load_with_maps(&obj)
        };
        if let Some((ok, last, processed, log)) = kernel {
            kernel_checked += 1;
            if ok != c.accept {
                failures.push(format!("{name}: KERNEL verdict accept={ok} ({last})"));
            }
            // The error is the log's last line, except where the kernel
            // prints states after it (infinite loops): then it is a line.
            if let (false, Some(want)) = (ok, &c.error) {
                if &last != want && !log.lines().any(|l| l == want) {
                    failures.push(format!("{name}: KERNEL error {last:?}, expected {want:?}"));
                }
            }
            if let (Some(n), Some(k)) = (c.processed, processed) {
                if n != k {
                    failures.push(format!("{name}: KERNEL processed {k}, expected {n}"));
                }
            }
        }
    }
    if kernel_checked == 0 {
        println!("SKIP: host kernel replay (needs root and a working bpf(2) syscall)");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
