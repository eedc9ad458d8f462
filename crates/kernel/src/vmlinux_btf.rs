//! A minimal reader of the kernel's own BTF (/sys/kernel/btf/vmlinux): just
//! enough to find a type id by name and kind, which is how the attach target
//! of tp_btf/, iter/, fentry/, fexit/, fmod_ret/ and lsm/ programs is named
//! to BPF_PROG_LOAD (`attach_btf_id`).

use std::collections::HashMap;

pub const KIND_TYPEDEF: u32 = 8;
pub const KIND_FUNC: u32 = 12;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BtfError {
    #[error("BTF is too short ({0} bytes)")]
    Truncated(usize),
    #[error("bad BTF magic {0:#06x}")]
    BadMagic(u16),
    #[error("BTF section offsets out of bounds")]
    BadLayout,
    #[error("unknown BTF kind {kind} at type id {id}")]
    UnknownKind { id: u32, kind: u32 },
}

/// Name -> type ids, for the kinds attach targets use.
#[derive(Debug, Default)]
pub struct VmlinuxBtf {
    by_name: HashMap<(u32, String), u32>,
}

impl VmlinuxBtf {
    pub fn parse(data: &[u8]) -> Result<VmlinuxBtf, BtfError> {
        let rd32 = |off: usize| -> Result<u32, BtfError> {
            data.get(off..off + 4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .ok_or(BtfError::Truncated(data.len()))
        };
        if data.len() < 24 {
            return Err(BtfError::Truncated(data.len()));
        }
        let magic = u16::from_le_bytes([data[0], data[1]]);
        if magic != 0xeb9f {
            return Err(BtfError::BadMagic(magic));
        }
        let hdr_len = rd32(4)? as usize;
        let type_off = rd32(8)? as usize;
        let type_len = rd32(12)? as usize;
        let str_off = rd32(16)? as usize;
        let str_len = rd32(20)? as usize;
        let span = |off: usize, len: usize| {
            hdr_len
                .checked_add(off)
                .and_then(|s| s.checked_add(len).map(|e| (s, e)))
                .filter(|&(_, e)| e <= data.len())
                .ok_or(BtfError::BadLayout)
        };
        let (ts, te) = span(type_off, type_len)?;
        let (ss, se) = span(str_off, str_len)?;
        let strings = &data[ss..se];
        let name_at = |off: u32| -> Option<&str> {
            let rest = strings.get(off as usize..)?;
            let end = rest.iter().position(|&b| b == 0)?;
            std::str::from_utf8(&rest[..end]).ok()
        };

        let mut by_name = HashMap::new();
        let mut pos = ts;
        let mut id = 1u32;
        while pos < te {
            let name_off = rd32(pos)?;
            let info = rd32(pos + 4)?;
            let kind = (info >> 24) & 0x1f;
            let vlen = (info & 0xffff) as usize;
            let extra = match kind {
                1 | 14 | 17 => 4,
                2 | 7..=12 | 16 | 18 => 0,
                3 => 12,
                4 | 5 | 15 | 19 => vlen * 12,
                6 | 13 => vlen * 8,
                _ => return Err(BtfError::UnknownKind { id, kind }),
            };
            if kind == KIND_FUNC || kind == KIND_TYPEDEF {
                if let Some(name) = name_at(name_off).filter(|n| !n.is_empty()) {
                    by_name.entry((kind, name.to_string())).or_insert(id);
                }
            }
            pos += 12 + extra;
            id += 1;
        }
        if pos != te {
            return Err(BtfError::BadLayout);
        }
        Ok(VmlinuxBtf { by_name })
    }

    pub fn find(&self, name: &str, kind: u32) -> Option<u32> {
        self.by_name.get(&(kind, name.to_string())).copied()
    }

    /// The BTF type libbpf resolves for a program's attach target: for
    /// tp_btf the `btf_trace_<tp>` typedef, for iter the `bpf_iter_<name>`
    /// function, for lsm the `bpf_lsm_<hook>` function, else the function.
    pub fn attach_target_id(&self, section: &str, target: &str) -> Option<u32> {
        let prefix = section.split('/').next().unwrap_or("");
        match prefix {
            "tp_btf" => self.find(&format!("btf_trace_{target}"), KIND_TYPEDEF),
            "iter" | "iter.s" => self.find(&format!("bpf_iter_{target}"), KIND_FUNC),
            "lsm" | "lsm.s" | "lsm_cgroup" => self.find(&format!("bpf_lsm_{target}"), KIND_FUNC),
            _ => self.find(target, KIND_FUNC),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A BTF blob with: [1] int "int", [2] FUNC_PROTO (1 param),
    /// [3] FUNC "foo", [4] TYPEDEF "btf_trace_bar".
    fn tiny_btf() -> Vec<u8> {
        let strings = b"\0int\0foo\0btf_trace_bar\0".to_vec();
        let mut types = Vec::new();
        let mut ty = |name: u32, info: u32, size: u32, extra: &[u32]| {
            for w in [name, info, size].iter().chain(extra) {
                types.extend_from_slice(&w.to_le_bytes());
            }
        };
        ty(1, 1 << 24, 4, &[32]);
        ty(0, (13 << 24) | 1, 1, &[0, 1]);
        ty(5, 12 << 24, 2, &[]);
        ty(9, 8 << 24, 1, &[]);
        let mut out = Vec::new();
        out.extend_from_slice(&0xeb9fu16.to_le_bytes());
        out.extend_from_slice(&[1, 0]);
        for w in [
            24u32,
            0,
            types.len() as u32,
            types.len() as u32,
            strings.len() as u32,
        ] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(&types);
        out.extend_from_slice(&strings);
        out
    }

    #[test]
    fn finds_functions_and_typedefs_by_name() {
        let btf = VmlinuxBtf::parse(&tiny_btf()).unwrap();
        assert_eq!(btf.find("foo", KIND_FUNC), Some(3));
        assert_eq!(btf.find("foo", KIND_TYPEDEF), None);
        assert_eq!(btf.attach_target_id("tp_btf/bar", "bar"), Some(4));
        assert_eq!(btf.attach_target_id("fentry/foo", "foo"), Some(3));
        assert_eq!(btf.attach_target_id("iter/foo", "foo"), None);
    }

    #[test]
    fn malformed_blobs_are_errors() {
        assert_eq!(
            VmlinuxBtf::parse(&[0; 4]).unwrap_err(),
            BtfError::Truncated(4)
        );
        let mut bad = tiny_btf();
        bad[0] = 0;
        assert!(matches!(
            VmlinuxBtf::parse(&bad),
            Err(BtfError::BadMagic(_))
        ));
        let mut short = tiny_btf();
        short.truncate(30);
        assert_eq!(VmlinuxBtf::parse(&short).unwrap_err(), BtfError::BadLayout);
    }
}
