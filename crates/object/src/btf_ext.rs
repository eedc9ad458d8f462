//! `.BTF.ext`: per-section func_info, line_info and CO-RE relocation records
//! emitted by clang. Offsets are bytes within the code section; names are
//! offsets into the `.BTF` string section.

use crate::btf::{Btf, BTF_MAGIC};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FuncRec {
    pub insn_off: u32,
    pub type_id: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineRec {
    pub insn_off: u32,
    pub file_name_off: u32,
    pub line_off: u32,
    /// line << 10 | column.
    pub line_col: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoreReloRec {
    pub insn_off: u32,
    pub type_id: u32,
    pub access_str_off: u32,
    pub kind: u32,
}

/// The records of one code section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtSection<T> {
    pub sec_name: String,
    pub records: Vec<T>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BtfExt {
    pub func_info: Vec<ExtSection<FuncRec>>,
    pub line_info: Vec<ExtSection<LineRec>>,
    pub core_relos: Vec<ExtSection<CoreReloRec>>,
}

fn rd(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at.checked_add(4)?)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

impl BtfExt {
    pub fn parse(bytes: &[u8], btf: &Btf) -> Result<BtfExt, String> {
        if bytes.len() < 8 {
            return Err("shorter than its header".into());
        }
        let magic = u16::from_le_bytes([bytes[0], bytes[1]]);
        if magic != BTF_MAGIC {
            return Err(format!("bad magic {magic:#06x}"));
        }
        if bytes[2] != 1 {
            return Err(format!("unsupported version {}", bytes[2]));
        }
        let hdr_len = rd(bytes, 4).unwrap_or(0) as usize;
        if !(24..=bytes.len()).contains(&hdr_len) {
            return Err(format!("bad header length {hdr_len}"));
        }
        let data = &bytes[hdr_len..];
        let hdr_field = |i: usize| rd(bytes, 8 + 4 * i).unwrap_or(0) as usize;
        let sub = |off: usize, len: usize, what: &str| -> Result<&[u8], String> {
            off.checked_add(len)
                .and_then(|end| data.get(off..end))
                .ok_or_else(|| format!("{what} outside the section"))
        };
        let func = sub(hdr_field(0), hdr_field(1), "func_info")?;
        let line = sub(hdr_field(2), hdr_field(3), "line_info")?;
        // The CO-RE part of the header exists only if the header is long enough.
        let core = if hdr_len >= 32 {
            sub(hdr_field(4), hdr_field(5), "core_relo")?
        } else {
            &[]
        };
        Ok(BtfExt {
            func_info: parse_info(func, 8, btf, "func_info", |r: [u32; 2]| FuncRec {
                insn_off: r[0],
                type_id: r[1],
            })?,
            line_info: parse_info(line, 16, btf, "line_info", |r: [u32; 4]| LineRec {
                insn_off: r[0],
                file_name_off: r[1],
                line_off: r[2],
                line_col: r[3],
            })?,
            core_relos: parse_info(core, 16, btf, "core_relo", |r: [u32; 4]| CoreReloRec {
                insn_off: r[0],
                type_id: r[1],
                access_str_off: r[2],
                kind: r[3],
            })?,
        })
    }
}

/// One info block: a record size, then per section {name, count, records}.
fn parse_info<T, const N: usize>(
    b: &[u8],
    min_rec: usize,
    btf: &Btf,
    what: &str,
    make: impl Fn([u32; N]) -> T,
) -> Result<Vec<ExtSection<T>>, String>
where
    [u32; N]: Default,
{
    let mut out = Vec::new();
    if b.is_empty() {
        return Ok(out);
    }
    let rec_size = rd(b, 0).ok_or_else(|| format!("{what}: truncated"))? as usize;
    if rec_size < min_rec || !rec_size.is_multiple_of(4) {
        return Err(format!("{what}: bad record size {rec_size}"));
    }
    let mut pos = 4;
    while pos < b.len() {
        let name_off = rd(b, pos).ok_or_else(|| format!("{what}: truncated section header"))?;
        let n = rd(b, pos + 4).ok_or_else(|| format!("{what}: truncated section header"))? as usize;
        pos += 8;
        let sec_name = btf
            .str_at(name_off)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| format!("{what}: bad section name offset {name_off}"))?
            .to_owned();
        if n == 0 {
            return Err(format!("{what}: section '{sec_name}' has no records"));
        }
        let len = n
            .checked_mul(rec_size)
            .filter(|l| pos + l <= b.len())
            .ok_or_else(|| format!("{what}: section '{sec_name}' records truncated"))?;
        let mut records = Vec::with_capacity(n);
        for i in 0..n {
            let at = pos + i * rec_size;
            let mut w: [u32; N] = Default::default();
            for (k, slot) in w.iter_mut().enumerate() {
                *slot = rd(b, at + 4 * k).unwrap_or(0);
            }
            records.push(make(w));
        }
        pos += len;
        out.push(ExtSection { sec_name, records });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btf::tests::Builder;

    fn words(ws: &[u32]) -> Vec<u8> {
        ws.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn parses_line_info_and_rejects_truncation() {
        let mut b = Builder::new();
        let sec = b.s("xdp");
        let file = b.s("a.c");
        let btf = Btf::from_bytes(&b.build()).unwrap();
        let line = words(&[
            16,
            sec,
            2,
            0,
            file,
            file,
            (7 << 10) | 3,
            8,
            file,
            file,
            8 << 10,
        ]);
        let mut ext = words(&[0, 32, 0, 0, 0, line.len() as u32, 0, 0]);
        ext[0..4].copy_from_slice(&[0x9f, 0xeb, 1, 0]);
        ext[4..8].copy_from_slice(&32u32.to_le_bytes());
        ext.extend_from_slice(&line);
        let parsed = BtfExt::parse(&ext, &btf).unwrap();
        assert_eq!(parsed.line_info.len(), 1);
        assert_eq!(parsed.line_info[0].sec_name, "xdp");
        assert_eq!(parsed.line_info[0].records[1].insn_off, 8);
        assert_eq!(parsed.line_info[0].records[0].line_col >> 10, 7);
        let cut = &ext[..ext.len() - 4];
        assert!(BtfExt::parse(cut, &btf).is_err());
    }
}
