//! The verifier log against the host kernel's (the oracle): every program
//! of `tests/progs` is loaded into the kernel at log level 2 (and 1) and
//! verified by bpfvet at the same level, and the two logs are compared line
//! by line after a small normalisation of what cannot match:
//!
//! - the kernel's `verification time N usec` line is dropped (the kernel
//!   prints it because the stats level is always on; a duration never
//!   matches);
//! - kernel addresses (`0xffff` followed by 12 hex digits: the `struct
//!   bpf_map` or map value address of a map LD_IMM64) become `<kaddr>` in
//!   both logs (bpfvet prints an address of the same width, so the `;`
//!   column of the line is unaffected).
//!
//! The test prints, per program, whether the logs are identical and else the
//! first differing line, plus the totals (programs identical, kernel lines
//! matched by a longest common subsequence); it fails when a program of
//! [`MUST_MATCH`] (level 2) or [`MUST_MATCH_LEVEL1`] differs. Programs whose level-2 log is too large to be worth
//! comparing in a test are listed in [`TOO_LARGE`].
//!
//! `BPFVET_LOG2_DUMP=<dir>` writes both normalised logs of every program
//! there (`<prog>.l<level>.kernel` / `<prog>.l<level>.bpfvet`).
//!
//! Needs root and a working bpf(2); prints `SKIP:` otherwise.

use bpfvet_kernel::{Kernel, LoadOptions};
use bpfvet_object::Object;
use bpfvet_verifier::{verify, Options};
use std::path::{Path, PathBuf};

/// Programs whose normalised logs must be identical to the kernel's.
const MUST_MATCH: &[&str] = &[
    "flow_dissector/dissect",
    "global_data/xdp_global_data",
    "reject_bad_return/cgroup_bad_return",
    "reject_ctx_bad_offset/xdp_bad_ctx_offset",
    "reject_helper_prog_type/sock_store_bytes",
    "reject_map_value_var_oob/xdp_map_value_oob",
    "reject_null_map_value/xdp_null_deref",
    "reject_null_ptr_arith/xdp_null_ptr_arith",
    "reject_pkt_oob/xdp_no_bounds_check",
    "reject_ringbuf_leak/xdp_ringbuf_leak",
    "reject_rodata_write/xdp_rodata_write",
    "reject_uninit_reg/xdp_uninit_reg",
    "reject_use_after_submit/xdp_use_after_submit",
    "syscall_rawtp/syscall_sum",
    "tail_call/handle_ipv4",
    "tail_call/handle_ipv6",
    "tail_call/xdp_dispatch",
];

/// Programs whose level-1 logs must be identical to the kernel's.
const MUST_MATCH_LEVEL1: &[&str] = &[
    "atomics/xdp_atomics",
    "callbacks/xdp_arm_timer",
    "callbacks/xdp_for_each",
    "cgroup_skb/cgroup_egress_filter",
    "flow_dissector/dissect",
    "global_data/xdp_global_data",
    "helpers_net/xdp_trim_padding",
    "helpers_net/tc_socket_lookup",
    "helpers_trace/kprobe_sample",
    "loops/xdp_for_loop",
    "loops/xdp_tlv_walk",
    "loops/xdp_collatz",
    "map_in_map/xdp_map_in_map",
    "maps_misc/xdp_map_types",
    "reject_bad_return/cgroup_bad_return",
    "reject_callback_stack/xdp_callback_stack",
    "reject_combined_stack/xdp_combined_stack",
    "reject_ctx_bad_offset/xdp_bad_ctx_offset",
    "reject_helper_prog_type/sock_store_bytes",
    "reject_infinite_loop/xdp_infinite_loop",
    "reject_map_value_var_oob/xdp_map_value_oob",
    "reject_null_map_value/xdp_null_deref",
    "reject_null_ptr_arith/xdp_null_ptr_arith",
    "reject_pkt_oob/xdp_no_bounds_check",
    "reject_ringbuf_leak/xdp_ringbuf_leak",
    "reject_rodata_write/xdp_rodata_write",
    "reject_timer_callback_return/xdp_timer_callback_return",
    "reject_uninit_reg/xdp_uninit_reg",
    "reject_use_after_submit/xdp_use_after_submit",
    "ringbuf/xdp_ringbuf_sample",
    "socket_filter/sock_count_ipproto",
    "socket_filter/sock_ldabs_ssh",
    "spin_lock/tc_spin_lock",
    "stress_states/state_stress",
    "syscall_rawtp/syscall_sum",
    "syscall_rawtp/rawtp_sys_enter",
    "tail_call/handle_ipv4",
    "tail_call/handle_ipv6",
    "tail_call/xdp_dispatch",
    "tc_classifier/tc_classify",
    "timer_rearm/xdp_timer_rearm",
    "tracing/kprobe_openat2",
    "tracing/kretprobe_openat2",
    "tracing/tp_sys_enter",
    "tracing/tp_btf_sched_switch",
    "uninit_stack_root/xdp_uninit_stack",
    "v4_insns/xdp_signed_ops",
    "v4_insns/xdp_long_jump",
    "xdp_parser/xdp_vlan_pop",
];

/// Programs left out: their level-2 logs run to hundreds of megabytes
/// (hundreds of thousands of processed instructions, each with its state).
const TOO_LARGE: &[&str] = &["stress_backtrack", "reject_too_complex"];

/// The kernel keeps the tail of a log that outgrows its buffer (64 MiB
/// here); such a log no longer starts with the `func#0` line and is not
/// compared.
fn kernel_log_complete(log: &str) -> bool {
    log.starts_with("func#0 @0\n")
}

fn progs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs")
}

fn normalise(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| !(l.starts_with("verification time ") && l.ends_with(" usec")))
        .map(mask_kernel_addresses)
        .collect()
}

/// `(18) r1 = 0xffff888103f1c000` -> `(18) r1 = <kaddr>`: only the value
/// of an LD_IMM64 (opcode 0x18) that looks like a kernel address.
fn mask_kernel_addresses(line: &str) -> String {
    let Some(at) = line.find("(18) r") else {
        return line.to_string();
    };
    let Some(eq) = line[at..].find(" = 0xffff").map(|i| at + i + 3) else {
        return line.to_string();
    };
    let hex = line[eq + 2..]
        .bytes()
        .take_while(|b| b.is_ascii_hexdigit())
        .count();
    if hex != 16 {
        return line.to_string();
    }
    format!("{}<kaddr>{}", &line[..eq], &line[eq + 18..])
}

/// Length of a longest common subsequence of `a` and `b` (Myers' greedy
/// walk), or None when the logs differ in more than `max_d` lines.
fn common_lines(a: &[String], b: &[String], max_d: usize) -> Option<usize> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let off = (max_d + 1) as isize;
    let mut v = vec![0isize; 2 * max_d + 3];
    for d in 0..=max_d as isize {
        let mut k = -d;
        while k <= d {
            let mut x =
                if k == -d || (k != d && v[(off + k - 1) as usize] < v[(off + k + 1) as usize]) {
                    v[(off + k + 1) as usize]
                } else {
                    v[(off + k - 1) as usize] + 1
                };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[(off + k) as usize] = x;
            if x >= n && y >= m {
                return Some(((n + m - d) / 2) as usize);
            }
            k += 2;
        }
    }
    None
}

struct Compared {
    name: String,
    kernel_lines: usize,
    common: Option<usize>,
    first_diff: Option<(usize, String, String)>,
}

#[test]
fn level2_logs_match_host_kernel() {
    compare_logs(2, MUST_MATCH);
}

/// Level 1 (the path to an error; only the figures for an accepted
/// program) goes through the same printing and is compared the same way.
#[test]
fn level1_logs_match_host_kernel() {
    compare_logs(1, MUST_MATCH_LEVEL1);
}

fn compare_logs(level: u32, must_match: &[&str]) {
    let kernel = match Kernel::open() {
        Ok(k) => k,
        Err(e) => {
            println!("SKIP: {e}");
            return;
        }
    };
    let dump = std::env::var_os("BPFVET_LOG2_DUMP").map(PathBuf::from);
    let mut files: Vec<PathBuf> = std::fs::read_dir(progs_dir())
        .expect("tests/progs")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".bpf.o"))
        .collect();
    files.sort();
    let mut results = Vec::new();
    for path in &files {
        let obj = Object::from_file(path, &Default::default())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let stem = path
            .file_name()
            .and_then(|s| s.to_str())
            .and_then(|s| s.strip_suffix(".bpf.o"))
            .expect("a .bpf.o name")
            .to_string();
        if TOO_LARGE.contains(&stem.as_str()) {
            println!("{stem}: left out (level-2 log too large)");
            continue;
        }
        let session = kernel.open_object(&obj);
        let load = LoadOptions {
            log_level: level,
            log_size: 64 << 20,
            log_size_cap: 64 << 20,
            ..Default::default()
        };
        for i in 0..obj.programs.len() {
            let name = format!("{stem}/{}", obj.programs[i].name);
            let Some(report) = session.load_program(i, &load) else {
                continue;
            };
            if report.log.is_empty() {
                println!("{name}: no kernel log ({:?})", report.verdict);
                continue;
            }
            if level == 2 && !kernel_log_complete(&report.log) {
                println!("{name}: left out (kernel log over 64 MiB, truncated)");
                continue;
            }
            let ours = verify(
                &obj,
                i,
                &Options {
                    log_level: level,
                    ..Options::default()
                },
            );
            let k = normalise(&report.log);
            let b = normalise(&ours.log);
            if let Some(dir) = &dump {
                let file = format!("{}.l{level}", name.replace('/', "__"));
                std::fs::create_dir_all(dir).expect("dump dir");
                std::fs::write(dir.join(format!("{file}.kernel")), k.join("\n") + "\n")
                    .expect("write dump");
                std::fs::write(dir.join(format!("{file}.bpfvet")), b.join("\n") + "\n")
                    .expect("write dump");
            }
            let first_diff = (0..k.len().max(b.len()))
                .find(|&j| k.get(j) != b.get(j))
                .map(|j| {
                    let show = |v: &[String]| v.get(j).cloned().unwrap_or("<end of log>".into());
                    (j + 1, show(&k), show(&b))
                });
            let common = if first_diff.is_none() {
                Some(k.len())
            } else {
                common_lines(&k, &b, 4000)
            };
            results.push(Compared {
                name,
                kernel_lines: k.len(),
                common,
                first_diff,
            });
        }
    }
    let mut identical = 0;
    let (mut lines_total, mut lines_common) = (0, 0);
    for r in &results {
        lines_total += r.kernel_lines;
        lines_common += r.common.unwrap_or(0);
        match &r.first_diff {
            None => {
                identical += 1;
                println!("{}: identical ({} lines)", r.name, r.kernel_lines);
            }
            Some((line, k, b)) => println!(
                "{}: {} of {} kernel lines in common; first difference at line {line}:\n  kernel: {k}\n  bpfvet: {b}",
                r.name,
                r.common.map_or("?".to_string(), |c| c.to_string()),
                r.kernel_lines
            ),
        }
    }
    println!(
        "level {level}: identical logs: {identical} of {} programs; kernel lines in common: {lines_common} of {lines_total}",
        results.len()
    );
    let failed: Vec<&str> = results
        .iter()
        .filter(|r| r.first_diff.is_some() && must_match.contains(&r.name.as_str()))
        .map(|r| r.name.as_str())
        .collect();
    let missing: Vec<&&str> = must_match
        .iter()
        .filter(|m| !results.iter().any(|r| r.name == **m))
        .collect();
    assert!(missing.is_empty(), "programs not compared: {missing:?}");
    assert!(
        failed.is_empty(),
        "level-{level} logs differ from the kernel's: {failed:?}"
    );
}
