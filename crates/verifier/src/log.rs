//! The verifier log in the kernel's format: instruction lines
//! (`12: (61) r0 = *(u32 *)(r1 +76)`) followed, after `;` at an aligned
//! column, by the registers and stack slots the instruction touched; source
//! lines from line_info; state dumps; and the messages of a failure. Level 1
//! keeps only the path to the error (pending paths truncate it back),
//! level 2 keeps everything. Nothing is formatted at level 0.

use crate::log_state::{write_frame_state, MapInfo, Selection};
use crate::state::State;
use bpfvet_isa::disasm::{write_log_line, Symbols};
use bpfvet_isa::Insn;
use bpfvet_isa::Ld64Kind;
use bpfvet_object::Program;
use std::cell::{Cell, RefCell};
use std::fmt::Write;

/// The kernel aligns the state after an instruction to a multiple of 8,
/// at least at column 40 (BPF_LOG_ALIGNMENT / BPF_LOG_MIN_ALIGNMENT).
const ALIGNMENT: usize = 40;
const MIN_ALIGNMENT: usize = 8;

pub struct Log {
    pub level: u32,
    pub maps: Vec<MapInfo>,
    buf: String,
    /// The line_info entry whose source line was printed last.
    last_line_info: Option<usize>,
    /// Where the last instruction line ends (0: none), and its length with
    /// the newline, so that the state can be appended to it.
    prev_log_pos: usize,
    prev_insn_len: usize,
    /// Registers and stack slots (by spi) read or written since the state
    /// was last printed. Cells, because register checks borrow the
    /// environment shared.
    scratched_regs: Cell<u16>,
    scratched_slots: Cell<u64>,
    /// Lines that follow the error message (state dumps of the failure).
    details: String,
    /// The kernel's detail line printed just before some error messages
    /// (set by checks that only borrow the environment).
    before_error: RefCell<String>,
}

/// Map loads print as an address of the width the kernel prints (a
/// `struct bpf_map` or map value address), so the state column lines up.
struct FakeAddresses;

impl Symbols for FakeAddresses {
    fn ld_imm64_value(&self, kind: Ld64Kind, imm: i32, next_imm: i32) -> Option<u64> {
        let base = 0xffff_8880_0000_0000u64 + ((imm as u32 as u64) << 12);
        match kind {
            Ld64Kind::MapFd | Ld64Kind::MapIdx => Some(base),
            Ld64Kind::MapValue | Ld64Kind::MapIdxValue => {
                Some(base + 0x0100_0000 + next_imm as u32 as u64)
            }
            // A function's address is still its relative offset when the
            // kernel prints it.
            Ld64Kind::Func => Some(imm as u32 as u64),
            _ => None,
        }
    }

    /// Kfunc names from the host's vmlinux BTF, as the kernel prints them.
    fn kfunc_name(&self, btf_id: i32, btf_fd_idx: i16) -> Option<&str> {
        if btf_fd_idx != 0 {
            return None;
        }
        let btf = crate::btf_walk::vmlinux()?;
        let t = btf.type_by_id(btf_id as u32)?;
        (t.kind == bpfvet_object::btf::Kind::Func).then(|| btf.name(t))
    }
}

impl Log {
    pub fn new(level: u32) -> Log {
        Log {
            level,
            maps: Vec::new(),
            buf: String::new(),
            last_line_info: None,
            prev_log_pos: 0,
            prev_insn_len: 0,
            scratched_regs: Cell::new(u16::MAX),
            scratched_slots: Cell::new(u64::MAX),
            details: String::new(),
            before_error: RefCell::new(String::new()),
        }
    }
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    pub fn truncate(&mut self, n: usize) {
        self.buf.truncate(n);
    }
    pub fn line(&mut self, s: &str) {
        if self.level == 0 {
            return;
        }
        self.buf.push_str(s);
        self.buf.push('\n');
    }
    /// Text without a newline (the start of a line a state dump ends).
    pub fn append(&mut self, s: &str) {
        self.buf.push_str(s);
    }
    pub fn into_string(self) -> String {
        self.buf
    }

    /// Marks the stack slots holding bytes `lo..hi` (offsets from the frame
    /// pointer) as touched.
    #[inline]
    pub fn scratch_stack(&self, lo: i64, hi: i64) {
        let mut mask = self.scratched_slots.get();
        let mut b = lo;
        while b < hi {
            let spi = ((-b - 1) / 8) as u32;
            mask |= 1u64.checked_shl(spi).unwrap_or(0);
            b += 1;
        }
        self.scratched_slots.set(mask);
    }
    /// Everything counts as touched: the next instruction prints the whole
    /// state (after a path ends, and on entry to a function).
    pub fn scratch_all(&self) {
        self.scratched_regs.set(u16::MAX);
        self.scratched_slots.set(u64::MAX);
    }
    fn scratched(&self) -> bool {
        self.scratched_regs.get() != 0 || self.scratched_slots.get() != 0
    }

    /// The state touched since the last print: appended to the instruction
    /// line if nothing was logged after it, else on a line of its own
    /// (`13: R0=scalar()`).
    pub fn insn_state(&mut self, st: &State, insn_idx: usize) {
        if self.prev_log_pos != 0 && self.prev_log_pos == self.buf.len() {
            self.buf.pop();
            let pos = self.prev_insn_len;
            let col = (pos + MIN_ALIGNMENT / 2)
                .max(ALIGNMENT)
                .next_multiple_of(MIN_ALIGNMENT);
            let pad = col - pos - 1;
            let _ = write!(self.buf, "{:pad$};", ' ');
        } else {
            let _ = write!(self.buf, "{insn_idx}:");
        }
        let sel = Selection {
            all: false,
            regs: self.scratched_regs.get(),
            slots: self.scratched_slots.get(),
        };
        write_frame_state(&mut self.buf, st, st.curframe(), sel, &self.maps);
        self.buf.push('\n');
        self.scratched_regs.set(0);
        self.scratched_slots.set(0);
    }

    /// Every register and slot of frame `frameno`, then a newline (the
    /// `from X to Y:` lines and call dumps).
    pub fn full_state(&mut self, st: &State, frameno: usize) {
        let sel = Selection {
            all: true,
            regs: 0,
            slots: 0,
        };
        write_frame_state(&mut self.buf, st, frameno, sel, &self.maps);
        self.buf.push('\n');
    }

    /// Before an instruction: the touched state, the source line if it
    /// changed, then `idx: (op) insn`.
    pub fn insn(&mut self, prog: &Program, insns: &[Insn], st: &State, idx: usize) {
        if self.scratched() {
            self.insn_state(st, idx);
        }
        self.line_info(prog, idx);
        let start = self.buf.len();
        self.write_insn(insns, idx);
        self.buf.push('\n');
        self.prev_insn_len = self.buf.len() - start;
        self.prev_log_pos = self.buf.len();
        self.scratched_regs
            .set(self.scratched_regs.get() | checked_regs(insns[idx]));
        if crate::cfg::is_sync_callback_insn(&insns[idx])
            || (crate::cfg::is_helper_call(&insns[idx])
                && crate::cfg::ASYNC_CALLBACK_HELPERS.contains(&insns[idx].imm))
        {
            // Setting up the callback's frame marks the whole state.
            self.scratch_all();
        }
    }

    /// `idx: (op) insn` without a newline.
    pub fn write_insn(&mut self, insns: &[Insn], idx: usize) {
        match bpfvet_isa::decode_at(insns, idx) {
            Ok(ins) => {
                let _ = write_log_line(&mut self.buf, idx, &ins, &FakeAddresses);
            }
            Err(_) => {
                let _ = write!(self.buf, "{idx}: ({:02x}) ?", insns[idx].code);
            }
        }
    }

    /// `; <source line> @ file:line` when the line_info entry covering
    /// `idx` differs from the last one printed and names another line.
    fn line_info(&mut self, prog: &Program, idx: usize) {
        let li = prog
            .line_info
            .partition_point(|l| l.insn_off as usize <= idx);
        let Some(li) = li.checked_sub(1) else {
            return;
        };
        if self.last_line_info == Some(li) {
            return;
        }
        let l = &prog.line_info[li];
        if let Some(prev) = self.last_line_info.map(|p| &prog.line_info[p]) {
            if prev.file_name == l.file_name && prev.line == l.line {
                return;
            }
        }
        let file = l.file_name.rsplit('/').next().unwrap_or(&l.file_name);
        let _ = writeln!(
            self.buf,
            "; {} @ {}:{}",
            l.line_text.trim_start(),
            file,
            l.line
        );
        self.last_line_info = Some(li);
    }

    /// The level-2 preamble: where each function starts, then the
    /// registers live before each instruction (`  3: .1....6... (bf) r1 = r6`).
    pub fn program_summary(
        &mut self,
        starts: &[usize],
        insns: &[Insn],
        live_before: &[u16],
        scc: &[u32],
    ) {
        for (i, start) in starts.iter().enumerate() {
            let _ = writeln!(self.buf, "func#{i} @{start}");
        }
        self.buf.push_str("Live regs before insn:\n");
        let mut idx = 0;
        while idx < insns.len() {
            let live = live_before.get(idx).copied().unwrap_or(0);
            match scc[idx] {
                0 => self.buf.push_str("    "),
                n => {
                    let _ = write!(self.buf, "{n:3} ");
                }
            }
            let _ = write!(self.buf, "{idx:3}: ");
            for r in 0..10 {
                if live & (1 << r) != 0 {
                    let _ = write!(self.buf, "{r}");
                } else {
                    self.buf.push('.');
                }
            }
            self.buf.push(' ');
            let ok = match bpfvet_isa::decode_at(insns, idx) {
                Ok(ins) => {
                    let _ = write!(self.buf, "({:02x}) ", insns[idx].code);
                    bpfvet_isa::disasm::write_insn(&mut self.buf, &ins, &FakeAddresses).is_ok()
                }
                Err(_) => false,
            };
            if !ok {
                let _ = write!(self.buf, "({:02x}) ?", insns[idx].code);
            }
            self.buf.push('\n');
            idx += if insns[idx].is_ld_imm64() { 2 } else { 1 };
        }
    }

    /// Entry into a static function: both frames, and the callee's first
    /// instruction shows its whole state.
    pub fn call_dump(&mut self, st: &State) {
        let callee = st.curframe();
        self.buf.push_str("caller:\n");
        self.full_state(st, callee.saturating_sub(1));
        self.buf.push_str("callee:\n");
        self.full_state(st, callee);
        self.scratch_all();
    }

    /// Return from a function (or a callback) to its caller.
    pub fn return_dump(&mut self, callee: &State, caller: &State, to: usize) {
        self.buf.push_str("returning from callee:\n");
        self.full_state(callee, callee.curframe());
        let _ = writeln!(self.buf, "to caller at {to}:");
        self.full_state(caller, caller.curframe());
    }

    /// One step of a precision walk: `mark_precise: frame0: regs=r4
    /// stack= before 11: (b4) w4 = 20`.
    pub fn precise_step(
        &mut self,
        frame: usize,
        regs: u16,
        slots: u64,
        insns: &[Insn],
        idx: usize,
    ) {
        let _ = write!(self.buf, "mark_precise: frame{frame}: regs=");
        write_masks(&mut self.buf, regs, slots);
        let _ = write!(self.buf, " before ");
        self.write_insn(insns, idx);
        self.buf.push('\n');
    }

    /// The marks a walk leaves in a checkpoint, with that frame's state.
    pub fn precise_parent(&mut self, frame: usize, regs: u16, slots: u64, st: &State) {
        let _ = write!(self.buf, "mark_precise: frame{frame}: parent state regs=");
        write_masks(&mut self.buf, regs, slots);
        self.buf.push_str(": ");
        self.full_state(st, frame);
    }

    /// The two equal states of an infinite loop, shown after its error
    /// message.
    pub fn loop_states(&mut self, cur: &State, old: &State) {
        let at = self.buf.len();
        let frame = cur.curframe();
        self.buf.push_str("cur state:");
        self.full_state(cur, frame);
        self.buf.push_str("old state:");
        self.full_state(old, frame);
        self.details = self.buf.split_off(at);
    }

    /// Keeps `line` to print right before the error message.
    pub fn before_error(&self, line: String) {
        if self.level > 0 {
            *self.before_error.borrow_mut() = line;
        }
    }

    /// Adds `line` after the one [`Log::before_error`] keeps (an error
    /// turned into another that the kernel prints after it).
    pub fn also_before_error(&self, line: String) {
        if self.level > 0 {
            let mut kept = self.before_error.borrow_mut();
            if !kept.is_empty() {
                kept.push('\n');
            }
            kept.push_str(&line);
        }
    }

    /// Prints the line kept by [`Log::before_error`], if any.
    pub fn lines_before_error(&mut self) {
        let line = std::mem::take(self.before_error.get_mut());
        if !line.is_empty() {
            self.line(&line);
        }
    }

    /// Appends what [`Log::loop_states`] set aside for after the error.
    pub fn error_details(&mut self) {
        let details = std::mem::take(&mut self.details);
        self.buf.push_str(&details);
    }

    /// A pass (the main program or a global function) verified: at level 1
    /// the log only ever shows the path to an error, so it starts over.
    pub fn pass_verified(&mut self) {
        if self.level == 1 {
            self.buf.clear();
        }
    }

    /// A new verification pass (the main program, then each global
    /// function) starts with no source line printed.
    pub fn start_pass(&mut self) {
        self.last_line_info = None;
    }
}

/// The registers the kernel checks (check_reg_arg) while verifying `insn`,
/// which its log then shows: operands, and r0-r5 for calls and legacy
/// packet loads (arguments and caller-saved registers). Derived from the
/// instruction here so that verification itself does no log work.
fn checked_regs(insn: Insn) -> u16 {
    use bpfvet_isa::opcode::*;
    const CALLER_SAVED: u16 = 0b11_1111;
    let (dst, src) = (1u16 << (insn.dst & 15), 1u16 << (insn.src & 15));
    let x = source(insn.code) == BPF_X;
    match insn.class() {
        BPF_ALU | BPF_ALU64 => match op(insn.code) {
            BPF_NEG | BPF_END => dst,
            _ if x => dst | src,
            _ => dst,
        },
        BPF_LDX => dst | src,
        BPF_STX if mode(insn.code) == BPF_ATOMIC && insn.imm == BPF_CMPXCHG => dst | src | 1,
        BPF_STX => dst | src,
        BPF_ST => dst,
        BPF_JMP | BPF_JMP32 => match op(insn.code) {
            BPF_CALL => CALLER_SAVED,
            BPF_EXIT => 0,
            BPF_JA | BPF_JCOND => 0,
            _ if x => dst | src,
            _ => dst,
        },
        _ => match mode(insn.code) {
            BPF_ABS => CALLER_SAVED | 1 << 6,
            BPF_IND => CALLER_SAVED | 1 << 6 | src,
            _ => dst,
        },
    }
}

/// `r1,r4 stack=-8,-16` (what follows `regs=`).
fn write_masks(out: &mut String, regs: u16, slots: u64) {
    let mut sep = "";
    for r in 0..16 {
        if regs & (1 << r) != 0 {
            let _ = write!(out, "{sep}r{r}");
            sep = ",";
        }
    }
    out.push_str(" stack=");
    let mut sep = "";
    for spi in 0..64 {
        if slots & (1 << spi) != 0 {
            let _ = write!(out, "{sep}{}", -(spi + 1) * 8);
            sep = ",";
        }
    }
}
