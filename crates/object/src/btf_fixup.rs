//! The fix-ups libbpf applies to an object's BTF before BPF_BTF_LOAD: clang
//! leaves DATASEC sizes and variable offsets at zero, so they are filled in
//! from the ELF sections and symbols; hidden globals become static VARs and
//! FUNCs; DATASEC entries are sorted by offset.

use object::elf;

use crate::btf::{Btf, Kind, BTF_FUNC_STATIC, BTF_VAR_GLOBAL_EXTERN, BTF_VAR_STATIC};
use crate::elf::ElfFile;

fn put(raw: &mut [u8], at: usize, v: u32) {
    raw[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Returns the fixed-up raw BTF, or a reason naming the DATASEC at fault.
pub fn fixup(btf: &Btf, elf: &ElfFile) -> Result<Vec<u8>, String> {
    let mut raw = btf.raw_bytes().to_vec();
    for id in btf.ids() {
        let t = btf.type_by_id(id).expect("id in range");
        match t.kind {
            Kind::Datasec => fixup_datasec(btf, elf, id, &mut raw)?,
            Kind::Func => {
                // A global function with hidden visibility is static to the
                // kernel, as libbpf marks it.
                let name = btf.name(t);
                let hidden = elf.symbols.iter().any(|s| {
                    s.typ == elf::STT_FUNC
                        && s.bind != elf::STB_LOCAL
                        && s.is_hidden()
                        && s.name == name
                });
                if hidden {
                    let at = btf.record_offset(id).expect("valid id") + 4;
                    let info = u32::from_le_bytes(raw[at..at + 4].try_into().expect("4 bytes"));
                    put(&mut raw, at, (info & !0xffff) | BTF_FUNC_STATIC);
                }
            }
            _ => {}
        }
    }
    Ok(raw)
}

fn fixup_datasec(btf: &Btf, elf: &ElfFile, id: u32, raw: &mut [u8]) -> Result<(), String> {
    let t = btf.type_by_id(id).expect("id in range");
    let sec_name = btf.name(t);
    let rec = btf.record_offset(id).expect("valid id");
    let mut vars = btf.datasec_vars(t).to_vec();
    if sec_name != ".kconfig" && sec_name != ".ksyms" {
        let mut fix_offsets = false;
        if t.size_or_type == 0 {
            let size = elf
                .section_by_name(sec_name)
                .map(|(_, s)| s.size)
                .filter(|&s| s > 0 && s <= u32::MAX as u64)
                .ok_or_else(|| {
                    format!("DATASEC '{sec_name}': no ELF section to take its size from")
                })?;
            put(raw, rec + 8, size as u32);
            fix_offsets = true;
        }
        for (i, v) in vars.iter_mut().enumerate() {
            let var = btf
                .type_by_id(v.type_id)
                .filter(|vt| vt.kind == Kind::Var)
                .ok_or_else(|| format!("DATASEC '{sec_name}': entry {i} is not a VAR"))?;
            let linkage = var.linkage();
            if linkage == BTF_VAR_STATIC || linkage == BTF_VAR_GLOBAL_EXTERN {
                continue;
            }
            let var_name = btf.name(var);
            let sym = elf
                .symbols
                .iter()
                .find(|s| {
                    s.typ == elf::STT_OBJECT
                        && (s.bind == elf::STB_GLOBAL || s.bind == elf::STB_WEAK)
                        && s.name == var_name
                })
                .ok_or_else(|| {
                    format!("DATASEC '{sec_name}': no ELF symbol for VAR '{var_name}'")
                })?;
            if fix_offsets {
                v.offset = sym.value as u32;
            }
            if sym.is_hidden() {
                let var_rec = btf.record_offset(v.type_id).expect("valid id");
                put(raw, var_rec + 12, BTF_VAR_STATIC);
            }
        }
    }
    vars.sort_by_key(|v| v.offset);
    for (i, v) in vars.iter().enumerate() {
        let at = rec + 12 + 12 * i;
        put(raw, at, v.type_id);
        put(raw, at + 4, v.offset);
        put(raw, at + 8, v.size);
    }
    Ok(())
}
