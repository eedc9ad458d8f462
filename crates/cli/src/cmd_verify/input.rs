//! Which files to verify: object files named on the command line, and
//! `*.o` files found recursively under named directories. Only 64-bit
//! relocatable ELF files for BPF (or, from old LLVM, no machine) count,
//! as veristat checks.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// One file to read, and whether the user named it (a named file that is
/// not a BPF object is an error; one found in a directory is skipped).
#[derive(Clone, Debug)]
pub struct Input {
    pub path: PathBuf,
    pub named: bool,
    /// Index of the command-line path it came from.
    pub origin: usize,
}

/// The named paths, directories replaced by the `*.o` files under them.
/// Directory walks follow symlinks but enter each directory and list each
/// file once (by canonical path), so symlink loops end. A named path that
/// does not exist is an error.
pub fn expand_inputs(paths: &[PathBuf]) -> std::io::Result<Vec<Input>> {
    let mut out = Vec::new();
    for (origin, p) in paths.iter().enumerate() {
        let meta = std::fs::metadata(p).map_err(|e| named_error(p, e))?;
        if meta.is_dir() {
            // Per named path: a directory named twice is walked twice.
            let mut seen = HashSet::new();
            walk(p, origin, &mut seen, &mut out).map_err(|e| named_error(p, e))?;
        } else {
            out.push(Input {
                path: p.clone(),
                named: true,
                origin,
            });
        }
    }
    Ok(out)
}

fn named_error(p: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("'{}': {e}", p.display()))
}

fn walk(
    dir: &Path,
    origin: usize,
    seen: &mut HashSet<PathBuf>,
    out: &mut Vec<Input>,
) -> std::io::Result<()> {
    let canonical = std::fs::canonicalize(dir)?;
    if !seen.insert(canonical) {
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for e in entries {
        if e.is_dir() {
            walk(&e, origin, seen, out)?;
        } else if e.extension().is_some_and(|x| x == "o") {
            // A dangling link has no canonical path: listed, then reported.
            let key = std::fs::canonicalize(&e).unwrap_or_else(|_| e.clone());
            if seen.insert(key) {
                out.push(Input {
                    path: e,
                    named: false,
                    origin,
                });
            }
        }
    }
    Ok(())
}

/// Why `bytes` are not a BPF object, in words for an error message.
pub fn not_bpf_object_reason(bytes: &[u8]) -> Option<&'static str> {
    if bytes.is_empty() {
        return Some("the file is empty");
    }
    if bytes.len() < 20 || &bytes[..4] != b"\x7fELF" {
        return Some("not an ELF file");
    }
    if is_bpf_object(bytes) {
        return None;
    }
    Some("an ELF file, but not a 64-bit relocatable object for BPF (built for another machine?)")
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
