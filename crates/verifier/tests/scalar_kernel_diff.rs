//! Differential test against the host kernel's verifier (Linux 6.18, the
//! oracle): random straight-line programs of ALU operations and conditional
//! jumps on r6..r9 are simulated with bpfvet's scalar tracking while they
//! are generated, then loaded with log level 2; every register state the
//! kernel prints (after each instruction, and on each taken edge) must be
//! the one bpfvet prints, and both must agree on which edges are dead.
//!
//! Needs root and a working bpf(2); prints `SKIP:` otherwise.

use bpfvet_isa::uapi::ProgType;
use bpfvet_isa::Insn;
use bpfvet_kernel::oracle;
use bpfvet_verifier::scalar::{
    is_branch_taken, set_min_max, set_min_max_same, sync_linked, write_reg_scalar, AluOp, EndianOp,
    JmpOp, Link, Scalar, ScalarLogInfo,
};
use std::collections::HashMap;

/// Loads a socket filter with log level 2; returns (loaded, log).
fn kernel_load(insns: &[Insn]) -> Result<(bool, String), String> {
    let mut p = oracle::RawProgram::new(ProgType::SOCKET_FILTER.0, insns);
    p.log_level = 2;
    p.log_size = 4 << 20;
    let v = oracle::load(&p);
    match v.errno() {
        Some(e) if v.log.is_empty() => Err(format!("bpf(BPF_PROG_LOAD) failed: {e}")),
        _ => Ok((v.accepted(), v.log)),
    }
}

fn kernel_available() -> Result<(), String> {
    oracle::unavailable().map_or(Ok(()), Err)
}

/// xorshift64*: deterministic, dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn imm(&mut self) -> i32 {
        match self.below(9) {
            0 => self.below(16) as i32,
            1 => [0xff, 0xffff, 0xf0, 0x7f, 0xff00, 0x7fff_ffff][self.below(6) as usize],
            2 => -(self.below(300) as i32),
            3 => 1 << self.below(31),
            4 => (self.next() as i32) >> self.below(31),
            5 => i32::MIN,
            6 => self.below(300) as i32,
            7 => -1,
            _ => self.next() as i32,
        }
    }
}

fn log_str(s: &Scalar) -> String {
    let mut out = String::new();
    write_reg_scalar(&mut out, s, ScalarLogInfo::default()).unwrap();
    out
}

fn render(regs: &[Scalar; 4], links: &[Link; 4], with_ids: bool) -> [String; 4] {
    [0, 1, 2, 3].map(|k| {
        if !with_ids {
            return log_str(&regs[k]);
        }
        let info = ScalarLogInfo {
            precise: false,
            id: links[k].id,
            linked_off: links[k].log_off(),
        };
        let mut out = String::new();
        write_reg_scalar(&mut out, &regs[k], info).unwrap();
        out
    })
}

/// The kernel's rendering without the precision mark (precision is not
/// modelled here) and, unless ids are modelled, without ids.
fn normalize(val: &str, keep_ids: bool) -> String {
    let v = val.strip_prefix('P').unwrap_or(val);
    if keep_ids {
        return v.to_string();
    }
    if let Some(start) = v.find("(id=") {
        let rest = &v[start + 4..];
        let cut = rest.find([',', ')']).unwrap_or(rest.len());
        let tail = &rest[cut..];
        let tail = tail.strip_prefix(',').unwrap_or(tail);
        return format!("{}({}", &v[..start], tail);
    }
    v.to_string()
}

/// Renumbers `id=N` by first appearance across `vals`, so two renderings
/// with the same link structure compare equal whatever ids were issued.
fn canon_ids(vals: &[String]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    vals.iter()
        .map(|v| {
            let mut out = String::new();
            let mut rest = v.as_str();
            while let Some(p) = rest.find("id=") {
                out.push_str(&rest[..p + 3]);
                rest = &rest[p + 3..];
                let n = rest.bytes().take_while(|b| b.is_ascii_digit()).count();
                let num = rest[..n].to_string();
                let idx = match seen.iter().position(|x| *x == num) {
                    Some(i) => i,
                    None => {
                        seen.push(num);
                        seen.len() - 1
                    }
                };
                out.push_str(&(idx + 1).to_string());
                rest = &rest[n..];
            }
            out.push_str(rest);
            out
        })
        .collect()
}

/// The kernel's sync_linked_regs over r6..r9 with `known` as the refined
/// register.
fn sync_links(regs: &mut [Scalar; 4], links: &mut [Link; 4], known: usize) {
    let kl = links[known];
    if kl.id == 0 {
        return;
    }
    for j in 0..4 {
        if j == known || links[j].id != kl.id {
            continue;
        }
        if let Some((v, l)) = sync_linked(&regs[known], kl, links[j]) {
            regs[j] = v;
            links[j] = l;
        }
    }
}

/// What bpfvet expects the kernel to print for one program.
#[derive(Default)]
struct Expect {
    /// Instruction index -> states of r6..r9 after it on the path that runs it.
    after: HashMap<usize, [String; 4]>,
    /// Instructions that must not run.
    dead: Vec<usize>,
    /// Instructions that run more than once (not checked).
    unchecked: Vec<usize>,
    /// Jump index -> states of r6..r9 on the taken edge.
    taken: HashMap<usize, [String; 4]>,
    /// Jumps whose taken edge is dead.
    taken_dead: Vec<usize>,
    violations: Vec<String>,
}

struct Gen {
    rng: Rng,
    insns: Vec<Insn>,
    regs: [Scalar; 4],
    /// Links between r6..r9, modelled only when `track_ids`.
    links: [Link; 4],
    next_id: u32,
    track_ids: bool,
    exp: Expect,
    /// Set when the program cannot continue linearly.
    done: bool,
}

/// Instructions in [`Gen::exit_block`].
const EXIT_BLOCK_LEN: usize = 5;

const ALU_OPS: [(u8, AluOp); 13] = [
    (0x00, AluOp::Add),
    (0x10, AluOp::Sub),
    (0x20, AluOp::Mul),
    (0x30, AluOp::Div),
    (0x30, AluOp::Sdiv),
    (0x90, AluOp::Mod),
    (0x90, AluOp::Smod),
    (0x40, AluOp::Or),
    (0x50, AluOp::And),
    (0xa0, AluOp::Xor),
    (0x60, AluOp::Lsh),
    (0x70, AluOp::Rsh),
    (0xc0, AluOp::Arsh),
];

const JMP_OPS: [(u8, JmpOp); 11] = [
    (0x10, JmpOp::Eq),
    (0x50, JmpOp::Ne),
    (0x20, JmpOp::Gt),
    (0x30, JmpOp::Ge),
    (0xa0, JmpOp::Lt),
    (0xb0, JmpOp::Le),
    (0x60, JmpOp::Sgt),
    (0x70, JmpOp::Sge),
    (0xc0, JmpOp::Slt),
    (0xd0, JmpOp::Sle),
    (0x40, JmpOp::Set),
];

impl Gen {
    fn states(&self) -> [String; 4] {
        render(&self.regs, &self.links, self.track_ids)
    }

    fn new_id(&mut self) -> u32 {
        self.next_id += 1;
        self.next_id
    }

    /// assign_scalar_id_before_mov on r(6+k).
    fn link_before_mov(&mut self, k: usize) {
        let mut next = self.next_id;
        self.links[k] = self.links[k].before_mov(&self.regs[k], || {
            next += 1;
            next
        });
        self.next_id = next;
    }

    fn emit(&mut self, i: Insn) -> usize {
        self.insns.push(i);
        self.insns.len() - 1
    }

    /// Emits an instruction and records the states after it.
    fn emit_checked(&mut self, i: Insn) {
        let idx = self.emit(i);
        let st = self.states();
        self.exp.after.insert(idx, st);
    }

    fn prologue(&mut self) {
        for k in 0..4u8 {
            let r = 6 + k;
            match self.rng.below(4) {
                0 => {
                    self.emit(Insn::new(0x85, 0, 0, 0, 5));
                    self.regs[k as usize] = Scalar::unknown();
                    // The move links rX with r0 (r0 is overwritten later).
                    self.links[k as usize] = Link {
                        id: self.new_id(),
                        ..Link::NONE
                    };
                    self.emit_checked(Insn::new(0xbf, r, 0, 0, 0));
                }
                1 => {
                    // A 32-bit move of an unknown: zero-extended.
                    self.emit(Insn::new(0x85, 0, 0, 0, 7));
                    self.regs[k as usize] = Scalar::unknown_u32();
                    self.emit_checked(Insn::new(0xbc, r, 0, 0, 0));
                }
                2 => {
                    let v = self.rng.imm();
                    self.regs[k as usize] = Scalar::constant(v as i64 as u64);
                    self.emit_checked(Insn::new(0xb7, r, 0, 0, v));
                }
                _ => {
                    let v = self.rng.next() >> self.rng.below(64);
                    self.regs[k as usize] = Scalar::constant(v);
                    let idx = self.emit(Insn::new(0x18, r, 0, 0, v as u32 as i32));
                    self.emit(Insn::new(0, 0, 0, 0, (v >> 32) as u32 as i32));
                    let st = self.states();
                    self.exp.after.insert(idx, st);
                }
            }
        }
        // r0 = 0 for every exit; also unlinks r0 from the moved results.
        self.emit(Insn::new(0xb7, 0, 0, 0, 0));
    }

    fn alu(&mut self) {
        let (code_op, op) = ALU_OPS[self.rng.below(13) as usize];
        let alu32 = self.rng.chance(40);
        let class = if alu32 { 0x04 } else { 0x07 };
        let d = self.rng.below(4) as usize;
        let off = i16::from(matches!(op, AluOp::Sdiv | AluOp::Smod));
        let mut src_idx = None;
        let (insn, src) = if self.rng.chance(65) {
            let mut imm = self.rng.imm();
            if op.is_shift() {
                imm = self.rng.below(if alu32 { 32 } else { 64 }) as i32;
            }
            if matches!(op, AluOp::Div | AluOp::Sdiv | AluOp::Mod | AluOp::Smod) && imm == 0 {
                imm = 3;
            }
            (
                Insn::new(class | code_op, 6 + d as u8, 0, off, imm),
                Scalar::constant(imm as i64 as u64),
            )
        } else {
            let s = self.rng.below(4) as usize;
            src_idx = Some(s);
            (
                Insn::new(class | code_op | 0x08, 6 + d as u8, 6 + s as u8, off, 0),
                self.regs[s],
            )
        };
        let dst_umax = self.regs[d].umax;
        let fork = self.regs[d].alu(op, &src, alu32);
        self.links[d] = self.links[d].after_alu(op, &src, src_idx == Some(d), alu32, dst_umax);
        if fork.is_some() {
            // The kernel forks here and re-runs this instruction on a
            // second path: stop comparing.
            let idx = self.emit(insn);
            self.exp.unchecked.push(idx);
            self.done = true;
            return;
        }
        self.emit_checked(insn);
    }

    /// `dst = src` style moves between registers (MOV, MOV32, MOVSX):
    /// the copy shares the source's link when `keep`.
    fn mov_from(&mut self, d: usize, s: usize, keep: bool, value: Scalar) {
        if keep {
            self.link_before_mov(s);
        }
        self.links[d] = if keep { self.links[s] } else { Link::NONE };
        self.regs[d] = value;
    }

    fn unary(&mut self) {
        let d = self.rng.below(4) as usize;
        let r = 6 + d as u8;
        match self.rng.below(if self.track_ids { 7 } else { 6 }) {
            0 => {
                let alu32 = self.rng.chance(40);
                self.regs[d].neg(alu32);
                self.links[d] = Link::NONE;
                self.emit_checked(Insn::new(if alu32 { 0x84 } else { 0x87 }, r, 0, 0, 0));
            }
            1 => {
                let how =
                    [EndianOp::ToLe, EndianOp::ToBe, EndianOp::Bswap][self.rng.below(3) as usize];
                let bits = [16, 32, 64][self.rng.below(3) as usize];
                let code = match how {
                    EndianOp::ToLe => 0xd4,
                    EndianOp::ToBe => 0xdc,
                    EndianOp::Bswap => 0xd7,
                };
                if self.regs[d].byte_swap(how, bits) {
                    self.links[d] = Link::NONE;
                }
                self.emit_checked(Insn::new(code, r, 0, 0, bits as i32));
            }
            2 => {
                let bits = [8u8, 16, 32][self.rng.below(3) as usize];
                let s = self.mov_source(d);
                let keep = Scalar::movsx_keeps_value(&self.regs[s], bits);
                let v = Scalar::movsx64(&self.regs[s], bits);
                self.mov_from(d, s, keep, v);
                self.emit_checked(Insn::new(0xbf, r, 6 + s as u8, i16::from(bits), 0));
            }
            3 => {
                let bits = [8u8, 16][self.rng.below(2) as usize];
                let s = self.mov_source(d);
                let keep = Scalar::movsx_keeps_value(&self.regs[s], bits);
                let v = Scalar::movsx32(&self.regs[s], bits);
                self.mov_from(d, s, keep, v);
                self.emit_checked(Insn::new(0xbc, r, 6 + s as u8, i16::from(bits), 0));
            }
            4 => {
                let s = self.mov_source(d);
                let keep = self.regs[s].width() <= 32;
                let v = Scalar::mov32(&self.regs[s]);
                self.mov_from(d, s, keep, v);
                self.emit_checked(Insn::new(0xbc, r, 6 + s as u8, 0, 0));
            }
            5 if self.track_ids => {
                // r_dst = r_src: a full copy that shares the link.
                let s = self.mov_source(d);
                let v = self.regs[s];
                self.mov_from(d, s, true, v);
                self.emit_checked(Insn::new(0xbf, r, 6 + s as u8, 0, 0));
            }
            _ => {
                let v = self.rng.imm();
                self.links[d] = Link::NONE;
                if self.rng.chance(50) {
                    self.regs[d] = Scalar::constant(v as i64 as u64);
                    self.emit_checked(Insn::new(0xb7, r, 0, 0, v));
                } else {
                    self.regs[d] = Scalar::constant(u64::from(v as u32));
                    self.emit_checked(Insn::new(0xb4, r, 0, 0, v));
                }
            }
        }
    }

    /// `r0 += r6..r9; exit`: reading every register before leaving keeps
    /// all of them live at every jump (6.18 synchronises linked registers
    /// only where they are live).
    fn exit_block(&mut self) -> Vec<usize> {
        let mut idx: Vec<usize> = (6..=9u8)
            .map(|r| self.emit(Insn::new(0x0f, 0, r, 0, 0)))
            .collect();
        idx.push(self.emit(Insn::new(0x95, 0, 0, 0, 0)));
        idx
    }

    /// The source of a register move: itself unless links are modelled.
    fn mov_source(&mut self, d: usize) -> usize {
        if self.track_ids {
            self.rng.below(4) as usize
        } else {
            d
        }
    }

    fn branch(&mut self) {
        let (code_op, op) = JMP_OPS[self.rng.below(11) as usize];
        let jmp32 = self.rng.chance(35);
        let class = if jmp32 { 0x06 } else { 0x05 };
        let d = self.rng.below(4) as usize;
        let use_imm = self.rng.chance(55);
        let s = self.rng.below(4) as usize;
        let imm = self.rng.imm();
        let a = self.regs[d];
        let b = if use_imm {
            Scalar::constant(imm as i64 as u64)
        } else {
            self.regs[s]
        };
        let same = !use_imm && s == d;
        let pred = if same {
            is_branch_taken(&a, &a, op, jmp32)
        } else {
            is_branch_taken(&a, &b, op, jmp32)
        };
        // Register states on each edge (unchanged where the edge is decided).
        let (mut on_taken, mut on_fall) = (self.regs, self.regs);
        let (mut links_taken, mut links_fall) = (self.links, self.links);
        if pred.is_none() {
            {
                let mut r = if same {
                    set_min_max_same(&a, op, jmp32)
                } else {
                    set_min_max(&a, &b, op, jmp32)
                };
                for (lbl, v) in r.sanitize().into_iter().flatten() {
                    self.exp.violations.push(v.message(lbl));
                }
                on_taken[d] = r.taken[0];
                on_fall[d] = r.fall[0];
                if !use_imm {
                    on_taken[s] = r.taken[1];
                    on_fall[s] = r.fall[1];
                }
            }
            if self.track_ids {
                for (regs, links) in [
                    (&mut on_taken, &mut links_taken),
                    (&mut on_fall, &mut links_fall),
                ] {
                    if !use_imm {
                        sync_links(regs, links, s);
                    }
                    sync_links(regs, links, d);
                }
            }
        }
        let insn = if use_imm {
            Insn::new(class | code_op, 6 + d as u8, 0, 0, imm)
        } else {
            Insn::new(class | code_op | 0x08, 6 + d as u8, 6 + s as u8, 0, 0)
        };
        let continue_taken = match pred {
            Some(p) => p,
            None => self.rng.chance(50),
        };
        let jmp = self.insns.len();
        if pred != Some(true) {
            self.regs = on_fall;
            self.links = links_fall;
            let st = self.states();
            self.exp.after.insert(jmp, st);
        } else {
            self.exp.unchecked.push(jmp);
        }
        if pred == Some(false) {
            self.exp.taken_dead.push(jmp);
        } else {
            self.exp
                .taken
                .insert(jmp, render(&on_taken, &links_taken, self.track_ids));
        }
        let exit_len = EXIT_BLOCK_LEN as i16;
        if continue_taken {
            // jmp: if .. goto +len; <exit block>; <continue>
            self.emit(Insn::new(insn.code, insn.dst, insn.src, exit_len, insn.imm));
            let exit = self.exit_block();
            if pred == Some(true) {
                self.exp.dead.extend(exit);
            }
            self.regs = on_taken;
            self.links = links_taken;
        } else {
            // jmp: if .. goto +1; ja +len; <exit block>; <continue>
            self.emit(Insn::new(insn.code, insn.dst, insn.src, 1, insn.imm));
            self.emit(Insn::new(0x05, 0, 0, exit_len, 0));
            let exit = self.exit_block();
            if pred == Some(false) {
                self.exp.dead.extend(exit);
            }
            self.regs = on_fall;
            self.links = links_fall;
        }
    }

    fn program(seed: u64, steps: usize, track_ids: bool) -> (Vec<Insn>, Expect) {
        let mut g = Gen {
            rng: Rng(seed | 1),
            insns: Vec::new(),
            regs: [Scalar::unknown(); 4],
            links: [Link::NONE; 4],
            next_id: 0,
            track_ids,
            exp: Expect::default(),
            done: false,
        };
        g.prologue();
        for _ in 0..steps {
            if g.done {
                break;
            }
            match g.rng.below(10) {
                0..=4 => g.alu(),
                5..=6 => g.unary(),
                _ => g.branch(),
            }
        }
        g.exit_block();
        (g.insns, g.exp)
    }
}

/// Register values printed on a log line: `R6=...` for r6..r9. Values may
/// contain spaces (`var_off=(0x0; 0xff)`), so a value runs up to the next
/// ` R<n>=`.
fn regs_on(line: &str, keep_ids: bool) -> Vec<(usize, String)> {
    let starts: Vec<usize> = line
        .match_indices('R')
        .map(|(i, _)| i)
        .filter(|&i| {
            (i == 0 || line.as_bytes()[i - 1] == b' ')
                && line[i + 1..]
                    .split_once('=')
                    .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    let mut out = Vec::new();
    for (n, &st) in starts.iter().enumerate() {
        let end = starts.get(n + 1).map_or(line.len(), |&e| e);
        let tok = line[st + 1..end].trim_end();
        let Some((num, val)) = tok.split_once('=') else {
            continue;
        };
        let Ok(k) = num.parse::<usize>() else {
            continue;
        };
        if (6..=9).contains(&k) {
            out.push((k - 6, normalize(val, keep_ids)));
        }
    }
    out
}

/// Compares the registers printed on one line with bpfvet's states; ids
/// are compared by structure (renumbered over the line).
fn check_regs(
    printed: Vec<(usize, String)>,
    want: &[String; 4],
    what: &str,
    errs: &mut Vec<String>,
) {
    let got: Vec<String> = printed.iter().map(|(_, v)| v.clone()).collect();
    let exp: Vec<String> = printed.iter().map(|(k, _)| want[*k].clone()).collect();
    let (got_c, exp_c) = (canon_ids(&got), canon_ids(&exp));
    for (n, (k, _)) in printed.iter().enumerate() {
        if got_c[n] != exp_c[n] {
            errs.push(format!(
                "{what} R{}: kernel {} bpfvet {}",
                k + 6,
                got[n],
                exp[n]
            ));
        }
    }
}

fn compare(exp: &Expect, log: &str, ids: bool) -> Vec<String> {
    let mut errs = Vec::new();
    let mut seen = HashMap::new();
    let mut violations = Vec::new();
    for line in log.lines() {
        if line.contains("REG INVARIANTS VIOLATION") {
            violations.push(line.trim().to_string());
            continue;
        }
        if let Some(rest) = line.strip_prefix("from ") {
            let Some((edge, state)) = rest.split_once(": ") else {
                continue;
            };
            let Some((from, _to)) = edge.split_once(" to ") else {
                continue;
            };
            let Ok(from) = from.parse::<usize>() else {
                continue;
            };
            if state == "safe" {
                continue;
            }
            if exp.taken_dead.contains(&from) {
                errs.push(format!(
                    "insn {from}: kernel explored a taken edge bpfvet thinks dead"
                ));
            } else if let Some(want) = exp.taken.get(&from) {
                let what = format!("insn {from} taken edge");
                check_regs(regs_on(state, ids), want, &what, &mut errs);
            }
            continue;
        }
        let Some((num, rest)) = line.split_once(": (") else {
            continue;
        };
        let Ok(idx) = num.parse::<usize>() else {
            continue;
        };
        *seen.entry(idx).or_insert(0) += 1;
        if exp.dead.contains(&idx) {
            errs.push(format!(
                "insn {idx}: kernel ran an instruction bpfvet thinks dead"
            ));
            continue;
        }
        if exp.unchecked.contains(&idx) {
            continue;
        }
        let Some((_, state)) = rest.split_once("; ") else {
            continue;
        };
        let Some(want) = exp.after.get(&idx) else {
            continue;
        };
        check_regs(regs_on(state, ids), want, &format!("insn {idx}"), &mut errs);
    }
    for idx in exp.after.keys() {
        if !seen.contains_key(idx) {
            errs.push(format!("insn {idx}: bpfvet thinks it runs, kernel did not"));
        }
    }
    let mut want_v = exp.violations.clone();
    want_v.sort();
    violations.sort();
    if want_v != violations {
        errs.push(format!(
            "invariant violations: kernel {violations:?} bpfvet {want_v:?}"
        ));
    }
    errs
}

/// Generates, loads and compares `BPFVET_DIFF_PROGRAMS` programs (400 by
/// default).
fn run_diff(track_ids: bool) {
    if let Err(why) = kernel_available() {
        println!("SKIP: host kernel verifier not usable ({why})");
        return;
    }
    let programs: u64 = std::env::var("BPFVET_DIFF_PROGRAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let salt = if track_ids { 0x5bd1_e995 } else { 0 };
    let mut failures = Vec::new();
    // BPFVET_DIFF_SEED=<n> runs only that program (for investigating).
    let only: Option<u64> = std::env::var("BPFVET_DIFF_SEED")
        .ok()
        .and_then(|v| v.parse().ok());
    for seed in 0..programs {
        if only.is_some_and(|o| o != seed) {
            continue;
        }
        let steps = 8 + (seed % 48) as usize;
        let (insns, exp) = Gen::program(
            0x9e37_79b9_7f4a_7c15 ^ (seed * 0x1000_0001) ^ salt,
            steps,
            track_ids,
        );
        let (loaded, log) = kernel_load(&insns).expect("bpf syscall");
        if !loaded {
            failures.push(format!("seed {seed}: kernel rejected the program\n{log}"));
            continue;
        }
        let errs = compare(&exp, &log, track_ids);
        if !errs.is_empty() {
            failures.push(format!("seed {seed}:\n  {}\n{log}", errs.join("\n  ")));
        }
    }
    if !failures.is_empty() {
        let shown: Vec<_> = failures.iter().take(3).collect();
        panic!(
            "{} of {programs} programs disagree with the kernel; first ones:\n{}",
            failures.len(),
            shown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n\n")
        );
    }
}

#[test]
fn scalar_states_match_host_kernel() {
    run_diff(false);
}

/// Also moves between registers, so scalars share ids (plain and
/// `+= const` links) and branch refinements propagate through them.
#[test]
fn linked_scalars_match_host_kernel() {
    run_diff(true);
}
