//! Text -> instructions, reading the syntax [`crate::disasm`] prints.
//!
//! One instruction per line. A line may start with a log prefix
//! `12: (61) ` (the pc must match the instruction's slot index and the
//! opcode its encoding) and/or labels `name:`. Jump and call targets are
//! `pc+N`/`pc-N` as printed, or a label name. `;` and `//` start comments
//! (so verifier-log lines with register state after `;` read fine).
//!
//! Number conventions follow the printer: in `rX = N` a decimal N is a
//! 32-bit MOV and a `0x` N an LD_IMM64 (as is any N followed by `ll`);
//! jump immediates may be hex (as printed, the 32-bit pattern) or decimal.

use crate::instruction::*;
use std::collections::HashMap;

/// Where and why the text could not be assembled. Lines and columns
/// count from 1.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct AsmError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Assembles text into instructions.
pub fn assemble(text: &str) -> Result<Vec<Instruction>, AsmError> {
    let mut labels: HashMap<&str, usize> = HashMap::new();
    let mut parsed: Vec<(Instruction, Option<Fixup>)> = Vec::new();
    let mut pc = 0usize;
    for (n, raw) in text.lines().enumerate() {
        let mut p = Parser {
            s: strip_comment(raw),
            pos: 0,
            line: n + 1,
        };
        if let Some(expected_pc) = p.log_pc()? {
            if expected_pc != pc {
                return Err(p.err_at(0, format!("pc {expected_pc} does not match slot {pc}")));
            }
        }
        let code_at = p.pos;
        let code = p.log_code()?;
        while let Some(label) = p.label() {
            if labels.insert(label, pc).is_some() {
                return Err(p.err(format!("label `{label}` defined twice")));
            }
        }
        p.ws();
        if p.at_end() {
            continue;
        }
        let (insn, fixup) = p.instruction()?;
        p.ws();
        if !p.at_end() {
            return Err(p.err("expected end of line".into()));
        }
        if let Some(code) = code {
            if code != insn.code() {
                return Err(p.err_at(
                    code_at,
                    format!(
                        "opcode ({code:02x}) does not match the instruction's ({:02x})",
                        insn.code()
                    ),
                ));
            }
        }
        pc += insn.slots();
        parsed.push((insn, fixup));
    }
    let mut out = Vec::with_capacity(parsed.len());
    let mut pc = 0usize;
    for (mut insn, fixup) in parsed {
        if let Some(f) = fixup {
            let target = *labels.get(f.label.as_str()).ok_or_else(|| AsmError {
                line: f.line,
                column: f.column,
                message: format!("undefined label `{}`", f.label),
            })?;
            let rel = target as i64 - pc as i64 - 1;
            set_relative(&mut insn, rel).map_err(|message| AsmError {
                line: f.line,
                column: f.column,
                message,
            })?;
        }
        pc += insn.slots();
        out.push(insn);
    }
    Ok(out)
}

/// Assembles text straight into instruction slots.
pub fn assemble_insns(text: &str) -> Result<Vec<crate::Insn>, AsmError> {
    Ok(encode_program(&assemble(text)?))
}

/// A jump or call whose target is a label, resolved after all lines.
struct Fixup {
    label: String,
    line: usize,
    column: usize,
}

fn set_relative(insn: &mut Instruction, rel: i64) -> Result<(), String> {
    let short =
        || i16::try_from(rel).map_err(|_| format!("jump offset {rel} does not fit 16 bits"));
    let long = || i32::try_from(rel).map_err(|_| format!("offset {rel} does not fit 32 bits"));
    match insn {
        Instruction::Ja { off } | Instruction::MayGoto { off } | Instruction::Jump { off, .. } => {
            *off = short()?
        }
        Instruction::Gotol { imm } | Instruction::Call(Call::Local(imm)) => *imm = long()?,
        _ => {}
    }
    Ok(())
}

fn strip_comment(line: &str) -> &str {
    let cut = [line.find(';'), line.find("//")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(line.len());
    &line[..cut]
}

struct Parser<'a> {
    s: &'a str,
    pos: usize,
    line: usize,
}

type PResult<T> = Result<T, AsmError>;

const ALU_SYMBOLS: [(&str, AluOp); 13] = [
    ("s>>=", AluOp::Arsh),
    ("<<=", AluOp::Lsh),
    (">>=", AluOp::Rsh),
    ("s/=", AluOp::SDiv),
    ("s%=", AluOp::SMod),
    ("+=", AluOp::Add),
    ("-=", AluOp::Sub),
    ("*=", AluOp::Mul),
    ("/=", AluOp::Div),
    ("|=", AluOp::Or),
    ("&=", AluOp::And),
    ("%=", AluOp::Mod),
    ("^=", AluOp::Xor),
];

// Longer symbols first so that `s>=` is not read as `s>`.
const JMP_SYMBOLS: [(&str, JmpOp); 11] = [
    ("s>=", JmpOp::Sge),
    ("s<=", JmpOp::Sle),
    ("s>", JmpOp::Sgt),
    ("s<", JmpOp::Slt),
    ("==", JmpOp::Eq),
    ("!=", JmpOp::Ne),
    (">=", JmpOp::Ge),
    ("<=", JmpOp::Le),
    (">", JmpOp::Gt),
    ("<", JmpOp::Lt),
    ("&", JmpOp::Set),
];

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    fn at_end(&self) -> bool {
        self.rest().trim().is_empty()
    }

    fn err_at(&self, pos: usize, message: String) -> AsmError {
        AsmError {
            line: self.line,
            column: self.s[..pos.min(self.s.len())].chars().count() + 1,
            message,
        }
    }

    fn err(&self, message: String) -> AsmError {
        self.err_at(self.pos, message)
    }

    fn expected<T>(&self, what: &str) -> PResult<T> {
        let found: String = self.rest().chars().take(12).collect();
        let found = if found.is_empty() {
            "end of line".to_string()
        } else {
            format!("`{found}`")
        };
        Err(self.err(format!("expected {what}, found {found}")))
    }

    fn ws(&mut self) {
        let r = self.rest();
        self.pos += r.len() - r.trim_start().len();
    }

    /// Consumes `tok` (after optional whitespace) if it is next.
    fn eat(&mut self, tok: &str) -> bool {
        self.ws();
        if self.rest().starts_with(tok) {
            self.pos += tok.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, tok: &str) -> PResult<()> {
        if self.eat(tok) {
            Ok(())
        } else {
            self.expected(&format!("`{tok}`"))
        }
    }

    /// Consumes a keyword only if it is not the prefix of a longer word.
    fn eat_word(&mut self, word: &str) -> bool {
        self.ws();
        let r = self.rest();
        if r.starts_with(word) && !r[word.len()..].starts_with(is_ident_char) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    fn ident(&mut self) -> Option<&'a str> {
        self.ws();
        let r = self.rest();
        if !r.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '.') {
            return None;
        }
        let len = r.find(|c: char| !is_ident_char(c)).unwrap_or(r.len());
        self.pos += len;
        Some(&r[..len])
    }

    /// `12:` at the start of a log line.
    fn log_pc(&mut self) -> PResult<Option<usize>> {
        self.ws();
        let r = self.rest();
        let digits = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
        if digits == 0 || !r[digits..].starts_with(':') {
            return Ok(None);
        }
        let pc = r[..digits]
            .parse()
            .map_err(|_| self.err("pc out of range".into()))?;
        self.pos += digits + 1;
        Ok(Some(pc))
    }

    /// `(61)` after the pc of a log line.
    fn log_code(&mut self) -> PResult<Option<u8>> {
        self.ws();
        let r = self.rest().as_bytes();
        if r.len() >= 4 && r[0] == b'(' && r[3] == b')' {
            if let Ok(code) = u8::from_str_radix(&self.rest()[1..3], 16) {
                self.pos += 4;
                return Ok(Some(code));
            }
        }
        Ok(None)
    }

    fn label(&mut self) -> Option<&'a str> {
        let save = self.pos;
        if let Some(name) = self.ident() {
            if self.rest().starts_with(':') && !is_keyword(name) {
                self.pos += 1;
                return Some(name);
            }
        }
        self.pos = save;
        None
    }

    /// A register `rN` or `wN`; returns (number, is_w).
    fn reg_any(&mut self) -> Option<(u8, bool)> {
        self.ws();
        let r = self.rest();
        let w = match r.as_bytes().first() {
            Some(b'r') => false,
            Some(b'w') => true,
            _ => return None,
        };
        let digits = r[1..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(r.len() - 1);
        if digits == 0 || digits > 2 || r[1 + digits..].starts_with(is_ident_char) {
            return None;
        }
        let n: u8 = r[1..1 + digits].parse().ok()?;
        if n > 10 {
            return None;
        }
        self.pos += 1 + digits;
        Some((n, w))
    }

    fn reg_of(&mut self, width: Width) -> PResult<u8> {
        let save = self.pos;
        match self.reg_any() {
            Some((n, w)) if w == (width == Width::W32) => Ok(n),
            _ => {
                self.pos = save;
                let what = if width == Width::W32 {
                    "a register w0..w10"
                } else {
                    "a register r0..r10"
                };
                self.expected(what)
            }
        }
    }

    fn reg(&mut self) -> PResult<u8> {
        self.reg_of(Width::W64)
    }

    fn same_reg(&mut self, want: u8, width: Width) -> PResult<()> {
        let at = {
            self.ws();
            self.pos
        };
        let got = self.reg_of(width)?;
        if got != want {
            return Err(self.err_at(
                at,
                format!("expected the same register as before (r{want})"),
            ));
        }
        Ok(())
    }

    /// An integer literal: optional `-`/`+`, decimal or `0x` hex.
    fn number(&mut self) -> PResult<i128> {
        self.ws();
        let start = self.pos;
        let r = self.rest();
        let (neg, body) = match r.as_bytes().first() {
            Some(b'-') => (true, &r[1..]),
            Some(b'+') => (false, &r[1..]),
            _ => (false, r),
        };
        let sign_len = r.len() - body.len();
        let (radix, digits_from) = if body.starts_with("0x") || body.starts_with("0X") {
            (16, 2)
        } else {
            (10, 0)
        };
        let digits = &body[digits_from..];
        let len = digits
            .find(|c: char| !c.is_digit(radix))
            .unwrap_or(digits.len());
        if len == 0 || len > 20 {
            return self.expected("a number");
        }
        let v = i128::from_str_radix(&digits[..len], radix)
            .map_err(|_| self.err_at(start, "number out of range".into()))?;
        self.pos += sign_len + digits_from + len;
        Ok(if neg { -v } else { v })
    }

    fn is_hex_next(&mut self) -> bool {
        self.ws();
        let r = self.rest().trim_start_matches('-');
        r.starts_with("0x") || r.starts_with("0X")
    }

    fn ranged<T: TryFrom<i128>>(&self, v: i128, at: usize, what: &str) -> PResult<T> {
        T::try_from(v).map_err(|_| self.err_at(at, format!("{what} {v} out of range")))
    }

    /// A 32-bit immediate: signed, or the unsigned 32-bit pattern.
    fn imm32(&mut self) -> PResult<i32> {
        self.ws();
        let at = self.pos;
        let v = self.number()?;
        if let Ok(u) = u32::try_from(v) {
            return Ok(u as i32);
        }
        self.ranged(v, at, "immediate")
    }

    /// A signed offset written with its sign, as in `+76` or `-8`.
    fn signed<T: TryFrom<i128>>(&mut self, what: &str) -> PResult<T> {
        self.ws();
        let at = self.pos;
        if !self.rest().starts_with(['+', '-']) {
            return self.expected(&format!("a signed {what} like +4 or -8"));
        }
        let v = self.number()?;
        self.ranged(v, at, what)
    }

    /// A number with or without a sign, in range for `T`.
    fn signed_or_plain<T: TryFrom<i128>>(&mut self, what: &str) -> PResult<T> {
        self.ws();
        let at = self.pos;
        let v = self.number()?;
        self.ranged(v, at, what)
    }

    /// `u8`..`u64` (and `s8`..`s32` when `sx`); returns (size, signed).
    fn size_name(&mut self, sx: bool) -> PResult<(Size, bool)> {
        const NAMES: [(&str, Size, bool); 7] = [
            ("u8", Size::B, false),
            ("u16", Size::H, false),
            ("u32", Size::W, false),
            ("u64", Size::DW, false),
            ("s8", Size::B, true),
            ("s16", Size::H, true),
            ("s32", Size::W, true),
        ];
        for (name, size, signed) in NAMES {
            if (sx || !signed) && self.eat_word(name) {
                return Ok((size, signed));
            }
        }
        self.expected(if sx {
            "a size u8/u16/u32/u64/s8/s16/s32"
        } else {
            "a size u8/u16/u32/u64"
        })
    }

    /// `(size *)(rN +off)` after the leading `*` of a memory operand or
    /// inside an atomic call; returns (size, signed, reg, off).
    fn mem(&mut self, sx: bool) -> PResult<(Size, bool, u8, i16)> {
        self.expect("(")?;
        let (size, signed) = self.size_name(sx)?;
        self.expect("*")?;
        self.expect(")")?;
        self.expect("(")?;
        let reg = self.reg()?;
        let off = self.signed("offset")?;
        self.expect(")")?;
        Ok((size, signed, reg, off))
    }

    /// `pc+N` or a label: the relative target of a jump or call.
    fn target<T: TryFrom<i128> + Default>(&mut self) -> PResult<(T, Option<Fixup>)> {
        self.ws();
        let column = self.s[..self.pos].chars().count() + 1;
        if self.rest().starts_with("pc+") || self.rest().starts_with("pc-") {
            self.pos += 2;
            return Ok((self.signed("jump offset")?, None));
        }
        match self.ident() {
            Some(label) => Ok((
                T::default(),
                Some(Fixup {
                    label: label.to_string(),
                    line: self.line,
                    column,
                }),
            )),
            None => self.expected("`pc+N`, `pc-N` or a label"),
        }
    }

    fn instruction(&mut self) -> PResult<(Instruction, Option<Fixup>)> {
        if self.eat_word("exit") {
            let off = if self.eat("@") {
                self.signed_or_plain("offset")?
            } else {
                0
            };
            return Ok((Instruction::Exit { off }, None));
        }
        if self.eat_word("goto") {
            let (off, f) = self.target()?;
            return Ok((Instruction::Ja { off }, f));
        }
        if self.eat_word("gotol") {
            let (imm, f) = self.target()?;
            return Ok((Instruction::Gotol { imm }, f));
        }
        if self.eat_word("may_goto") {
            let (off, f) = self.target()?;
            return Ok((Instruction::MayGoto { off }, f));
        }
        if self.eat_word("call") {
            return self.call();
        }
        if self.eat_word("if") {
            return self.jump();
        }
        if self.eat_word("lock") {
            self.expect("*")?;
            let (size, _, dst, off) = self.mem(false)?;
            let op = if self.eat("+=") {
                AtomicAluOp::Add
            } else if self.eat("|=") {
                AtomicAluOp::Or
            } else if self.eat("&=") {
                AtomicAluOp::And
            } else if self.eat("^=") {
                AtomicAluOp::Xor
            } else {
                return self.expected("`+=`, `|=`, `&=` or `^=`");
            };
            let src = self.reg()?;
            let op = AtomicOp::Alu { op, fetch: false };
            return Ok((
                Instruction::Atomic {
                    size,
                    op,
                    dst,
                    src,
                    off,
                },
                None,
            ));
        }
        if self.eat_word("store_release") {
            self.expect("(")?;
            let (size, _, dst, off) = self.mem(false)?;
            self.expect(",")?;
            let src = self.reg()?;
            self.expect(")")?;
            let op = AtomicOp::StoreRelease;
            return Ok((
                Instruction::Atomic {
                    size,
                    op,
                    dst,
                    src,
                    off,
                },
                None,
            ));
        }
        if self.eat("*") {
            let (size, _, dst, off) = self.mem(false)?;
            self.expect("=")?;
            let src = match self.reg_any() {
                Some((r, false)) => Src::Reg(r),
                Some((_, true)) => return self.expected("a register r0..r10 or a number"),
                None => Src::Imm(self.imm32()?),
            };
            return Ok((
                Instruction::Store {
                    size,
                    dst,
                    off,
                    src,
                },
                None,
            ));
        }
        let Some((dst, w)) = self.reg_any() else {
            return self.expected("an instruction");
        };
        let width = if w { Width::W32 } else { Width::W64 };
        for (sym, op) in ALU_SYMBOLS {
            if self.eat(sym) {
                let src = match self.reg_any() {
                    Some((r, rw)) if rw == w => Src::Reg(r),
                    Some(_) => return self.expected("a register of the same width"),
                    None => Src::Imm(self.imm32()?),
                };
                return Ok((
                    Instruction::Alu {
                        width,
                        op,
                        dst,
                        src,
                    },
                    None,
                ));
            }
        }
        self.expect("=")?;
        self.assignment(dst, width).map(|i| (i, None))
    }

    fn call(&mut self) -> PResult<(Instruction, Option<Fixup>)> {
        self.ws();
        if self.rest().starts_with("pc+") || self.rest().starts_with("pc-") {
            let (imm, f) = self.target()?;
            return Ok((Instruction::Call(Call::Local(imm)), f));
        }
        let save = self.pos;
        let name_len = self
            .rest()
            .find(['#', ' ', '\t'])
            .unwrap_or(self.rest().len());
        let name = &self.rest()[..name_len];
        if name.is_empty() || !self.rest()[name_len..].starts_with('#') {
            // A label: a bpf-to-bpf call.
            let (imm, f) = self.target()?;
            return Ok((Instruction::Call(Call::Local(imm)), f));
        }
        self.pos += name_len + 1;
        let at = self.pos;
        let id = self.number()?;
        let id: i32 = self.ranged(id, at, "function id")?;
        let helper_name = u32::try_from(id)
            .ok()
            .and_then(|id| crate::uapi::HelperId(id).name());
        if helper_name == Some(name) || (name == "unknown" && helper_name.is_none()) {
            return Ok((Instruction::Call(Call::Helper(id)), None));
        }
        if crate::uapi::HelperId::from_name(name).is_some() {
            return Err(self.err_at(save, format!("helper `{name}` does not have id {id}")));
        }
        let btf_fd_idx = if self.eat("@") {
            self.signed_or_plain("BTF fd index")?
        } else {
            0
        };
        Ok((
            Instruction::Call(Call::Kfunc {
                btf_id: id,
                btf_fd_idx,
            }),
            None,
        ))
    }

    fn jump(&mut self) -> PResult<(Instruction, Option<Fixup>)> {
        let Some((dst, w)) = self.reg_any() else {
            return self.expected("a register");
        };
        let width = if w { Width::W32 } else { Width::W64 };
        self.ws();
        let Some(&(sym, op)) = JMP_SYMBOLS.iter().find(|(s, _)| self.rest().starts_with(s)) else {
            return self.expected("a comparison (==, !=, >, s<, &, ...)");
        };
        self.pos += sym.len();
        let src = match self.reg_any() {
            Some((r, rw)) if rw == w => Src::Reg(r),
            Some(_) => return self.expected("a register of the same width"),
            None => Src::Imm(self.imm32()?),
        };
        if !self.eat_word("goto") {
            return self.expected("`goto`");
        }
        let (off, f) = self.target()?;
        Ok((
            Instruction::Jump {
                width,
                op,
                dst,
                src,
                off,
            },
            f,
        ))
    }

    /// The right-hand side of `rD = ...`.
    fn assignment(&mut self, dst: u8, width: Width) -> PResult<Instruction> {
        let w64 = width == Width::W64;
        let save = self.pos;
        if self.eat("-") {
            self.ws();
            if self.rest().starts_with(['r', 'w']) {
                self.same_reg(dst, width)?;
                return Ok(Instruction::Neg { width, dst });
            }
            self.pos = save;
        }
        if self.eat("(") {
            let (size, signed) = self.size_name(true)?;
            if !signed || (size == Size::W && !w64) {
                return self.expected("(s8), (s16) or, for 64-bit moves, (s32)");
            }
            self.expect(")")?;
            let src = self.reg_of(width)?;
            let bits = (size.bytes() * 8) as u8;
            return Ok(Instruction::MovSx {
                width,
                dst,
                src,
                bits,
            });
        }
        if let Some((src, sw)) = self.reg_any() {
            if sw == w64 {
                return self.expected("a register of the same width");
            }
            return Ok(Instruction::Mov {
                width,
                dst,
                src: Src::Reg(src),
            });
        }
        if self.is_hex_next()
            || self
                .rest()
                .trim_start()
                .starts_with(|c: char| c.is_ascii_digit() || c == '-')
        {
            return self.constant(dst, width);
        }
        if !w64 {
            return self.expected("a register or a number");
        }
        if self.eat("*") {
            return self.load(dst);
        }
        let save = self.pos;
        let Some(word) = self.ident() else {
            return self.expected("an expression");
        };
        for (prefix, big) in [("be", Some(true)), ("le", Some(false)), ("bswap", None)] {
            if let Some(bits) = word.strip_prefix(prefix) {
                let Ok(bits @ (16 | 32 | 64)) = bits.parse::<u8>() else {
                    return Err(self.err_at(save, "expected a width of 16, 32 or 64".into()));
                };
                self.same_reg(dst, Width::W64)?;
                return Ok(match big {
                    Some(big) => Instruction::Endian { dst, big, bits },
                    None => Instruction::Bswap { dst, bits },
                });
            }
        }
        if word == "addr_space_cast" {
            self.expect("(")?;
            let src = self.reg()?;
            self.expect(",")?;
            let at = self.pos;
            let v = self.number()?;
            let dst_as = self.ranged(v, at, "address space")?;
            self.expect(",")?;
            let at = self.pos;
            let v = self.number()?;
            let src_as = self.ranged(v, at, "address space")?;
            self.expect(")")?;
            return Ok(Instruction::AddrSpaceCast {
                dst,
                src,
                dst_as,
                src_as,
            });
        }
        if word == "load_acquire" {
            self.expect("(")?;
            let (size, _, src, off) = self.mem(false)?;
            self.expect(")")?;
            let op = AtomicOp::LoadAcquire;
            return Ok(Instruction::Atomic {
                size,
                op,
                dst,
                src,
                off,
            });
        }
        if let Some(kind) = crate::instruction::Ld64Kind::ALL
            .into_iter()
            .find(|k| crate::disasm::ld64_kind_name(*k) == word && *k != Ld64Kind::Imm)
        {
            self.expect("[")?;
            let imm = self.imm32()?;
            self.expect("]")?;
            let next_imm = if self.eat("+") { self.imm32()? } else { 0 };
            return Ok(Instruction::LdImm64 {
                dst,
                kind,
                imm,
                next_imm,
            });
        }
        if let Some(rest) = word.strip_prefix("atomic") {
            return self.atomic_call(dst, rest, save);
        }
        self.pos = save;
        self.expected("an expression")
    }

    /// `rD = N`, `rD = 0x...` or `rD = N ll`.
    fn constant(&mut self, dst: u8, width: Width) -> PResult<Instruction> {
        let hex = self.is_hex_next();
        self.ws();
        let at = self.pos;
        let v = self.number()?;
        let ll = self.eat_word("ll");
        if (hex || ll) && width == Width::W64 {
            let v: u64 = if v < 0 {
                self.ranged::<i64>(v, at, "constant")? as u64
            } else {
                self.ranged(v, at, "constant")?
            };
            return Ok(Instruction::LdImm64 {
                dst,
                kind: Ld64Kind::Imm,
                imm: v as u32 as i32,
                next_imm: (v >> 32) as u32 as i32,
            });
        }
        if ll {
            return Err(self.err_at(at, "`ll` needs a 64-bit register".into()));
        }
        let imm = if hex {
            self.ranged::<u32>(v, at, "immediate")? as i32
        } else {
            self.ranged(v, at, "immediate")?
        };
        Ok(Instruction::Mov {
            width,
            dst,
            src: Src::Imm(imm),
        })
    }

    fn load(&mut self, dst: u8) -> PResult<Instruction> {
        self.expect("(")?;
        let (size, signed) = self.size_name(true)?;
        self.expect("*")?;
        self.expect(")")?;
        if self.eat_word("skb") {
            if dst != 0 || signed {
                return Err(self.err("packet loads are `r0 = *(u8|u16|u32 *)skb[...]`".into()));
            }
            self.expect("[")?;
            let insn = match self.reg_any() {
                Some((src, false)) => {
                    self.expect("+")?;
                    let imm = self.imm32()?;
                    Instruction::LdInd { size, src, imm }
                }
                Some((_, true)) => return self.expected("a register r0..r10"),
                None => Instruction::LdAbs {
                    size,
                    imm: self.imm32()?,
                },
            };
            self.expect("]")?;
            return Ok(insn);
        }
        self.expect("(")?;
        let src = self.reg()?;
        let off = self.signed("offset")?;
        self.expect(")")?;
        Ok(if signed {
            Instruction::LoadSx {
                size,
                dst,
                src,
                off,
            }
        } else {
            Instruction::Load {
                size,
                dst,
                src,
                off,
            }
        })
    }

    /// `atomic[64]_fetch_add((u64 *)(rD +off), rS)`, `_xchg`, `_cmpxchg`;
    /// `rest` is the word after `atomic`.
    fn atomic_call(&mut self, result: u8, rest: &str, at: usize) -> PResult<Instruction> {
        let (is64, name) = match rest.strip_prefix("64") {
            Some(name) => (true, name),
            None => (false, rest),
        };
        let op =
            match name {
                "_xchg" => AtomicOp::Xchg,
                "_cmpxchg" => AtomicOp::Cmpxchg,
                _ => {
                    let alu = name
                        .strip_prefix("_fetch_")
                        .and_then(|n| AtomicAluOp::ALL.into_iter().find(|op| op.name() == n));
                    match alu {
                        Some(op) => AtomicOp::Alu { op, fetch: true },
                        None => return Err(self.err_at(
                            at,
                            "expected atomic_fetch_{add,and,or,xor}, atomic_xchg or atomic_cmpxchg"
                                .into(),
                        )),
                    }
                }
            };
        self.expect("(")?;
        let (size, _, dst, off) = self.mem(false)?;
        if is64 != (size == Size::DW) {
            return Err(self.err_at(
                at,
                "`atomic64_` goes with u64 and `atomic_` with u32".into(),
            ));
        }
        self.expect(",")?;
        if op == AtomicOp::Cmpxchg {
            if result != 0 {
                return Err(self.err_at(0, "cmpxchg returns into r0".into()));
            }
            self.same_reg(0, Width::W64)?;
            self.expect(",")?;
            let src = self.reg()?;
            self.expect(")")?;
            return Ok(Instruction::Atomic {
                size,
                op,
                dst,
                src,
                off,
            });
        }
        self.same_reg(result, Width::W64)?;
        self.expect(")")?;
        Ok(Instruction::Atomic {
            size,
            op,
            dst,
            src: result,
            off,
        })
    }
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

fn is_keyword(word: &str) -> bool {
    matches!(
        word,
        "exit" | "goto" | "gotol" | "may_goto" | "call" | "if" | "lock" | "store_release"
    )
}
