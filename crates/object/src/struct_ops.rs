//! struct_ops maps (`.struct_ops` and `.struct_ops.link` sections): which
//! member of which struct_ops type each program implements. libbpf reads
//! it from the section's BTF variables (one per map, typed as the struct)
//! and the relocations that store a program in a function-pointer member;
//! the kernel verifies the program against that member's prototype.

use crate::btf::{Btf, Kind};
use crate::elf::ElfFile;
use crate::types::StructOpsMember;

/// The sections libbpf reads struct_ops maps from (`?` marks a map that is
/// not created unless asked for).
const SECTIONS: &[&str] = &[
    ".struct_ops",
    ".struct_ops.link",
    "?.struct_ops",
    "?.struct_ops.link",
];

/// The member each struct_ops program is stored in, by the program's
/// function symbol name, in section and relocation order. A program stored
/// in several members is listed once per member.
pub(crate) fn members(elf: &ElfFile, btf: Option<&Btf>) -> Vec<(String, StructOpsMember)> {
    let mut out = Vec::new();
    let Some(btf) = btf else {
        return out;
    };
    for (shndx, sec) in elf.sections.iter().enumerate() {
        if !SECTIONS.contains(&sec.name.as_str()) {
            continue;
        }
        let datasec = btf
            .find_by_name_kind(&sec.name, Kind::Datasec)
            .and_then(|id| btf.type_by_id(id));
        let Some(datasec) = datasec else {
            continue;
        };
        for rel in elf.rels.get(shndx).map_or(&[][..], |r| r.as_slice()) {
            let Some(sym) = elf.symbols.get(rel.sym as usize) else {
                continue;
            };
            let var = btf.datasec_vars(datasec).iter().find(|v| {
                u64::from(v.offset) <= rel.offset && rel.offset < u64::from(v.offset + v.size)
            });
            let Some(var) = var else {
                continue;
            };
            let Some(var_t) = btf.type_by_id(var.type_id) else {
                continue;
            };
            let Some((_, st)) = btf.skip_mods_and_typedefs(var_t.size_or_type) else {
                continue;
            };
            if st.kind != Kind::Struct {
                continue;
            }
            let bit = (rel.offset - u64::from(var.offset)) * 8;
            let Some(m) = btf
                .members(st)
                .iter()
                .find(|m| u64::from(m.bit_offset) == bit)
            else {
                continue;
            };
            // The program is the function at the symbol's place (a section
            // symbol names none: look the function up by address).
            let func = if sym.typ == object::elf::STT_FUNC {
                Some(sym.name.clone())
            } else {
                elf.symbols
                    .iter()
                    .find(|f| {
                        f.typ == object::elf::STT_FUNC
                            && f.shndx == sym.shndx
                            && f.value == sym.value
                    })
                    .map(|f| f.name.clone())
            };
            let Some(func) = func else {
                continue;
            };
            out.push((
                func,
                StructOpsMember {
                    map: btf.name(var_t).to_string(),
                    type_name: crate::btf::essential_name(btf.name(st)).to_string(),
                    member: btf.str_at(m.name_off).unwrap_or("").to_string(),
                    raw: None,
                },
            ));
        }
    }
    out
}

/// Where a struct_ops member lives in the kernel's BTF, as libbpf finds it
/// (find_struct_ops_kern_types, then the member by name): the kernel
/// struct's type id and the member's index, which the kernel takes as the
/// program's attach_btf_id and expected_attach_type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelMember {
    pub type_id: u32,
    pub member_idx: u32,
}

impl StructOpsMember {
    /// A member given by kernel ids as they are, as a program loaded
    /// through bpf(2) without libbpf may name any: `type_name` a struct of
    /// `vmlinux` (or a type id in decimal), `member` a member's name or
    /// index, valid or not. None: no struct of that name.
    pub fn by_ids(vmlinux: &Btf, type_name: &str, member: &str) -> Option<StructOpsMember> {
        let type_id = match type_name.parse::<u32>() {
            Ok(id) => id,
            Err(_) => vmlinux.find_by_name_kind(type_name, Kind::Struct)?,
        };
        let members = vmlinux
            .type_by_id(type_id)
            .map_or(&[][..], |t| vmlinux.members(t));
        let name_at = |i: usize| members.get(i).and_then(|m| vmlinux.str_at(m.name_off));
        let member_idx = match member.parse::<u32>() {
            Ok(i) => i,
            Err(_) => (0..members.len()).find(|&i| name_at(i) == Some(member))? as u32,
        };
        let type_name = vmlinux
            .type_by_id(type_id)
            .map_or(type_name, |t| vmlinux.name(t));
        Some(StructOpsMember {
            map: String::new(),
            type_name: type_name.to_string(),
            member: name_at(member_idx as usize).unwrap_or(member).to_string(),
            raw: Some(KernelMember {
                type_id,
                member_idx,
            }),
        })
    }

    /// Resolves the member in `vmlinux`; the error is libbpf's reason for
    /// not loading the program.
    pub fn resolve(&self, vmlinux: &Btf) -> Result<KernelMember, String> {
        if let Some(raw) = self.raw {
            return Ok(raw);
        }
        let wrapper = format!("bpf_struct_ops_{}", self.type_name);
        if vmlinux.find_by_name_kind(&wrapper, Kind::Struct).is_none() {
            return Err(format!("struct {wrapper} is not found in kernel BTF"));
        }
        let type_id = vmlinux
            .find_by_name_kind(&self.type_name, Kind::Struct)
            .ok_or_else(|| format!("struct {} is not found in kernel BTF", self.type_name))?;
        let t = vmlinux
            .type_by_id(type_id)
            .ok_or_else(|| format!("struct {} is not found in kernel BTF", self.type_name))?;
        let member_idx = vmlinux
            .members(t)
            .iter()
            .position(|m| vmlinux.str_at(m.name_off) == Some(self.member.as_str()))
            .ok_or_else(|| format!("Cannot find member {} in kernel BTF", self.member))?;
        Ok(KernelMember {
            type_id,
            member_idx: member_idx as u32,
        })
    }
}
