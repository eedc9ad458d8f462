//! Which files to verify: object files named on the command line, and
//! `*.o` files found recursively under named directories. Only 64-bit
//! relocatable ELF files for BPF (or, from old LLVM, no machine) count,
//! as veristat checks.

use std::path::{Path, PathBuf};

pub fn expand_paths(paths: &[PathBuf]) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out)?;
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for e in entries {
        if e.is_dir() {
            walk(&e, out)?;
        } else if e.extension().is_some_and(|x| x == "o") {
            out.push(e);
        }
    }
    Ok(())
}

/// ELF64, little or big endian, ET_REL, e_machine EM_BPF (247) or EM_NONE.
pub fn is_bpf_object(bytes: &[u8]) -> bool {
    if bytes.len() < 20 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 {
        return false;
    }
    let le = bytes[5] == 1;
    let rd16 = |o: usize| {
        let b = [bytes[o], bytes[o + 1]];
        if le {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        }
    };
    rd16(16) == 1 && matches!(rd16(18), 0 | 247)
}

/// The name veristat shows for a file: its last path component.
pub fn display_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_bpf_relocatable_objects() {
        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = 2;
        elf[5] = 1;
        elf[16] = 1;
        elf[18] = 247;
        assert!(is_bpf_object(&elf));
        elf[18] = 62; // x86-64
        assert!(!is_bpf_object(&elf));
        elf[18] = 0;
        assert!(is_bpf_object(&elf));
        elf[16] = 2; // executable
        assert!(!is_bpf_object(&elf));
        assert!(!is_bpf_object(b"not an elf"));
    }
}
