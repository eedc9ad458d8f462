//! The verifier log in the kernel's format: instruction lines
//! (`12: (61) r0 = *(u32 *)(r1 +76)`), register state lines, and the
//! messages of a failure. Level 1 keeps only the path to the error (pending
//! paths truncate it back), level 2 keeps everything.

use crate::regs::{Reg, RegType};
use crate::scalar::ScalarLogInfo;
use crate::state::State;
use bpfvet_isa::disasm::write_log_line;
use bpfvet_isa::Insn;
use bpfvet_object::Program;
use std::fmt::Write;

pub struct Log {
    pub level: u32,
    /// (name, key size, value size) of each map, for `map=...` in states.
    pub maps: Vec<(String, u32, u32)>,
    buf: String,
    last_line_info: Option<usize>,
}

impl Log {
    pub fn new(level: u32) -> Log {
        Log {
            level,
            maps: Vec::new(),
            buf: String::new(),
            last_line_info: None,
        }
    }
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    pub fn truncate(&mut self, n: usize) {
        self.buf.truncate(n);
        self.last_line_info = None;
    }
    pub fn line(&mut self, s: &str) {
        if self.level == 0 {
            return;
        }
        self.buf.push_str(s);
        self.buf.push('\n');
    }
    pub fn into_string(self) -> String {
        self.buf
    }

    /// `; <source line> @ file:line` before the first instruction of a line,
    /// then the instruction.
    pub fn insn(&mut self, prog: &Program, insns: &[Insn], idx: usize) {
        if let Ok(li) = prog
            .line_info
            .binary_search_by(|l| l.insn_off.cmp(&(idx as u32)))
        {
            if self.last_line_info != Some(li) {
                let l = &prog.line_info[li];
                let file = l.file_name.rsplit('/').next().unwrap_or(&l.file_name);
                let _ = writeln!(self.buf, "; {} @ {}:{}", l.line_text.trim(), file, l.line);
                self.last_line_info = Some(li);
            }
        }
        match bpfvet_isa::decode_at(insns, idx) {
            Ok(ins) => {
                let _ = write_log_line(&mut self.buf, idx, &ins, &KfuncNames);
            }
            Err(_) => {
                let _ = write!(self.buf, "{idx}: ({:02x}) ?", insns[idx].code);
            }
        }
        self.buf.push('\n');
    }

    /// ` R1=ctx() R10=fp0` for the current frame.
    pub fn state_str(&self, st: &State, _all: bool) -> String {
        let mut s = String::new();
        let f = st.frame();
        if st.frames.len() > 1 {
            let _ = write!(s, " frame{}:", st.curframe());
        }
        for (i, r) in f.regs.iter().enumerate() {
            if r.ty == RegType::NotInit {
                continue;
            }
            let _ = write!(s, " R{i}={}", reg_str(r, &self.maps));
        }
        for (spi, slot) in f.stack.iter().enumerate() {
            let off = -((spi as i32 + 1) * 8);
            if let Some(d) = crate::dynptr::slot_dynptr(slot) {
                // Printed once, at the dynptr's first slot.
                if d.first {
                    let _ = write!(s, " fp{off}={}", crate::dynptr::dynptr_log_str(&d));
                }
            } else if slot.is_spill() {
                let _ = write!(s, " fp{off}={}", reg_str(&slot.spilled, &self.maps));
            } else if slot.is_iter() {
                if let Some(it) = crate::iter::slot_str(slot) {
                    let _ = write!(s, " fp{off}={it}");
                }
            } else if slot
                .types
                .iter()
                .any(|t| *t != crate::state::SlotType::Invalid)
            {
                let t: String = slot.types.iter().map(|t| t.ch()).collect();
                let _ = write!(s, " fp{off}={t}");
            }
        }
        // Held references, as the kernel lists them after the frames.
        let refs: Vec<String> = st.refs.iter().map(|r| r.id.to_string()).collect();
        if !refs.is_empty() {
            let _ = write!(s, " refs={}", refs.join(","));
        }
        s
    }
}

/// One register in the log's notation: `ctx()`, `fp-8`, `map_value(map=...)`, `5`.
pub fn reg_str(r: &Reg, maps: &[(String, u32, u32)]) -> String {
    match r.ty {
        RegType::Scalar => r.v.log_string(ScalarLogInfo {
            precise: r.precise,
            id: r.id & !crate::prune::ADD_CONST,
            linked_off: None,
        }),
        RegType::Stack => format!("fp{}", r.off),
        _ => {
            let mut s = r.type_str();
            s.push('(');
            let mut parts = Vec::new();
            if r.id != 0 {
                parts.push(format!("id={}", r.id));
            }
            if r.ref_obj_id != 0 {
                parts.push(format!("ref_obj_id={}", r.ref_obj_id));
            }
            if r.off != 0 {
                parts.push(format!("off={}", r.off));
            }
            if r.ty.is_pkt() {
                parts.push(format!("r={}", r.aux as i32));
            } else if matches!(r.ty, RegType::MapPtr | RegType::MapKey | RegType::MapValue) {
                let idx = (r.map & !crate::explore::INNER_MAP) as usize;
                if let Some((name, ks, vs)) = maps.get(idx) {
                    parts.push(format!("map={name},ks={ks},vs={vs}"));
                }
            } else if r.ty == RegType::Mem && r.aux != 0 {
                parts.push(format!("sz={}", r.aux));
            } else if let Some(kind) = crate::dynptr::const_dynptr_kind(r) {
                parts.push(format!("type={kind}"));
            }
            if !r.v.is_const() {
                let sc = r.v.log_string(ScalarLogInfo::default());
                if let Some(inner) = sc.strip_prefix("scalar(").and_then(|x| x.strip_suffix(')')) {
                    if !inner.is_empty() {
                        parts.push(inner.to_string());
                    }
                }
            }
            s.push_str(&parts.join(","));
            s.push(')');
            s
        }
    }
}

/// Kfunc names from the host's vmlinux BTF, as the kernel prints them.
struct KfuncNames;

impl bpfvet_isa::disasm::Symbols for KfuncNames {
    fn kfunc_name(&self, btf_id: i32, btf_fd_idx: i16) -> Option<&str> {
        if btf_fd_idx != 0 {
            return None;
        }
        let btf = crate::btf_walk::vmlinux()?;
        let t = btf.type_by_id(btf_id as u32)?;
        (t.kind == bpfvet_object::btf::Kind::Func).then(|| btf.name(t))
    }
}
