//! The host kernel as oracle: load hand-assembled programs with log level 2
//! and compare every `N: (xx) ...` line of its log with our disassembly, and
//! compare the kernel's rejection message for bad encodings with ours.
//! Needs root and a working bpf(2); prints `SKIP:` otherwise.

use bpfvet_isa::asm::assemble_insns;
use bpfvet_isa::disasm::{write_insn, NoSymbols, Symbols};
use bpfvet_isa::*;
use bpfvet_kernel::oracle;
use bpfvet_kernel::sys::{Errno, Fd};
use std::collections::BTreeMap;

const LOG_SIZE: usize = 1 << 22;

fn array_map() -> Result<Fd, Errno> {
    oracle::array_map(4, 64, 1)
}

/// Loads a socket filter with log level 2; returns the log either way.
fn load(insns: &[Insn], fd_array: &[i32]) -> (Result<Fd, Errno>, String) {
    let mut p = oracle::RawProgram::new(uapi::ProgType::SOCKET_FILTER.0, insns);
    p.log_level = 2;
    p.log_size = LOG_SIZE;
    p.fd_array = fd_array;
    let v = oracle::load(&p);
    (v.result, v.log)
}

/// None (after printing SKIP) unless we are root with a working bpf(2).
fn kernel() -> Option<()> {
    match oracle::unavailable() {
        None => Some(()),
        Some(why) => {
            println!("SKIP: {why}");
            None
        }
    }
}

/// The instruction lines of a verifier log, keyed by pc.
fn log_insns(log: &str) -> BTreeMap<usize, Vec<(u8, String)>> {
    let mut out: BTreeMap<usize, Vec<(u8, String)>> = BTreeMap::new();
    for l in log.lines().filter_map(disasm::parse_log_line) {
        out.entry(l.pc)
            .or_default()
            .push((l.code, l.text.to_string()));
    }
    out
}

/// Resolved LD_IMM64 values as read from the kernel's own log, so that the
/// rest of each line is still compared exactly.
struct FromLog<'a>(&'a str);

impl Symbols for FromLog<'_> {
    fn ld_imm64_value(&self, _: Ld64Kind, _: i32, _: i32) -> Option<u64> {
        u64::from_str_radix(self.0.rsplit("= 0x").next()?, 16).ok()
    }
}

/// Checks every instruction of `insns` against the kernel's log lines;
/// returns the kernel values printed for pseudo LD_IMM64s, by pc.
fn compare(name: &str, insns: &[Insn], log: &str) -> BTreeMap<usize, u64> {
    let program = decode_program(insns).expect("test programs are valid");
    let seen = log_insns(log);
    let mut pseudo = BTreeMap::new();
    for l in &program {
        let lines = seen.get(&l.pc).unwrap_or_else(|| {
            panic!(
                "{name}: the kernel log has no line for insn {} ({})\n{log}",
                l.pc, l.insn
            )
        });
        for (code, kernel_text) in lines {
            assert_eq!(*code, l.insn.code(), "{name}: opcode of insn {}", l.pc);
            let mut ours = String::new();
            let pseudo_ld =
                matches!(l.insn, Instruction::LdImm64 { kind, .. } if kind != Ld64Kind::Imm);
            if pseudo_ld {
                write_insn(&mut ours, &l.insn, &FromLog(kernel_text)).unwrap();
                if let Some(v) = FromLog(kernel_text).ld_imm64_value(Ld64Kind::Imm, 0, 0) {
                    // func loads keep their relative offset until after the walk.
                    if let Instruction::LdImm64 {
                        kind: Ld64Kind::Func,
                        imm,
                        next_imm,
                        ..
                    } = l.insn
                    {
                        assert_eq!(
                            v,
                            disasm::ld_imm64_value(imm, next_imm),
                            "{name}: insn {}",
                            l.pc
                        );
                    }
                    pseudo.insert(l.pc, v);
                }
            } else {
                write_insn(&mut ours, &l.insn, &NoSymbols).unwrap();
            }
            assert_eq!(&ours, kernel_text, "{name}: insn {}", l.pc);
        }
    }
    pseudo
}

/// BTF ids from the host's vmlinux via bpftool, when it is installed.
fn vmlinux_btf_id(kind: &str, name: &str) -> Option<i32> {
    let out = std::process::Command::new("bpftool")
        .args([
            "btf",
            "dump",
            "file",
            "/sys/kernel/btf/vmlinux",
            "format",
            "raw",
        ])
        .output()
        .ok()?;
    let needle = format!("] {kind} '{name}'");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains(&needle))?;
    line.strip_prefix('[')?.split(']').next()?.parse().ok()
}

const ALU: &str = "
    r1 = 1
    w2 = -7
    r3 = r1
    w4 = w2
    r1 += r2
    r1 -= 3
    w1 *= w2
    w1 /= 5
    r1 s/= r3
    w1 s%= -3
    r1 %= r2
    r1 |= 0x10
    r1 &= -256
    r1 <<= 63
    w1 >>= w2
    r1 s>>= 7
    w1 ^= 255
    r2 = (s8)r3
    r2 = (s16)r3
    r2 = (s32)r3
    w2 = (s8)w3
    w2 = (s16)w3
    r1 = -r1
    w1 = -w1
    r1 = be16 r1
    r1 = be32 r1
    r1 = be64 r1
    r1 = le16 r1
    r1 = le32 r1
    r1 = le64 r1
    r1 = bswap16 r1
    r1 = bswap32 r1
    r1 = bswap64 r1
    r5 = 0x123456789abcdef0
    r5 = 0xffffffff
    r5 = -1 ll
    r0 = 0
    exit
";

const MEMORY: &str = "
    r6 = r1
    *(u64 *)(r10 -8) = r1
    *(u32 *)(r10 -12) = r1
    *(u16 *)(r10 -14) = r1
    *(u8 *)(r10 -15) = r1
    *(u64 *)(r10 -24) = -1
    *(u32 *)(r10 -28) = 7
    *(u16 *)(r10 -30) = 8
    *(u8 *)(r10 -31) = 9
    r0 = *(u32 *)(r1 +0)
    r0 = *(u16 *)(r10 -14)
    r0 = *(u8 *)(r10 -15)
    r0 = *(u64 *)(r10 -8)
    r0 = *(s8 *)(r10 -15)
    r0 = *(s16 *)(r10 -14)
    r0 = *(s32 *)(r10 -12)
    lock *(u64 *)(r10 -8) += r1
    lock *(u32 *)(r10 -12) |= r1
    lock *(u64 *)(r10 -8) &= r1
    lock *(u32 *)(r10 -12) ^= r1
    r1 = atomic64_fetch_add((u64 *)(r10 -8), r1)
    r1 = atomic_fetch_and((u32 *)(r10 -12), r1)
    r1 = atomic64_fetch_or((u64 *)(r10 -8), r1)
    r1 = atomic_fetch_xor((u32 *)(r10 -12), r1)
    r1 = atomic64_xchg((u64 *)(r10 -8), r1)
    r1 = atomic_xchg((u32 *)(r10 -12), r1)
    r0 = atomic64_cmpxchg((u64 *)(r10 -8), r0, r1)
    r0 = atomic_cmpxchg((u32 *)(r10 -12), r0, r1)
    r2 = load_acquire((u8 *)(r10 -15))
    r2 = load_acquire((u16 *)(r10 -14))
    r2 = load_acquire((u32 *)(r10 -12))
    r2 = load_acquire((u64 *)(r10 -8))
    store_release((u8 *)(r10 -15), r2)
    store_release((u16 *)(r10 -14), r2)
    store_release((u32 *)(r10 -12), r2)
    store_release((u64 *)(r10 -8), r2)
    r0 = *(u8 *)skb[12]
    r0 = *(u16 *)skb[-4]
    r0 = *(u32 *)skb[r2 + 4]
    r0 = *(u8 *)skb[r2 + -1]
    r1 = addr_space_cast(r2, 0, 1)
    r1 = addr_space_cast(r2, 1, 0)
    r0 = 0
    exit
";

const JUMPS: &str = "
    r1 = 1
    r2 = 2
    if r1 == 0x10 goto pc+0
    if r1 != r2 goto pc+0
    if r1 > 0xffffffff goto pc+0
    if r1 >= r2 goto pc+0
    if r1 < 0x7 goto pc+0
    if r1 <= r2 goto pc+0
    if r1 s> 0x80000000 goto pc+0
    if r1 s>= r2 goto pc+0
    if r1 s< 0x1 goto pc+0
    if r1 s<= r2 goto pc+0
    if r1 & 0x3 goto pc+0
    if w1 == w2 goto pc+0
    if w1 != 0x5 goto pc+0
    if w1 > w2 goto pc+0
    if w1 >= 0x0 goto pc+0
    if w1 < w2 goto pc+0
    if w1 <= 0x9 goto pc+0
    if w1 s> w2 goto pc+0
    if w1 s>= 0xfffffffe goto pc+0
    if w1 s< w2 goto pc+0
    if w1 s<= 0x1 goto pc+0
    if w1 & w2 goto pc+0
    goto pc+0
    gotol pc+0
    may_goto pc+0
    if r1 > 0x3 goto pc+1
    goto pc+1
    r0 = 1
    if r1 > 0x4 goto pc+1
    gotol pc+1
    r0 = 2
    may_goto pc+1
    r0 = 3
    if w1 s< w2 goto pc-2
    call bpf_ktime_get_ns#5
    call bpf_get_prandom_u32#7
    call pc+4
    r2 = func[3]
    r0 = 0
    exit
    r0 = 0
    exit
";

#[test]
fn disassembly_matches_the_kernel_log() {
    let Some(()) = kernel() else { return };
    for (name, text) in [("alu", ALU), ("memory", MEMORY), ("jumps", JUMPS)] {
        let insns = assemble_insns(text).unwrap();
        let (_, log) = load(&insns, &[]);
        compare(name, &insns, &log);
    }
}

#[test]
fn map_and_btf_references_match_the_kernel_log() {
    let Some(()) = kernel() else { return };
    let map = array_map().unwrap();
    let fd = map.raw();
    let text = format!(
        "
        r1 = map_fd[{fd}]
        r2 = map_value[{fd}]+4
        r3 = map_value[{fd}]+20
        r4 = map_idx[0]
        r5 = map_idx_value[0]+8
        r0 = 0
        exit
    "
    );
    let insns = assemble_insns(&text).unwrap();
    let (_, log) = load(&insns, &[fd]);
    let values = compare("maps", &insns, &log);
    // Map loads print the map's address; value loads the value's address
    // plus the offset; fd and fd_array index name the same map.
    assert_eq!(values.len(), 5, "{log}");
    assert_eq!(values[&0], values[&6]);
    assert_eq!(values[&2] - 4, values[&4] - 20);
    assert_eq!(values[&2] - 4, values[&8] - 8);
    assert_ne!(values[&0], 0, "root sees pointers");

    let Some(kfunc) = vmlinux_btf_id("FUNC", "bpf_rcu_read_lock") else {
        println!("SKIP: bpftool not available, kfunc lines not checked");
        return;
    };
    struct Kfunc;
    impl Symbols for Kfunc {
        fn kfunc_name(&self, _: i32, _: i16) -> Option<&str> {
            Some("bpf_rcu_read_lock")
        }
    }
    let insns = assemble_insns(&format!("call kernel-function#{kfunc}\nr0 = 0\nexit\n")).unwrap();
    let (_, log) = load(&insns, &[]);
    let program = decode_program(&insns).unwrap();
    let mut line = String::new();
    disasm::write_log_line(&mut line, 0, &program[0].insn, &Kfunc).unwrap();
    assert_eq!(line, format!("0: (85) call bpf_rcu_read_lock#{kfunc}"));
    assert!(log.contains(&line), "{line} not in\n{log}");

    // Kernel variables need their address from kallsyms, which this kernel
    // may not export for data symbols.
    if let Some(var) = vmlinux_btf_id("VAR", "bpf_prog_active") {
        let insns = assemble_insns(&format!("r1 = btf_id[{var}]\nr0 = 0\nexit\n")).unwrap();
        let (_, log) = load(&insns, &[]);
        if log.contains("failed to find the address") {
            println!("SKIP: no kallsyms address for bpf_prog_active, btf_id load not checked");
        } else {
            let values = compare("ksym", &insns, &log);
            assert_ne!(values.get(&0), None, "{log}");
        }
    }
}

/// One bad instruction first, then a valid tail; the kernel's message must
/// be ours.
#[test]
fn rejection_messages_match_the_kernel() {
    let Some(()) = kernel() else { return };
    let i = Insn::new;
    let tail = [i(0xb7, 0, 0, 0, 0), i(0x95, 0, 0, 0, 0)];
    let cases: Vec<Vec<Insn>> = vec![
        vec![i(0x07, 1, 1, 0, 1)],
        vec![i(0x0f, 1, 2, 0, 1)],
        vec![i(0x07, 1, 0, 1, 1)],
        vec![i(0x37, 1, 0, 1, 0)],
        vec![i(0x37, 1, 0, 0, 0)],
        vec![i(0x67, 1, 0, 0, 64)],
        vec![i(0x64, 1, 0, 0, 32)],
        vec![i(0xc7, 1, 0, 0, -1)],
        vec![i(0x87, 1, 0, 0, 1)],
        vec![i(0x87, 1, 1, 0, 0)],
        vec![i(0xd4, 1, 0, 0, 8)],
        vec![i(0xd7, 1, 1, 0, 16)],
        vec![i(0xdf, 1, 0, 0, 16)],
        vec![i(0xb7, 1, 0, 8, 0)],
        vec![i(0xbf, 1, 2, 0, 1)],
        vec![i(0xbc, 1, 2, 32, 0)],
        vec![i(0xbf, 1, 2, 7, 0)],
        vec![i(0xbf, 1, 2, 1, 2)],
        vec![i(0x61, 0, 1, 0, 1)],
        vec![i(0x21, 0, 1, 0, 0)],
        vec![i(0x99, 0, 1, 0, 0)],
        vec![i(0x63, 10, 1, -8, 1)],
        vec![i(0x62, 10, 1, -8, 1)],
        vec![i(0xdb, 10, 1, -8, 2)],
        vec![i(0xdb, 10, 1, -8, -1)],
        vec![i(0xd3, 10, 1, -8, 0)],
        vec![i(0x85, 1, 0, 0, 5)],
        vec![i(0x85, 0, 3, 0, 5)],
        vec![i(0x85, 0, 0, 1, 5)],
        vec![i(0x05, 0, 0, 0, 1)],
        vec![i(0x06, 0, 0, 1, 0)],
        vec![i(0x05, 1, 0, 0, 0)],
        vec![i(0xb7, 0, 0, 0, 0), i(0x95, 0, 0, 0, 1)],
        vec![i(0xe5, 0, 1, 0, 0)],
        vec![i(0xe5, 0, 0, 0, 5)],
        vec![i(0x1d, 1, 2, 0, 1)],
        vec![i(0x15, 1, 1, 0, 1)],
        vec![i(0x30, 1, 0, 0, 1)],
        vec![i(0x30, 0, 1, 0, 1)],
        vec![i(0x40, 0, 1, 1, 1)],
        vec![i(0x18, 1, 0, 1, 1), i(0, 0, 0, 0, 0)],
        vec![i(0x18, 1, 0, 0, 1), i(0x18, 0, 0, 0, 0)],
        vec![i(0x18, 1, 7, 0, 1), i(0, 0, 0, 0, 0)],
        vec![i(0x18, 1, 1, 0, 1), i(0, 0, 0, 0, 1)],
        vec![i(0xb7, 11, 0, 0, 0)],
        vec![i(0xbf, 1, 12, 0, 0)],
        vec![i(0x61, 1, 11, 0, 0)],
        vec![i(0x07, 10, 0, 0, 1)],
        vec![i(0x61, 10, 1, 0, 0)],
        vec![i(0xdb, 10, 10, -8, 1)],
        vec![i(0x8c, 1, 0, 0, 0)],
        vec![i(0x86, 0, 0, 0, 0)],
        vec![i(0xf7, 1, 0, 0, 0)],
        vec![i(0x0d, 0, 1, 0, 0)],
        vec![i(0xe6, 0, 0, 0, 0)],
        vec![i(0x00, 0, 0, 0, 0)],
        vec![i(0x1a, 10, 0, 0, 0)],
        // Which check wins when several apply.
        vec![i(0x07, 1, 1, 0, 1), i(0xb7, 11, 0, 0, 0)],
        vec![i(0xb7, 11, 0, 0, 0), i(0x07, 1, 1, 0, 1)],
        vec![i(0x07, 1, 1, 0, 1), i(0x61, 0, 1, 0, 1)],
        vec![i(0xb7, 11, 0, 0, 0), i(0x8d, 0, 0, 0, 0)],
        vec![i(0x0f, 1, 11, 0, 1)],
        vec![i(0x07, 11, 1, 0, 1)],
        vec![i(0x15, 11, 1, 0, 1)],
        vec![i(0x85, 11, 0, 0, 5)],
        vec![i(0x62, 11, 1, 0, 1)],
        vec![i(0x18, 11, 0, 0, 1), i(0, 0, 0, 0, 0)],
        vec![i(0x18, 10, 0, 0, 1), i(0, 0, 0, 0, 0)],
        vec![i(0x61, 11, 1, 0, 1)],
        vec![i(0x30, 11, 0, 0, 1)],
        vec![i(0x87, 11, 0, 0, 1)],
        vec![i(0xdb, 11, 1, 0, 2)],
        vec![i(0x7b, 10, 11, -8, 0)],
        vec![i(0x37, 11, 0, 0, 0)],
        vec![i(0x37, 10, 0, 0, 0)],
    ];
    let mut mismatches = Vec::new();
    for mut prog in cases {
        let bad = prog.clone();
        if prog.last().map(|l| l.code) != Some(0x95) {
            prog.extend_from_slice(&tail);
        }
        let ours = decode_program(&prog).expect_err("each case is invalid");
        let (r, log) = load(&prog, &[]);
        assert!(r.is_err(), "kernel accepted {bad:?}");
        let lines: Vec<&str> = log.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("processed "))
            .unwrap_or(lines.len());
        let kernel_msg = lines[..at].last().copied().unwrap_or("");
        if kernel_msg != ours.kind.to_string() {
            mismatches.push(format!(
                "{bad:?}: kernel `{kernel_msg}`, ours `{}`",
                ours.kind
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// Messages that mean "this encoding is invalid" to the kernel; a valid
/// decode must never meet one of them.
const ENCODING_MESSAGES: &[&str] = &[
    "reserved fields",
    "unknown opcode",
    "is invalid",
    "bpf_ld_imm64 insn",
    "div by zero",
    "invalid shift",
    "invalid atomic",
    "may_goto imm",
    "frame pointer is read only",
    "addr_space_cast insn can only convert",
];

/// Random single instructions (known opcodes, fields biased towards the
/// values that matter) after every register is initialised: wherever we
/// reject, the kernel rejects with our message; wherever we accept, the
/// kernel's complaint (if any) is not about the encoding.
#[test]
fn random_encodings_agree_with_the_kernel() {
    let Some(()) = kernel() else { return };
    let codes: Vec<u8> = (0..=255u8).filter(|c| decode::opcode_known(*c)).collect();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    // Neutral values repeated so that many draws are valid.
    let dsts = [2u8, 2, 2, 3, 1, 10, 11];
    let srcs = [0u8, 0, 0, 2, 2, 1, 10, 12, 3];
    let offs = [0i16, 0, 0, 0, 1, 8, 16, 32, -8, 7];
    let imms = [
        0,
        0,
        0,
        1,
        8,
        16,
        32,
        64,
        -1,
        0x100,
        0x110,
        0xe1,
        0xf1,
        0x41,
        1 << 16,
        2,
    ];
    let mut prefix: Vec<Insn> = (0..10).map(|r| Insn::new(0xb7, r, 0, 0, 0)).collect();
    prefix[1] = Insn::new(0xbf, 1, 10, 0, 0); // r1 = fp, a pointer memory ops may use
    let tail = [Insn::new(0xb7, 0, 0, 0, 0), Insn::new(0x95, 0, 0, 0, 0)];
    let mut mismatches = Vec::new();
    let (mut rejected, mut accepted) = (0, 0);
    for _ in 0..4000 {
        let r = next();
        let code = codes[(r % codes.len() as u64) as usize];
        let pick = |n: u64, len: usize| ((r >> n) % len as u64) as usize;
        let mut insn = Insn::new(
            code,
            dsts[pick(8, dsts.len())],
            srcs[pick(12, srcs.len())],
            offs[pick(16, offs.len())],
            imms[pick(24, imms.len())],
        );
        // Every other draw keeps dst/src/off neutral, so imm alone decides.
        if r & 1 == 0 {
            insn.dst = 2;
            insn.src = if insn.code & 0x08 != 0 && matches!(insn.class(), 4..=7) {
                2
            } else {
                0
            };
            insn.off = 0;
        }
        // Keep the control-flow graph valid so the walk reaches the insn.
        if matches!(insn.class(), 5 | 6) {
            if insn.code == 0x06 {
                insn.imm = 0;
            } else {
                insn.off = 0;
            }
            if insn.code == 0x85 && (insn.src == 1 || insn.src == 2) {
                insn.src = 0;
            }
        }
        let mut prog = prefix.clone();
        prog.push(insn);
        if insn.is_ld_imm64() {
            prog.push(Insn::new(0, 0, 0, 0, [0, 1][pick(40, 2)]));
        }
        // An exit ends the program itself; code after it would be unreachable.
        if insn.code != 0x95 {
            prog.extend_from_slice(&tail);
        }
        let (res, log) = load(&prog, &[]);
        let lines: Vec<&str> = log.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("processed "))
            .unwrap_or(lines.len());
        let kernel_msg = if res.is_ok() {
            ""
        } else {
            lines[..at].last().copied().unwrap_or("")
        };
        match decode_program(&prog) {
            Err(e) => {
                rejected += 1;
                // Load-time context the decoder does not have comes first in
                // the kernel: resolving a pseudo LD_IMM64 reference (up-front
                // scan) and the arena check of addr_space_cast.
                let context_first = (insn.is_ld_imm64() && insn.src != 0)
                    || kernel_msg.contains("associated arena");
                if context_first && !ENCODING_MESSAGES.iter().any(|m| kernel_msg.contains(m)) {
                    continue;
                }
                if kernel_msg != e.kind.to_string() {
                    mismatches.push(format!(
                        "{insn:?}: kernel `{kernel_msg}`, ours `{}`",
                        e.kind
                    ));
                }
            }
            Ok(_) => {
                accepted += 1;
                if ENCODING_MESSAGES.iter().any(|m| kernel_msg.contains(m)) {
                    mismatches.push(format!("{insn:?}: kernel `{kernel_msg}`, ours: valid"));
                }
            }
        }
    }
    mismatches.sort();
    mismatches.dedup();
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    assert!(
        rejected > 1000 && accepted > 1000,
        "{rejected} rejected, {accepted} accepted"
    );
}

/// The kernel does not check `off` of `exit` and prints plain `exit`; the
/// decoder keeps the value (printed as the `exit@N` extension).
#[test]
fn exit_offset_is_not_checked_by_the_kernel() {
    let Some(()) = kernel() else { return };
    let insns = [Insn::new(0xb7, 0, 0, 0, 0), Insn::new(0x95, 0, 0, 60, 0)];
    let (res, log) = load(&insns, &[]);
    assert!(res.is_ok(), "{log}");
    assert!(log.lines().any(|l| l == "1: (95) exit"), "{log}");
    let program = decode_program(&insns).unwrap();
    assert_eq!(program[1].insn, Instruction::Exit { off: 60 });
    assert_eq!(program[1].insn.to_string(), "exit@60");
}

/// Kfunc names as the kernel printed them in the line being checked.
struct NamesFromLine<'a>(&'a str);

impl Symbols for NamesFromLine<'_> {
    fn kfunc_name(&self, _: i32, _: i16) -> Option<&str> {
        self.0.strip_prefix("call ")?.split('#').next()
    }
}

/// Real clang output: every instruction line the kernel prints while
/// loading the project's test programs (through bpftool, which asks for
/// log level 1|2|4) assembles, with its opcode, to one instruction that we
/// print back identically.
#[test]
fn project_programs_round_trip_through_the_kernel_log() {
    let Some(()) = kernel() else { return };
    let progs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs");
    let Ok(dir) = std::fs::read_dir(&progs) else {
        println!("SKIP: {} not found", progs.display());
        return;
    };
    if std::process::Command::new("bpftool")
        .arg("version")
        .output()
        .is_err()
    {
        println!("SKIP: bpftool not installed");
        return;
    }
    let pin = format!("/sys/fs/bpf/bpfvet-isa-test-{}", std::process::id());
    let log_path = std::env::temp_dir().join(format!("bpfvet-isa-test-{}.log", std::process::id()));
    let mut objects: Vec<_> = dir
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "o"))
        .collect();
    objects.sort();
    let (mut lines, mut problems) = (0, Vec::new());
    for obj in &objects {
        let log_file = std::fs::File::create(&log_path).unwrap();
        let mut child = std::process::Command::new("bpftool")
            .arg("-d")
            .args(["prog", "loadall"])
            .arg(obj)
            .arg(&pin)
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file)
            .spawn()
            .unwrap();
        // Programs that make the verifier work hard print logs of hundreds
        // of MB at level 2; what is printed in the first seconds suffices.
        let started = std::time::Instant::now();
        let mut cut = false;
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > std::time::Duration::from_secs(5) {
                let _ = child.kill();
                let _ = child.wait();
                println!("note: {} cut after 5 s", obj.display());
                cut = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = std::fs::remove_dir_all(&pin);
        let bytes = std::fs::read(&log_path).unwrap_or_default();
        let log = String::from_utf8_lossy(&bytes);
        // A killed writer may leave its last line unfinished.
        let log = if cut {
            log.rsplit_once('\n').map_or("", |(done, _)| done)
        } else {
            &log
        };
        for l in log.lines().filter_map(disasm::parse_log_line) {
            lines += 1;
            let text = format!("({:02x}) {}", l.code, l.text);
            let mut ours = String::new();
            match asm::assemble(&text) {
                Ok(p) if p.len() == 1 => {
                    write_insn(&mut ours, &p[0], &NamesFromLine(l.text)).unwrap();
                }
                Ok(_) => ours = "several instructions".into(),
                Err(e) => ours = e.to_string(),
            }
            if ours != l.text {
                problems.push(format!("{}: `{}` -> `{ours}`", obj.display(), l.text));
            }
        }
    }
    let _ = std::fs::remove_file(&log_path);
    problems.dedup();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        lines > 1000,
        "only {lines} instruction lines in the logs of {objects:?}"
    );
}
