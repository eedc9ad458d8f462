//! The ELF layer: sections, symbols and REL relocations of a BPF relocatable
//! object, read with the `object` crate and copied into plain structs so the
//! rest of the loader never touches ELF encodings.

use object::elf;
use object::read::elf::{FileHeader, Rel as _, Rela as _, SectionHeader as _, Sym as _};
use object::{LittleEndian, SectionIndex};

use crate::error::{err, ErrorKind, LResult, Located};

pub const EM_BPF: u16 = 247;
pub const SHN_UNDEF: u16 = 0;
pub const SHN_LORESERVE: u16 = 0xff00;

pub struct Section<'a> {
    pub name: String,
    pub sh_type: u32,
    pub flags: u64,
    /// Contents; empty for SHT_NOBITS.
    pub data: &'a [u8],
    pub size: u64,
}

impl Section<'_> {
    pub fn is_exec(&self) -> bool {
        self.sh_type == elf::SHT_PROGBITS && self.flags & elf::SHF_EXECINSTR as u64 != 0
    }
}

#[derive(Clone, Debug)]
pub struct Symbol {
    pub name: String,
    pub shndx: u16,
    pub value: u64,
    pub size: u64,
    pub typ: u8,
    pub bind: u8,
    pub visibility: u8,
}

impl Symbol {
    pub fn is_extern(&self) -> bool {
        self.shndx == SHN_UNDEF
            && (self.bind == elf::STB_GLOBAL || self.bind == elf::STB_WEAK)
            && !self.name.is_empty()
    }
    pub fn is_hidden(&self) -> bool {
        self.visibility == elf::STV_HIDDEN || self.visibility == elf::STV_INTERNAL
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Rel {
    pub offset: u64,
    pub sym: u32,
    /// Explicit addend of a RELA entry; 0 for REL (the addend is in place).
    pub addend: i64,
}

pub struct ElfFile<'a> {
    pub sections: Vec<Section<'a>>,
    pub symbols: Vec<Symbol>,
    /// REL entries per target section index.
    pub rels: Vec<Vec<Rel>>,
}

fn in_section(section: &str, e: impl std::fmt::Display) -> Located {
    Located {
        section: Some(section.to_owned()),
        kind: ErrorKind::Elf(e.to_string()),
    }
}

fn elf_err<T>(msg: impl Into<String>) -> LResult<T> {
    err(None, ErrorKind::Elf(msg.into()))
}

impl<'a> ElfFile<'a> {
    pub fn parse(data: &'a [u8]) -> LResult<Self> {
        if data.len() < 16 || &data[..4] != b"\x7fELF" {
            return elf_err("no ELF magic");
        }
        if data[4] != elf::ELFCLASS64 {
            return err(None, ErrorKind::NotBpf("not a 64-bit ELF file".into()));
        }
        if data[5] != elf::ELFDATA2LSB {
            return err(
                None,
                ErrorKind::NotBpf("big-endian objects are not supported".into()),
            );
        }
        let header = elf::FileHeader64::<LittleEndian>::parse(data)?;
        let e = LittleEndian;
        let machine = header.e_machine(e);
        // libbpf accepts e_machine 0 (EM_NONE) from very old compilers.
        if machine != EM_BPF && machine != 0 {
            return err(
                None,
                ErrorKind::NotBpf(format!("e_machine is {machine}, not EM_BPF")),
            );
        }
        if header.e_type(e) != elf::ET_REL {
            return err(
                None,
                ErrorKind::NotBpf("not a relocatable object (ET_REL)".into()),
            );
        }
        let table = header
            .sections(e, data)
            .map_err(|x| in_section("section header table", x))?;
        let mut sections = Vec::with_capacity(table.len());
        for (idx, sh) in table.iter().enumerate() {
            let name = table
                .section_name(e, sh)
                .map_err(|x| in_section(&format!("#{idx}"), x))?;
            let name = String::from_utf8_lossy(name).into_owned();
            let sh_type = sh.sh_type(e);
            let section_data = if sh_type == elf::SHT_NOBITS {
                &[][..]
            } else {
                match sh.data(e, data) {
                    Ok(d) => d,
                    Err(_) => {
                        return err(
                            Some(&name),
                            ErrorKind::Elf("section data outside the file".into()),
                        )
                    }
                }
            };
            sections.push(Section {
                name,
                sh_type,
                flags: sh.sh_flags(e),
                data: section_data,
                size: sh.sh_size(e),
            });
        }
        let symtab = table
            .symbols(e, data, elf::SHT_SYMTAB)
            .map_err(|x| in_section(".symtab", x))?;
        let mut symbols = Vec::with_capacity(symtab.len());
        for (idx, sym) in symtab.iter().enumerate() {
            let name = symtab
                .symbol_name(e, sym)
                .map_err(|x| in_section(".symtab", format!("symbol #{idx}: {x}")))?;
            let name = String::from_utf8_lossy(name).into_owned();
            symbols.push(Symbol {
                name,
                shndx: sym.st_shndx(e),
                value: sym.st_value(e),
                size: sym.st_size(e),
                typ: sym.st_type(),
                bind: sym.st_bind(),
                visibility: sym.st_visibility(),
            });
        }
        let mut rels = vec![Vec::new(); sections.len()];
        for (idx, sh) in table.enumerate() {
            let SectionIndex(idx) = idx;
            let entries: Vec<Rel> = match (sh.rel(e, data), sh.rela(e, data)) {
                (Ok(Some((rel, _))), _) => rel
                    .iter()
                    .map(|r| Rel {
                        offset: r.r_offset(e),
                        sym: r.r_sym(e),
                        addend: 0,
                    })
                    .collect(),
                (_, Ok(Some((rela, _)))) => rela
                    .iter()
                    .map(|r| Rel {
                        offset: r.r_offset(e),
                        sym: r.r_sym(e, false),
                        addend: r.r_addend(e),
                    })
                    .collect(),
                (Ok(None), Ok(None)) => continue,
                _ => {
                    return err(
                        Some(&sections[idx].name),
                        ErrorKind::Elf("relocation table outside the file".into()),
                    )
                }
            };
            let target = sh.sh_info(e) as usize;
            if target == 0 || target >= sections.len() {
                return err(
                    Some(&sections[idx].name),
                    ErrorKind::Elf(format!("relocations for missing section {target}")),
                );
            }
            if let Some(r) = entries.iter().find(|r| r.sym as usize >= symbols.len()) {
                return err(
                    Some(&sections[idx].name),
                    ErrorKind::Relocation(format!("symbol index {} out of range", r.sym)),
                );
            }
            rels[target].extend(entries);
        }
        Ok(ElfFile {
            sections,
            symbols,
            rels,
        })
    }

    pub fn section_by_name(&self, name: &str) -> Option<(usize, &Section<'a>)> {
        self.sections
            .iter()
            .enumerate()
            .find(|(_, s)| s.name == name)
    }
}
