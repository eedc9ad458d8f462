//! `extern` symbols: `.kconfig` values (laid out in a one-entry array map
//! the way libbpf lays them out), typed and typeless `__ksym` variables and
//! kfuncs, resolved against the target BTF and kallsyms.

use bpfvet_isa::uapi::{self, MapType};

use crate::btf::{
    append_raw, Btf, BtfError, Kind, BTF_FUNC_EXTERN, BTF_FUNC_GLOBAL, BTF_VAR_GLOBAL_ALLOCATED,
    BTF_VAR_GLOBAL_EXTERN,
};
use crate::elf::ElfFile;
use crate::error::LResult;
use crate::load::LoadOptions;
use crate::types::{MapDef, MapInit, MapOrigin};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExternValue {
    /// Byte offset in the kconfig map's value.
    Kconfig {
        offset: u32,
    },
    /// A typed ksym: a VAR id in the target BTF.
    KsymBtf {
        btf_id: u32,
    },
    /// A typeless ksym's address from kallsyms.
    KsymAddr {
        addr: u64,
    },
    /// A kfunc: a FUNC id in the target BTF.
    Kfunc {
        btf_id: u32,
    },
    Unresolved,
    /// An extern the loader cannot handle at all (no BTF describes it):
    /// the programs that use it are refused with this reason.
    Bad(String),
}

#[derive(Clone, Debug)]
pub struct Extern {
    pub name: String,
    pub sym_idx: usize,
    pub weak: bool,
    pub value: ExternValue,
    /// For kconfig externs: (size, alignment, value bytes if known).
    kcfg: Option<(u32, u32, Option<Vec<u8>>)>,
    btf_var: u32,
}

pub struct Externs {
    pub list: Vec<Extern>,
}

impl Externs {
    pub fn values(&self) -> Vec<ExternValue> {
        self.list.iter().map(|e| e.value.clone()).collect()
    }
}

pub fn any(elf: &ElfFile) -> bool {
    elf.symbols.iter().any(|s| s.is_extern())
}

/// Which extern DATASEC (".kconfig" / ".ksyms") lists type `id`.
fn datasec_of(btf: &Btf, id: u32) -> Option<&str> {
    btf.ids().find_map(|sid| {
        let t = btf.type_by_id(sid)?;
        (t.kind == Kind::Datasec && btf.datasec_vars(t).iter().any(|v| v.type_id == id))
            .then(|| btf.name(t))
    })
}

fn kcfg_align(btf: &Btf, id: u32) -> u32 {
    let mut id = id;
    for _ in 0..crate::btf::MAX_RESOLVE_DEPTH {
        let Some((rid, t)) = btf.skip_mods_and_typedefs(id) else {
            return 1;
        };
        match t.array_info() {
            Some((elem, _, _)) => id = elem,
            None => {
                return btf
                    .resolve_size(rid)
                    .map(|s| s.clamp(1, 8) as u32)
                    .unwrap_or(1)
            }
        }
    }
    1
}

fn known_kconfig(name: &str, size: u32, opts: &LoadOptions) -> Option<Vec<u8>> {
    let v: u64 = match name {
        "LINUX_KERNEL_VERSION" => opts.kernel_version as u64,
        "LINUX_HAS_BPF_COOKIE" | "LINUX_HAS_SYSCALL_WRAPPER" => 1,
        _ => return None,
    };
    let mut b = v.to_le_bytes().to_vec();
    b.resize(size as usize, 0);
    Some(b)
}

fn kallsyms_addr(path: &std::path::Path, name: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        let addr = it.next()?;
        let _kind = it.next()?;
        (it.next()? == name).then(|| u64::from_str_radix(addr, 16).ok())?
    })
}

pub fn collect(
    elf: &ElfFile,
    btf: Option<&Btf>,
    target: Option<&Btf>,
    opts: &LoadOptions,
    unresolved: &mut Vec<String>,
) -> LResult<Externs> {
    let mut list = Vec::new();
    let mut config: Option<Result<std::collections::HashMap<String, String>, String>> = None;
    for (sym_idx, s) in elf.symbols.iter().enumerate() {
        if !s.is_extern() {
            continue;
        }
        let bad = |why: String| Extern {
            name: s.name.clone(),
            sym_idx,
            weak: s.bind == object::elf::STB_WEAK,
            value: ExternValue::Bad(why),
            kcfg: None,
            btf_var: 0,
        };
        let Some(btf) = btf else {
            list.push(bad(format!(
                "extern '{}' needs BTF, which the object lacks",
                s.name
            )));
            continue;
        };
        let var = btf.ids().find(|&id| {
            let t = btf.type_by_id(id).expect("id in range");
            btf.name(t) == s.name
                && ((t.kind == Kind::Var && t.linkage() == BTF_VAR_GLOBAL_EXTERN)
                    || (t.kind == Kind::Func && t.linkage() == BTF_FUNC_EXTERN))
        });
        let Some(var) = var else {
            list.push(bad(format!("no BTF for extern '{}'", s.name)));
            continue;
        };
        let t = btf.type_by_id(var).expect("found id");
        let weak = s.bind == object::elf::STB_WEAK;
        let sec = datasec_of(btf, var);
        let mut e = Extern {
            name: s.name.clone(),
            sym_idx,
            weak,
            value: ExternValue::Unresolved,
            kcfg: None,
            btf_var: var,
        };
        if sec == Some(".kconfig") {
            let size = btf
                .resolve_size(t.size_or_type)
                .ok()
                .and_then(|s| u32::try_from(s).ok());
            let Some(size) = size else {
                list.push(bad(format!("kconfig extern '{}' has no size", s.name)));
                continue;
            };
            let align = kcfg_align(btf, t.size_or_type);
            let mut value = known_kconfig(&s.name, size, opts);
            if value.is_none() && s.name.starts_with("CONFIG_") {
                let cfg = config.get_or_insert_with(|| match &opts.kconfig {
                    Some(p) => {
                        crate::kconfig::read_config(p).map_err(|e| format!("{}: {e}", p.display()))
                    }
                    None => Err("no kernel config given".into()),
                });
                match cfg {
                    Ok(cfg) => match cfg.get(&s.name) {
                        Some(v) => match crate::kconfig::encode(btf, t.size_or_type, size, v) {
                            Ok(b) => value = Some(b),
                            Err(why) => unresolved.push(format!("{}: {why}", s.name)),
                        },
                        None if !weak => {
                            unresolved.push(format!("{}: not set in the kernel config", s.name))
                        }
                        None => {}
                    },
                    Err(why) if !weak => unresolved.push(format!("{}: {why}", s.name)),
                    Err(_) => {}
                }
            }
            e.kcfg = Some((size, align, value));
        } else if t.kind == Kind::Func {
            match target.and_then(|tb| tb.find_by_name_kind(&s.name, Kind::Func)) {
                Some(id) => e.value = ExternValue::Kfunc { btf_id: id },
                None => unresolved.push(format!("{}: kfunc not in target BTF", s.name)),
            }
        } else if t.size_or_type == 0 {
            // `extern const void x __ksym;` is typeless: an address.
            match opts
                .kallsyms
                .as_deref()
                .and_then(|p| kallsyms_addr(p, &s.name))
            {
                Some(addr) => e.value = ExternValue::KsymAddr { addr },
                None => unresolved.push(format!("{}: not found in kallsyms", s.name)),
            }
        } else {
            match target.and_then(|tb| tb.find_by_name_kind(&s.name, Kind::Var)) {
                Some(id) => e.value = ExternValue::KsymBtf { btf_id: id },
                None => unresolved.push(format!("{}: ksym not in target BTF", s.name)),
            }
        }
        list.push(e);
    }
    // Kconfig layout: by alignment descending, then size, then name.
    let mut order: Vec<usize> = (0..list.len())
        .filter(|&i| list[i].kcfg.is_some())
        .collect();
    order.sort_by(|&a, &b| {
        let (sa, aa, _) = list[a].kcfg.as_ref().expect("kcfg");
        let (sb, ab, _) = list[b].kcfg.as_ref().expect("kcfg");
        ab.cmp(aa)
            .then(sa.cmp(sb))
            .then(list[a].name.cmp(&list[b].name))
    });
    let mut off = 0u32;
    for i in order {
        let (size, align, ref known) = *list[i].kcfg.as_ref().expect("kcfg");
        off = off.div_ceil(align) * align;
        let reported = unresolved
            .iter()
            .any(|u| u.starts_with(&format!("{}:", list[i].name)));
        if known.is_none() && !list[i].weak && !reported {
            unresolved.push(format!("{}: kconfig value unknown", list[i].name));
        }
        list[i].value = ExternValue::Kconfig { offset: off };
        off += size;
    }
    Ok(Externs { list })
}

/// The `.kconfig` map, if any extern lives there.
pub fn kconfig_map(ext: &Externs, obj_name: &str) -> Option<MapDef> {
    let mut size = 0u32;
    for e in &ext.list {
        if let (ExternValue::Kconfig { offset }, Some((sz, _, _))) = (&e.value, &e.kcfg) {
            size = size.max(offset + sz);
        }
    }
    if size == 0 {
        return None;
    }
    let mut data = vec![0u8; size as usize];
    for e in &ext.list {
        if let (ExternValue::Kconfig { offset }, Some((_, _, Some(bytes)))) = (&e.value, &e.kcfg) {
            data[*offset as usize..*offset as usize + bytes.len()].copy_from_slice(bytes);
        }
    }
    Some(MapDef {
        section: ".kconfig".into(),
        origin: MapOrigin::Kconfig,
        map_flags: uapi::BPF_F_RDONLY_PROG | uapi::BPF_F_MMAPABLE,
        init: MapInit::Data(data),
        frozen: true,
        ..MapDef::new(
            &crate::maps::internal_map_name(obj_name, ".kconfig"),
            MapType::ARRAY,
            4,
            size,
            1,
        )
    })
}

/// Writes the kconfig layout into the `.kconfig` DATASEC of the raw BTF
/// (size and variable offsets), as libbpf does before loading BTF.
pub fn patch_kconfig_datasec(raw: &mut [u8], btf: &Btf, ext: &Externs) {
    let Some(sec_id) = btf.find_by_name_kind(".kconfig", Kind::Datasec) else {
        return;
    };
    let Some(rec) = btf.record_offset(sec_id) else {
        return;
    };
    let t = btf.type_by_id(sec_id).expect("found id");
    let mut total = 0u32;
    for (i, v) in btf.datasec_vars(t).iter().enumerate() {
        let Some(e) = ext.list.iter().find(|e| e.btf_var == v.type_id) else {
            continue;
        };
        if let (ExternValue::Kconfig { offset }, Some((size, _, _))) = (&e.value, &e.kcfg) {
            let at = rec + 12 + 12 * i + 4;
            raw[at..at + 4].copy_from_slice(&offset.to_le_bytes());
            total = total.max(offset + size);
            if let Some(var_rec) = btf.record_offset(v.type_id) {
                raw[var_rec + 12..var_rec + 16]
                    .copy_from_slice(&BTF_VAR_GLOBAL_ALLOCATED.to_le_bytes());
            }
        }
    }
    raw[rec + 8..rec + 12].copy_from_slice(&total.to_le_bytes());
    // The layout orders externs by alignment, the DATASEC by declaration:
    // libbpf then sorts the entries by offset, which the kernel requires.
    let n = btf.datasec_vars(t).len();
    let entries = rec + 12..rec + 12 + 12 * n;
    let mut sorted: Vec<[u8; 12]> = raw[entries.clone()]
        .chunks_exact(12)
        .map(|c| c.try_into().expect("12 bytes"))
        .collect();
    sorted.sort_by_key(|e| u32::from_le_bytes(e[4..8].try_into().expect("4 bytes")));
    raw[entries].copy_from_slice(&sorted.concat());
}

/// Rewrites the `.ksyms` DATASEC as libbpf does before BPF_BTF_LOAD: every
/// entry becomes a 4-byte slot; extern VARs become allocated ints; kfunc
/// FUNCs become global, their unnamed params get a name, and their DATASEC
/// slot points at an appended `dummy_ksym` VAR (the kernel wants only VARs
/// in a DATASEC).
pub fn sanitize_ksyms(mut raw: Vec<u8>, btf: &Btf) -> Result<Vec<u8>, BtfError> {
    let Some(sec_id) = btf.find_by_name_kind(".ksyms", Kind::Datasec) else {
        return Ok(raw);
    };
    let sec = btf.type_by_id(sec_id).expect("found id");
    let vars = btf.datasec_vars(sec);
    let has_func = vars.iter().any(|v| {
        btf.type_by_id(v.type_id)
            .is_some_and(|t| t.kind == Kind::Func)
    });
    let int_id = btf
        .ids()
        .find(|&id| {
            btf.type_by_id(id)
                .and_then(|t| t.int_info())
                .is_some_and(|i| i.2 == 32)
        })
        .unwrap_or(0);
    let dummy_id = btf.len();
    let dummy_name = btf.strings_len();
    let put =
        |raw: &mut Vec<u8>, at: usize, v: u32| raw[at..at + 4].copy_from_slice(&v.to_le_bytes());
    let rec = btf.record_offset(sec_id).expect("valid id");
    for (i, v) in vars.iter().enumerate() {
        let Some(vt) = btf.type_by_id(v.type_id) else {
            continue;
        };
        let vrec = btf.record_offset(v.type_id).expect("valid id");
        if vt.kind == Kind::Func {
            if let Some(proto) = btf.type_by_id(vt.size_or_type) {
                let prec = btf.record_offset(vt.size_or_type).expect("valid id");
                for (j, p) in btf.params(proto).iter().enumerate() {
                    if p.type_id != 0 && p.name_off == 0 {
                        put(&mut raw, prec + 12 + 8 * j, dummy_name);
                    }
                }
            }
            let info = u32::from_le_bytes(raw[vrec + 4..vrec + 8].try_into().expect("4 bytes"));
            put(&mut raw, vrec + 4, (info & !0xffff) | BTF_FUNC_GLOBAL);
            put(&mut raw, rec + 12 + 12 * i, dummy_id);
        } else if vt.kind == Kind::Var {
            put(&mut raw, vrec + 12, BTF_VAR_GLOBAL_ALLOCATED);
            put(&mut raw, vrec + 8, int_id);
        }
        put(&mut raw, rec + 12 + 12 * i + 4, 4 * i as u32);
        put(&mut raw, rec + 12 + 12 * i + 8, 4);
    }
    put(&mut raw, rec + 8, 4 * vars.len() as u32);
    if !has_func {
        return Ok(raw);
    }
    let mut record = Vec::with_capacity(16);
    for w in [
        dummy_name,
        (Kind::Var as u32) << 24,
        int_id,
        BTF_VAR_GLOBAL_ALLOCATED,
    ] {
        record.extend_from_slice(&w.to_le_bytes());
    }
    append_raw(&raw, &record, b"dummy_ksym\0")
}
