//! Map definitions, in libbpf's order: legacy `maps` sections, BTF-defined
//! `.maps`, then global data sections as one-entry arrays. `MapLoc` remembers
//! where each came from so relocations can find them.

use bpfvet_isa::uapi::{self, MapType};
use object::elf;

use crate::btf::{Btf, Kind, Member, BTF_VAR_STATIC};
use crate::elf::ElfFile;
use crate::error::{err, ErrorKind, LResult};
use crate::types::{MapDef, MapInit, MapOrigin};

/// libbpf's internal map classes, used to match relocations to maps.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MapClass {
    User,
    Data,
    Rodata,
    Bss,
    Kconfig,
}

#[derive(Clone, Debug)]
pub struct MapLoc {
    pub class: MapClass,
    pub shndx: usize,
    pub offset: u64,
}

const BPF_OBJ_NAME_LEN: usize = 16;

/// libbpf's object name: the file's base name up to its first '.',
/// at most 15 bytes.
pub fn object_name(path: &std::path::Path) -> String {
    let base = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = base.split('.').next().unwrap_or("");
    truncate(stem, BPF_OBJ_NAME_LEN - 1).to_owned()
}

fn truncate(s: &str, n: usize) -> &str {
    let mut end = n.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The name libbpf gives the map of a global data section: as much of the
/// object name as fits before the section name, none for `.data.custom`
/// style names, sanitised to the kernel's allowed characters.
pub fn internal_map_name(obj_name: &str, sec_name: &str) -> String {
    let sfx_len = sec_name.len().clamp(7, BPF_OBJ_NAME_LEN - 1);
    let custom = sec_name.len() > 1 && sec_name[1..].contains('.');
    let pfx_len = if custom {
        0
    } else {
        (BPF_OBJ_NAME_LEN - sfx_len - 1).min(obj_name.len())
    };
    let mut name = String::new();
    name.push_str(truncate(obj_name, pfx_len));
    name.push_str(truncate(sec_name, sfx_len));
    let name = truncate(&name, BPF_OBJ_NAME_LEN - 1).to_owned();
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn blank(name: String, section: &str, origin: MapOrigin) -> MapDef {
    MapDef {
        section: section.to_owned(),
        origin,
        ..MapDef::new(&name, MapType::UNSPEC, 0, 0, 0)
    }
}

/// Where clang puts `__arena` globals (address space 1): libbpf places them
/// in the object's arena map.
pub const ARENA_SECTION: &str = ".addr_space.1";

pub fn is_legacy_maps_section(name: &str) -> bool {
    name == "maps" || name.starts_with("maps/")
}

/// `struct bpf_map_def` records of any size: the record size is the section
/// size divided by the number of symbols in it, as libbpf computes it.
/// Fields past the five known ones are ignored.
/// The maps of a legacy `maps` section; true when its records are
/// iproute2's `struct bpf_elf_map`.
pub fn legacy_maps(elf: &ElfFile, shndx: usize, out: &mut Vec<(MapDef, MapLoc)>) -> LResult<bool> {
    let sec = &elf.sections[shndx];
    let sname = sec.name.as_str();
    let mut syms: Vec<_> = elf
        .symbols
        .iter()
        .filter(|s| {
            s.shndx as usize == shndx && s.typ != elf::STT_SECTION && s.typ != elf::STT_FILE
        })
        .collect();
    if syms.is_empty() {
        return Ok(false);
    }
    let size = sec.data.len();
    if size == 0 || !size.is_multiple_of(syms.len()) {
        return err(
            Some(sname),
            ErrorKind::Map(format!(
                "cannot split {size} bytes into {} map definitions",
                syms.len()
            )),
        );
    }
    let rec = size / syms.len();
    if rec < 4 {
        return err(
            Some(sname),
            ErrorKind::Map(format!("map definition of {rec} bytes")),
        );
    }
    syms.sort_by_key(|s| s.value);
    // iproute2's `struct bpf_elf_map` adds id, pinning, inner_id and
    // inner_idx: an outer map names its inner map template by inner_id ==
    // the template's id (Cilium's maglev maps).
    let mut iproute2_ids: Vec<(usize, u32, u32)> = Vec::new();
    let first = out.len();
    let mut inner_idx: Vec<(usize, u32)> = Vec::new();
    for s in syms {
        let off = s.value as usize;
        let bytes = off
            .checked_add(rec)
            .and_then(|end| sec.data.get(off..end))
            .ok_or_else(|| crate::error::Located {
                section: Some(sname.to_owned()),
                kind: ErrorKind::Map(format!(
                    "map '{}' at offset {off} runs past the section",
                    s.name
                )),
            })?;
        let field = |i: usize| {
            bytes
                .get(4 * i..4 * i + 4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .unwrap_or(0)
        };
        let mut m = blank(s.name.clone(), sname, MapOrigin::Legacy);
        m.map_type = MapType(field(0));
        m.key_size = field(1);
        m.value_size = field(2);
        m.max_entries = field(3);
        m.map_flags = field(4);
        if rec >= IPROUTE2_MAP_DEF_SIZE {
            m.pinning = field(6);
            iproute2_ids.push((out.len(), field(5), field(7)));
        } else if rec == SAMPLES_MAP_DEF_SIZE {
            inner_idx.push((out.len(), field(5)));
        }
        out.push((
            m,
            MapLoc {
                class: MapClass::User,
                shndx,
                offset: s.value,
            },
        ));
    }
    link_iproute2_inner_maps(out, &iproute2_ids);
    link_indexed_inner_maps(out, first, &inner_idx);
    Ok(rec >= IPROUTE2_MAP_DEF_SIZE)
}

/// Size of the `struct bpf_map_def` of the kernel's samples/bpf loader
/// (bpf_load.c): the five libbpf fields, then inner_map_idx and numa_node.
const SAMPLES_MAP_DEF_SIZE: usize = 28;

/// Gives each map-in-map of a samples/bpf `maps` section the template at
/// position `inner_map_idx` of the section (maps in offset order, as
/// bpf_load.c numbers them).
fn link_indexed_inner_maps(out: &mut [(MapDef, MapLoc)], first: usize, idx: &[(usize, u32)]) {
    for &(outer, inner) in idx {
        let is_map_in_map = matches!(
            out[outer].0.map_type,
            MapType::ARRAY_OF_MAPS | MapType::HASH_OF_MAPS
        );
        let Some(at) = first.checked_add(inner as usize) else {
            continue;
        };
        if !is_map_in_map || at == outer || at >= out.len() || out[outer].0.inner.is_some() {
            continue;
        }
        let template = out[at].0.clone();
        out[outer].0.inner = Some(Box::new(template));
        // bpf_load.c creates maps of maps with a 4-byte value (a map fd)
        // whatever the definition says; the samples leave it 0.
        out[outer].0.value_size = 4;
    }
}

/// Size of iproute2's `struct bpf_elf_map` (nine u32 fields).
const IPROUTE2_MAP_DEF_SIZE: usize = 36;

/// Gives each map-in-map of an iproute2 `maps` section the template whose
/// `id` its `inner_id` names. (Pre-populating the outer map with the inner
/// one, iproute2's `inner_idx`, is left to whoever creates the maps.)
fn link_iproute2_inner_maps(out: &mut [(MapDef, MapLoc)], ids: &[(usize, u32, u32)]) {
    for &(outer, _, inner_id) in ids {
        let is_map_in_map = matches!(
            out[outer].0.map_type,
            MapType::ARRAY_OF_MAPS | MapType::HASH_OF_MAPS
        );
        if !is_map_in_map || inner_id == 0 || out[outer].0.inner.is_some() {
            continue;
        }
        if let Some(&(inner, _, _)) = ids.iter().find(|&&(i, id, _)| id == inner_id && i != outer) {
            let template = out[inner].0.clone();
            out[outer].0.inner = Some(Box::new(template));
        }
    }
}

/// The parts of a `.maps` definition whose slots need ELF relocations
/// (`.values = { ... }`), kept until programs and maps are all known.
pub struct PendingValues {
    pub map_idx: usize,
    /// Byte range of the variable in `.maps` and offset of `values` in it.
    pub var_offset: u64,
    pub var_size: u64,
    pub values_offset: u64,
}

/// BTF-defined maps: one VAR per map in the `.maps` DATASEC.
pub fn btf_maps(
    elf: &ElfFile,
    btf: &Btf,
    shndx: usize,
    out: &mut Vec<(MapDef, MapLoc)>,
    pending: &mut Vec<PendingValues>,
) -> LResult<()> {
    let sname = ".maps";
    let Some(sec_id) = btf.find_by_name_kind(sname, Kind::Datasec) else {
        return err(
            Some(sname),
            ErrorKind::Map("no DATASEC '.maps' in BTF".into()),
        );
    };
    let sec = btf.type_by_id(sec_id).expect("found id");
    for vi in btf.datasec_vars(sec) {
        let var = btf
            .type_by_id(vi.type_id)
            .filter(|t| t.kind == Kind::Var)
            .ok_or_else(|| map_err(sname, "DATASEC entry is not a VAR".into()))?;
        let name = btf.name(var).to_owned();
        let (_, def) = btf
            .skip_mods_and_typedefs(var.size_or_type)
            .filter(|(_, t)| t.kind == Kind::Struct)
            .ok_or_else(|| map_err(sname, format!("map '{name}': definition is not a struct")))?;
        if vi.offset as u64 + vi.size as u64 > elf.sections[shndx].size {
            return Err(map_err(sname, format!("map '{name}': outside the section")));
        }
        let mut m = blank(name.clone(), sname, MapOrigin::BtfMaps);
        let values_off = parse_def(btf, btf.members(def), &mut m, false)?;
        let map_idx = out.len();
        if let Some(values_offset) = values_off {
            pending.push(PendingValues {
                map_idx,
                var_offset: vi.offset as u64,
                var_size: vi.size as u64,
                values_offset,
            });
        }
        out.push((
            m,
            MapLoc {
                class: MapClass::User,
                shndx,
                offset: vi.offset as u64,
            },
        ));
    }
    Ok(())
}

fn map_err(section: &str, msg: String) -> crate::error::Located {
    crate::error::Located {
        section: Some(section.to_owned()),
        kind: ErrorKind::Map(msg),
    }
}

/// `__uint(name, N)` is a pointer to an array of N elements.
fn field_int(btf: &Btf, m: &Member, map: &str, attr: &str) -> LResult<u32> {
    let ptr = btf.skip_mods_and_typedefs(m.type_id).map(|(_, t)| t);
    let arr = ptr
        .filter(|t| t.kind == Kind::Ptr)
        .and_then(|t| btf.type_by_id(t.size_or_type))
        .and_then(|t| t.array_info());
    match arr {
        Some((_, _, n)) => Ok(n),
        None => Err(map_err(
            ".maps",
            format!("map '{map}': attribute '{attr}' is not a pointer to an array"),
        )),
    }
}

/// `__ulong(name, N)` is an enum whose single value is N (64-bit values
/// need it); `__uint` is accepted too.
fn field_long(btf: &Btf, m: &Member, map: &str, attr: &str) -> LResult<u64> {
    let t = btf.skip_mods_and_typedefs(m.type_id).map(|(_, t)| t);
    match t {
        Some(t) if t.kind == Kind::Ptr => Ok(field_int(btf, m, map, attr)? as u64),
        Some(t) if t.kind.is_enum() => match btf.enum_values(t) {
            [v] => Ok(v.value as u64),
            _ => Err(map_err(
                ".maps",
                format!("map '{map}': attribute '{attr}': invalid __ulong"),
            )),
        },
        _ => Err(map_err(
            ".maps",
            format!("map '{map}': attribute '{attr}' is neither a pointer to an array nor an enum"),
        )),
    }
}

/// Pointee type id and its size for `__type(key, T)`.
fn field_type(btf: &Btf, m: &Member, map: &str, attr: &str) -> LResult<(u32, u32)> {
    let t = btf
        .type_by_id(m.type_id)
        .filter(|t| t.kind == Kind::Ptr)
        .ok_or_else(|| {
            map_err(
                ".maps",
                format!("map '{map}': '{attr}' spec is not a pointer"),
            )
        })?;
    let size = btf
        .resolve_size(t.size_or_type)
        .ok()
        .and_then(|s| u32::try_from(s).ok())
        .ok_or_else(|| {
            map_err(
                ".maps",
                format!("map '{map}': cannot size the '{attr}' type"),
            )
        })?;
    Ok((t.size_or_type, size))
}

fn set_size(slot: &mut u32, v: u32, map: &str, attr: &str) -> LResult<()> {
    if *slot != 0 && *slot != v {
        return Err(map_err(
            ".maps",
            format!("map '{map}': conflicting {attr} {} != {v}", *slot),
        ));
    }
    *slot = v;
    Ok(())
}

/// Fills `m` from the struct members; returns the byte offset of `values`
/// when present.
fn parse_def(
    btf: &Btf,
    members: &[Member],
    m: &mut MapDef,
    is_inner: bool,
) -> LResult<Option<u64>> {
    let map = m.name.clone();
    let mut values_off = None;
    for (i, mem) in members.iter().enumerate() {
        let attr = btf.str_at(mem.name_off).unwrap_or("");
        match attr {
            "type" => m.map_type = MapType(field_int(btf, mem, &map, attr)?),
            "max_entries" => m.max_entries = field_int(btf, mem, &map, attr)?,
            "map_flags" => m.map_flags = field_int(btf, mem, &map, attr)?,
            "numa_node" => m.numa_node = field_int(btf, mem, &map, attr)?,
            "pinning" => {
                if is_inner {
                    return Err(map_err(
                        ".maps",
                        format!("map '{map}': inner map can't be pinned"),
                    ));
                }
                // Kept as found: which values mean something depends on the
                // loader (crate::loader), and pinning does not change what
                // the kernel verifies.
                m.pinning = field_int(btf, mem, &map, attr)?;
            }
            "map_extra" => m.map_extra = field_long(btf, mem, &map, attr)?,
            "key_size" => {
                let v = field_int(btf, mem, &map, attr)?;
                set_size(&mut m.key_size, v, &map, "key size")?;
            }
            "value_size" => {
                let v = field_int(btf, mem, &map, attr)?;
                set_size(&mut m.value_size, v, &map, "value size")?;
            }
            "key" => {
                let (id, size) = field_type(btf, mem, &map, attr)?;
                set_size(&mut m.key_size, size, &map, "key size")?;
                m.btf_key_type_id = id;
            }
            "value" => {
                let (id, size) = field_type(btf, mem, &map, attr)?;
                set_size(&mut m.value_size, size, &map, "value size")?;
                m.btf_value_type_id = id;
            }
            "values" => {
                if is_inner {
                    return Err(map_err(
                        ".maps",
                        format!("map '{map}': multi-level inner maps not supported"),
                    ));
                }
                if i + 1 != members.len() {
                    return Err(map_err(
                        ".maps",
                        format!("map '{map}': 'values' must be the last member"),
                    ));
                }
                let is_prog_array = m.map_type == MapType::PROG_ARRAY;
                let is_map_in_map =
                    matches!(m.map_type, MapType::ARRAY_OF_MAPS | MapType::HASH_OF_MAPS);
                if !is_prog_array && !is_map_in_map {
                    return Err(map_err(
                        ".maps",
                        format!("map '{map}': 'values' needs a map-in-map or prog array"),
                    ));
                }
                set_size(&mut m.value_size, 4, &map, "value size")?;
                let elem = btf
                    .type_by_id(mem.type_id)
                    .and_then(|t| t.array_info())
                    .filter(|(_, _, n)| *n == 0)
                    .map(|(e, _, _)| e)
                    .ok_or_else(|| {
                        map_err(
                            ".maps",
                            format!("map '{map}': 'values' is not a zero-sized array"),
                        )
                    })?;
                let target = btf
                    .skip_mods_and_typedefs(elem)
                    .filter(|(_, t)| t.kind == Kind::Ptr)
                    .and_then(|(_, t)| btf.skip_mods_and_typedefs(t.size_or_type))
                    .map(|(_, t)| t);
                if is_prog_array {
                    if target.map(|t| t.kind) != Some(Kind::FuncProto) {
                        return Err(map_err(
                            ".maps",
                            format!("map '{map}': prog-array values must be function pointers"),
                        ));
                    }
                } else {
                    let inner_t = target.filter(|t| t.kind == Kind::Struct).ok_or_else(|| {
                        map_err(
                            ".maps",
                            format!("map '{map}': inner map def is not a struct"),
                        )
                    })?;
                    let mut inner = blank(format!("{map}.inner"), ".maps", MapOrigin::BtfMaps);
                    parse_def(btf, btf.members(inner_t), &mut inner, true)?;
                    if inner.map_type == MapType::UNSPEC {
                        return Err(map_err(
                            ".maps",
                            format!("map '{map}.inner': map type isn't specified"),
                        ));
                    }
                    m.inner = Some(Box::new(inner));
                }
                values_off = Some(mem.bit_offset as u64 / 8);
            }
            // Unknown attributes: libbpf's strict mode refuses them.
            other => {
                return Err(map_err(
                    ".maps",
                    format!("map '{map}': unknown field '{other}'"),
                ));
            }
        }
    }
    if m.map_type == MapType::UNSPEC {
        return Err(map_err(
            ".maps",
            format!("map '{map}': map type isn't specified"),
        ));
    }
    Ok(values_off)
}

pub fn data_section_class(name: &str, sh_type: u32, exec: bool) -> Option<MapClass> {
    let is =
        |base: &str| name == base || name.strip_prefix(base).is_some_and(|r| r.starts_with('.'));
    if sh_type == elf::SHT_PROGBITS && !exec {
        if is(".data") {
            return Some(MapClass::Data);
        }
        if is(".rodata") {
            return Some(MapClass::Rodata);
        }
    }
    if sh_type == elf::SHT_NOBITS && is(".bss") {
        return Some(MapClass::Bss);
    }
    None
}

/// One-entry arrays for `.data*`, `.rodata*`, `.bss*`, in section order.
pub fn global_data_maps(
    elf: &ElfFile,
    btf: Option<&Btf>,
    obj_name: &str,
    out: &mut Vec<(MapDef, MapLoc)>,
) -> LResult<()> {
    for (shndx, sec) in elf.sections.iter().enumerate() {
        let Some(class) = data_section_class(&sec.name, sec.sh_type, sec.is_exec()) else {
            continue;
        };
        if sec.size == 0 {
            continue;
        }
        let size = u32::try_from(sec.size)
            .map_err(|_| map_err(&sec.name, "global data section too large".into()))?;
        let mut m = blank(
            internal_map_name(obj_name, &sec.name),
            &sec.name,
            MapOrigin::GlobalData,
        );
        m.map_type = MapType::ARRAY;
        m.key_size = 4;
        m.value_size = size;
        m.max_entries = 1;
        let datasec = btf.and_then(|b| {
            b.find_by_name_kind(&sec.name, Kind::Datasec)
                .map(|id| (b, id))
        });
        if let Some((_, id)) = datasec {
            m.btf_value_type_id = id;
        }
        // mmapable when the DATASEC holds at least one non-static variable.
        let mmapable = datasec.is_some_and(|(b, id)| {
            let t = b.type_by_id(id).expect("found id");
            b.datasec_vars(t).iter().any(|v| {
                b.type_by_id(v.type_id)
                    .is_some_and(|vt| vt.kind == Kind::Var && vt.linkage() != BTF_VAR_STATIC)
            })
        });
        if mmapable {
            m.map_flags |= uapi::BPF_F_MMAPABLE;
        }
        if class == MapClass::Rodata {
            m.map_flags |= uapi::BPF_F_RDONLY_PROG;
            m.frozen = true;
        }
        m.init = MapInit::Data(if class == MapClass::Bss {
            vec![0; size as usize]
        } else {
            sec.data.to_vec()
        });
        out.push((
            m,
            MapLoc {
                class,
                shndx,
                offset: 0,
            },
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn internal_names_follow_libbpf() {
        assert_eq!(
            object_name(Path::new("/x/my_object_name.bpf.o")),
            "my_object_name"
        );
        assert_eq!(
            internal_map_name("my_object_name", ".rodata"),
            "my_objec.rodata"
        );
        assert_eq!(internal_map_name("my_object_name", ".bss"), "my_objec.bss");
        assert_eq!(
            internal_map_name("my_object_name", ".kconfig"),
            "my_obje.kconfig"
        );
        assert_eq!(
            internal_map_name("my_object_name", ".rodata.abracadabra"),
            ".rodata.abracad"
        );
        assert_eq!(internal_map_name("t", ".rodata.str1.1"), ".rodata.str1.1");
        assert_eq!(internal_map_name("a-b", ".data"), "a_b.data");
    }

    #[test]
    fn data_sections_are_classified() {
        assert_eq!(
            data_section_class(".data.foo", elf::SHT_PROGBITS, false),
            Some(MapClass::Data)
        );
        assert_eq!(data_section_class(".datax", elf::SHT_PROGBITS, false), None);
        assert_eq!(
            data_section_class(".bss", elf::SHT_NOBITS, false),
            Some(MapClass::Bss)
        );
        assert_eq!(data_section_class(".rodata", elf::SHT_PROGBITS, true), None);
    }
}
