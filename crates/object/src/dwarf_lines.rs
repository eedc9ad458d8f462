//! Line info from DWARF `.debug_line`, for objects built with `-g` but
//! without BTF line_info (older Cilium objects): each program instruction
//! gets the file and line of the line-table row covering its section
//! offset. `line_text` stays empty (DWARF has no source text).

use crate::types::{LineInfo, Program};
use gimli::{AttributeValue, EndianSlice, LittleEndian, RelocateReader};
use object::{Object as _, ObjectSection as _, ObjectSymbol as _, RelocationTarget};
use std::collections::HashMap;
use std::rc::Rc;

/// Addresses in a relocatable object are section offsets; the section a
/// sequence's address relocates against is kept above this bit.
const SECTION_SHIFT: u32 = 40;

/// A relocation's target: (section index, symbol value, explicit addend
/// or None when the addend is in place).
type Target = (u64, u64, Option<i64>);

/// Relocations of `.debug_line` by offset.
#[derive(Clone, Debug)]
struct Relocs(Rc<HashMap<usize, Target>>);

impl gimli::Relocate for Relocs {
    fn relocate_address(&self, offset: usize, value: u64) -> gimli::Result<u64> {
        Ok(match self.0.get(&offset) {
            Some(&(sec, sym, addend)) => {
                let addr = sym.wrapping_add(addend.map_or(value, |a| a as u64));
                (sec << SECTION_SHIFT) | (addr & ((1 << SECTION_SHIFT) - 1))
            }
            None => value,
        })
    }

    fn relocate_offset(&self, _offset: usize, value: usize) -> gimli::Result<usize> {
        Ok(value)
    }
}

type Reader<'a> = RelocateReader<EndianSlice<'a, LittleEndian>, Relocs>;

/// One row: section offset, and (file, line) or None at a sequence's end.
type Row = (u64, Option<(Rc<str>, u32)>);

/// A NUL-terminated string at `off` of a string section.
fn str_at(data: &[u8], off: usize) -> Option<String> {
    let rest = data.get(off..)?;
    let end = rest.iter().position(|&b| b == 0)?;
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

fn attr_text(v: AttributeValue<Reader<'_>>, debug_str: &[u8], line_str: &[u8]) -> Option<String> {
    match v {
        AttributeValue::String(r) => {
            use gimli::Reader as _;
            r.to_string_lossy().ok().map(|s| s.into_owned())
        }
        AttributeValue::DebugStrRef(o) => str_at(debug_str, o.0),
        AttributeValue::DebugLineStrRef(o) => str_at(line_str, o.0),
        _ => None,
    }
}

/// Rows per section name, sorted by offset.
fn line_rows(data: &[u8]) -> Option<HashMap<String, Vec<Row>>> {
    let file = object::File::parse(data).ok()?;
    let section = file.section_by_name(".debug_line")?;
    let lines = section.data().ok()?;
    let mut relocs = HashMap::new();
    for (off, r) in section.relocations() {
        if let RelocationTarget::Symbol(si) = r.target() {
            let Ok(sym) = file.symbol_by_index(si) else {
                continue;
            };
            if let Some(sec) = sym.section_index() {
                let addend = (!r.has_implicit_addend()).then(|| r.addend());
                relocs.insert(off as usize, (sec.0 as u64, sym.address(), addend));
            }
        }
    }
    let string_section = |name: &str| {
        file.section_by_name(name)
            .and_then(|s| s.data().ok())
            .unwrap_or(&[])
    };
    let (debug_str, line_str) = (
        string_section(".debug_str"),
        string_section(".debug_line_str"),
    );
    let relocs = Relocs(Rc::new(relocs));
    let reader = RelocateReader::new(EndianSlice::new(lines, LittleEndian), relocs);
    let debug_line = gimli::DebugLine::from(reader);
    let mut by_section: HashMap<u64, Vec<Row>> = HashMap::new();
    let mut names: HashMap<(u64, u64), Rc<str>> = HashMap::new();
    // Each unit's line program follows the previous one (32-bit DWARF).
    let mut at = 0usize;
    while at + 4 <= lines.len() {
        let unit_len = u32::from_le_bytes(lines[at..at + 4].try_into().ok()?) as usize;
        if unit_len == 0 || unit_len >= 0xffff_fff0 {
            break;
        }
        let program = debug_line
            .program(gimli::DebugLineOffset(at), 8, None, None)
            .ok()?;
        let mut rows = program.rows();
        while let Ok(Some((header, row))) = rows.next_row() {
            let sec = row.address() >> SECTION_SHIFT;
            let off = row.address() & ((1 << SECTION_SHIFT) - 1);
            let entry = if row.end_sequence() {
                None
            } else {
                let name = names
                    .entry((at as u64, row.file_index()))
                    .or_insert_with(|| {
                        let f = row.file(header);
                        let file = f
                            .and_then(|f| attr_text(f.path_name(), debug_str, line_str))
                            .unwrap_or_else(|| "?".into());
                        let dir = f
                            .and_then(|f| f.directory(header))
                            .and_then(|d| attr_text(d, debug_str, line_str));
                        match dir {
                            Some(d) if !file.starts_with('/') && !d.is_empty() => {
                                format!("{d}/{file}").into()
                            }
                            _ => file.into(),
                        }
                    })
                    .clone();
                Some((name, row.line().map_or(0, |l| l.get() as u32)))
            };
            by_section.entry(sec).or_default().push((off, entry));
        }
        at += 4 + unit_len;
    }
    let mut out = HashMap::new();
    for (sec, mut rows) in by_section {
        // A sequence's end sorts before a row at the same offset.
        rows.sort_by_key(|(off, e)| (*off, e.is_some()));
        let Ok(s) = file.section_by_index(object::SectionIndex(sec as usize)) else {
            continue;
        };
        if let Ok(name) = s.name() {
            out.insert(name.to_string(), rows);
        }
    }
    Some(out)
}

/// Line info for `prog` from the DWARF line table of the object `data`,
/// one entry where the (file, line) changes; empty without one.
pub fn dwarf_line_info(data: &[u8], prog: &Program) -> Vec<LineInfo> {
    let Some(rows) = line_rows(data) else {
        return Vec::new();
    };
    let mut out: Vec<LineInfo> = Vec::new();
    for p in &prog.placement {
        let Some(rows) = rows.get(&p.section) else {
            continue;
        };
        for j in 0..p.len {
            let off = ((p.section_insn + j) * 8) as u64;
            let k = rows.partition_point(|(o, _)| *o <= off);
            let place = k.checked_sub(1).and_then(|k| rows[k].1.as_ref());
            let (file, line) = match place {
                Some((f, l)) => (f.to_string(), *l),
                None => ("?".to_string(), 0),
            };
            let same = out
                .last()
                .is_some_and(|l| l.file_name == file && l.line == line);
            if !same {
                out.push(LineInfo {
                    insn_off: (p.insn + j) as u32,
                    file_name_off: 0,
                    line_off: 0,
                    file_name: file,
                    line_text: String::new(),
                    line,
                    column: 0,
                });
            }
        }
    }
    out
}
