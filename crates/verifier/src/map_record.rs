//! The special fields of a map value (the kernel's `btf_record`, built by
//! btf_parse_fields from the value's BTF when the map is created): where a
//! value's `struct bpf_spin_lock`, `bpf_timer`, kptrs ... live. Loads and
//! stores must not touch them (kptrs only as kptr.rs allows), bpf_spin_lock
//! must be given exactly the lock, and some program types may not use such
//! a map at all (map_refs).

use bpfvet_object::btf::{Btf, Kind, MAX_RESOLVE_DEPTH};
use bpfvet_object::MapDef;

/// A special struct the kernel finds by name: its name (also the kernel's
/// name for the field in messages), size and alignment.
struct SpecialStruct {
    name: &'static str,
    size: u32,
    align: u32,
    /// At most one per value (a second, or an array of them, fails map
    /// creation); graph roots may repeat.
    unique: bool,
    /// Recorded in map values, in objects the program allocates, or both
    /// (the field masks btf_parse_fields is given for each).
    owners: Owners,
    /// A member of this type gives a struct of the program's BTF a record
    /// at all (btf_parse_struct_metas' alloc_obj_fields); a resilient lock
    /// alone does not.
    makes_meta: bool,
}

/// Whose record a special struct is part of.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Owners {
    MapValue,
    Allocated,
    Both,
}

/// Which record is being built: a map value's or an allocated object's.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Owner {
    MapValue,
    Allocated,
}

impl Owners {
    fn has(self, o: Owner) -> bool {
        match self {
            Owners::Both => true,
            Owners::MapValue => o == Owner::MapValue,
            Owners::Allocated => o == Owner::Allocated,
        }
    }
}

/// The object kinds a map value may embed that are not kptrs (kptrs are
/// tagged pointers, found by `kptr`).
const SPECIAL_STRUCTS: &[SpecialStruct] = &[
    SpecialStruct {
        name: "bpf_spin_lock",
        size: 4,
        align: 4,
        unique: true,
        makes_meta: true,
        owners: Owners::Both,
    },
    SpecialStruct {
        name: "bpf_res_spin_lock",
        size: 4,
        align: 4,
        unique: true,
        makes_meta: false,
        owners: Owners::Both,
    },
    SpecialStruct {
        name: "bpf_timer",
        size: 16,
        align: 8,
        unique: true,
        makes_meta: false,
        owners: Owners::MapValue,
    },
    SpecialStruct {
        name: "bpf_wq",
        size: 16,
        align: 8,
        unique: true,
        makes_meta: false,
        owners: Owners::MapValue,
    },
    SpecialStruct {
        name: "bpf_task_work",
        size: 8,
        align: 8,
        unique: true,
        makes_meta: false,
        owners: Owners::MapValue,
    },
    SpecialStruct {
        name: "bpf_refcount",
        size: 4,
        align: 4,
        unique: true,
        makes_meta: true,
        owners: Owners::Both,
    },
    SpecialStruct {
        name: "bpf_list_head",
        size: 16,
        align: 8,
        unique: false,
        makes_meta: true,
        owners: Owners::Both,
    },
    SpecialStruct {
        name: "bpf_rb_root",
        size: 16,
        align: 8,
        unique: false,
        makes_meta: true,
        owners: Owners::Both,
    },
    SpecialStruct {
        name: "bpf_list_node",
        size: 24,
        align: 8,
        unique: false,
        makes_meta: true,
        owners: Owners::Allocated,
    },
    SpecialStruct {
        name: "bpf_rb_node",
        size: 32,
        align: 8,
        unique: false,
        makes_meta: true,
        owners: Owners::Allocated,
    },
];

/// The kernel's BTF_FIELDS_MAX: a value with more special fields fails
/// map creation.
const FIELDS_MAX: usize = 11;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// The kernel's name for the field in messages (btf_field_type_name):
    /// the struct's, e.g. "bpf_spin_lock", or "kptr", "percpu_kptr", "uptr".
    pub name: &'static str,
    pub off: u32,
    pub size: u32,
    /// Set for kptr fields.
    pub kptr: Option<Kptr>,
    /// Set for graph roots (bpf_list_head, bpf_rb_root): what their
    /// `__contains(type, node)` tag names.
    pub graph: Option<GraphRoot>,
}

/// The nodes a graph root holds: struct `value_btf_id` of the program's
/// BTF, linked through its node member at byte `node_off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphRoot {
    pub value_btf_id: u32,
    pub node_off: u32,
}

/// The tag of a kptr field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KptrKind {
    /// `__kptr_untrusted`
    Unref,
    /// `__kptr`
    Ref,
    /// `__percpu_kptr`
    Percpu,
    /// `__uptr`
    Uptr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kptr {
    pub kind: KptrKind,
    /// The pointee struct in the program's BTF.
    pub btf_id: u32,
    /// The same struct in vmlinux BTF; None for types bpfvet cannot place
    /// (program-local or module types).
    pub target: Option<u32>,
    /// A struct of the program's own BTF (btf_parse_kptr finds it neither
    /// in vmlinux nor in a loaded module): a kptr to allocated objects.
    pub local: bool,
}

impl Field {
    pub fn kptr_kind(&self) -> Option<KptrKind> {
        self.kptr.map(|k| k.kind)
    }
}

/// The special fields of a map's value; empty without BTF or when the
/// kernel would not record them.
pub fn map_fields(btf: Option<&Btf>, map: &MapDef) -> Vec<Field> {
    let (Some(btf), id) = (btf, map.btf_value_type_id) else {
        return Vec::new();
    };
    if id == 0 {
        return Vec::new();
    }
    let Some((sid, t)) = btf.skip_mods_and_typedefs(id) else {
        return Vec::new();
    };
    let owner = Owner::MapValue;
    let mut out = Vec::new();
    let ok = match t.kind {
        // Unions are not searched (the kernel's __btf_type_is_struct).
        Kind::Struct => struct_fields(btf, sid, t, 0, 0, owner, &mut out),
        Kind::Datasec => {
            let mut ok = true;
            for v in btf.datasec_vars(t) {
                let Some(var) = btf.type_by_id(v.type_id) else {
                    continue;
                };
                if var.kind != Kind::Var {
                    continue;
                }
                let at = FieldAt {
                    type_id: var.size_or_type,
                    off: v.offset,
                    expected_size: v.size,
                    tags: (v.type_id, -1),
                };
                ok &= field_one(btf, at, 0, owner, &mut out);
            }
            ok
        }
        _ => true,
    };
    // Two of a kind (or a malformed record) fail map creation: nothing the
    // verifier would see; leave the record empty.
    let dup = out
        .iter()
        .enumerate()
        .any(|(i, f)| is_unique(f.name) && out[..i].iter().any(|g| g.name == f.name));
    if !ok || dup || !well_placed(&out, map.value_size) {
        return Vec::new();
    }
    out
}

/// The record of struct `id` of the program's BTF as an object the program
/// allocates (btf_parse_struct_metas): Ok(empty) when none of its direct
/// members is a special struct or a kptr (the kernel keeps no record),
/// Err when the record is malformed (the program's BTF fails to load).
pub fn alloc_fields(btf: &Btf, id: u32) -> Result<Vec<Field>, ()> {
    let Some(t) = btf.type_by_id(id).filter(|t| t.kind == Kind::Struct) else {
        return Ok(Vec::new());
    };
    let special: Vec<u32> = SPECIAL_STRUCTS
        .iter()
        .filter(|s| s.makes_meta)
        .filter_map(|s| btf.find_by_name_kind(s.name, Kind::Struct))
        .collect();
    let has_meta = btf.members(t).iter().any(|m| {
        special.contains(&m.type_id)
            || kptr(btf, m.type_id).is_ok_and(|k| k.is_some_and(|k| k.kind != KptrKind::Uptr))
    });
    if !has_meta {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let ok = struct_fields(btf, id, t, 0, 0, Owner::Allocated, &mut out);
    let dup = out
        .iter()
        .enumerate()
        .any(|(i, f)| is_unique(f.name) && out[..i].iter().any(|g| g.name == f.name));
    // A graph root must name a struct of this BTF with such a node.
    let roots_ok = out
        .iter()
        .all(|f| f.graph.is_some() || !matches!(f.name, "bpf_list_head" | "bpf_rb_root"));
    if !ok || dup || !roots_ok || !well_placed(&out, t.size_or_type) {
        return Err(());
    }
    Ok(out)
}

/// Whether the kernel accepts the program's BTF as far as the records of
/// its structs go (btf_parse_struct_metas): Err names a struct whose
/// record is malformed, which makes BPF_BTF_LOAD fail.
pub fn struct_metas_ok(btf: &Btf) -> Result<(), String> {
    for id in btf.ids() {
        if btf.type_by_id(id).is_some_and(|t| t.kind == Kind::Struct)
            && alloc_fields(btf, id).is_err()
        {
            return Err(btf.name_of(id).to_string());
        }
    }
    Ok(())
}

/// btf_parse_fields' last checks: fields in order, not overlapping, inside
/// the value, and graph roots only beside a lock.
fn well_placed(fields: &[Field], value_size: u32) -> bool {
    let mut next = 0u64;
    for f in fields {
        if (f.off as u64) < next || f.off as u64 + f.size as u64 > value_size as u64 {
            return false;
        }
        next = f.off as u64 + f.size as u64;
    }
    let graph = fields
        .iter()
        .any(|f| matches!(f.name, "bpf_list_head" | "bpf_rb_root"));
    let has = |name| fields.iter().any(|f| f.name == name);
    let (spin, res) = (has("bpf_spin_lock"), has("bpf_res_spin_lock"));
    // One kind of lock per value, and graph roots need one.
    !(spin && res) && (!graph || spin || res)
}

fn struct_fields(
    btf: &Btf,
    struct_id: u32,
    t: &bpfvet_object::btf::BtfType,
    base: u32,
    level: usize,
    owner: Owner,
    out: &mut Vec<Field>,
) -> bool {
    let mut ok = true;
    for (idx, m) in btf.members(t).iter().enumerate() {
        if m.bitfield_size != 0 {
            continue;
        }
        if m.bit_offset % 8 != 0 {
            return false;
        }
        let at = FieldAt {
            type_id: m.type_id,
            off: base + m.bit_offset / 8,
            expected_size: 0,
            tags: (struct_id, idx as i32),
        };
        ok &= field_one(btf, at, level, owner, out);
    }
    ok
}

/// Where a member or variable is: its type, byte offset, the size it must
/// have to count (non-zero for DATASEC variables) and the (type, component
/// index) its decl tags name.
#[derive(Clone, Copy)]
struct FieldAt {
    type_id: u32,
    off: u32,
    expected_size: u32,
    tags: (u32, i32),
}

/// One member or variable.
fn field_one(btf: &Btf, at: FieldAt, level: usize, owner: Owner, out: &mut Vec<Field>) -> bool {
    let FieldAt {
        type_id,
        off,
        expected_size,
        ..
    } = at;
    let Some((mut id, mut t)) = btf.skip_mods_and_typedefs(type_id) else {
        return true;
    };
    let mut nelems: u64 = 1;
    for _ in 0..MAX_RESOLVE_DEPTH {
        let Some((elem, _, n)) = t.array_info().filter(|_| t.kind == Kind::Array) else {
            break;
        };
        nelems = nelems.saturating_mul(n as u64);
        match btf.skip_mods_and_typedefs(elem) {
            Some((i, et)) => (id, t) = (i, et),
            None => return true,
        }
    }
    if nelems == 0 {
        return true;
    }
    if t.kind != Kind::Struct {
        // Anything else may be a kptr: 8 bytes each, 8-aligned.
        if expected_size != 0 && expected_size as u64 != 8 * nelems || !off.is_multiple_of(8) {
            return true;
        }
        let Ok(found) = kptr(btf, id) else {
            return false;
        };
        let Some(k) = found else {
            return true;
        };
        if k.kind == KptrKind::Uptr && owner == Owner::Allocated {
            return true;
        }
        for i in 0..nelems {
            if out.len() >= FIELDS_MAX {
                return false;
            }
            out.push(Field {
                name: kptr_name(k.kind),
                off: (off as u64 + i * 8) as u32,
                size: 8,
                kptr: Some(k),
                graph: None,
            });
        }
        return true;
    }
    let name = btf.name(t);
    if let Some(s) = SPECIAL_STRUCTS.iter().find(|s| s.name == name) {
        if !s.owners.has(owner) {
            return true;
        }
        if expected_size != 0 && expected_size as u64 != s.size as u64 * nelems {
            return true;
        }
        if !off.is_multiple_of(s.align) || t.size_or_type != s.size {
            return true;
        }
        if nelems > 1 && s.unique {
            // Arrays of these fail map creation.
            return false;
        }
        let graph = if matches!(s.name, "bpf_list_head" | "bpf_rb_root") {
            let node = if s.name == "bpf_list_head" {
                "bpf_list_node"
            } else {
                "bpf_rb_node"
            };
            // A root without a valid `__contains` makes the record an
            // error: the map gets none, the program's BTF fails to load.
            match graph_root(btf, at.tags, node) {
                Some(g) => Some(g),
                None => return false,
            }
        } else {
            None
        };
        for k in 0..nelems {
            if out.len() >= FIELDS_MAX {
                return false;
            }
            out.push(Field {
                name: s.name,
                off: (off as u64 + k * s.size as u64) as u32,
                size: s.size,
                kptr: None,
                graph,
            });
        }
        return true;
    }
    // Nested structs are searched too, each array element in turn.
    if expected_size != 0 && expected_size as u64 != t.size_or_type as u64 * nelems {
        return true;
    }
    if level + 1 >= MAX_RESOLVE_DEPTH {
        return false;
    }
    let before = out.len();
    if !struct_fields(btf, id, t, off, level + 1, owner, out) {
        return false;
    }
    let inner: Vec<Field> = out[before..].to_vec();
    for k in 1..nelems.min(u32::MAX as u64) {
        if inner.is_empty() {
            break;
        }
        let step = (t.size_or_type as u64) * k;
        if out.len() + inner.len() > FIELDS_MAX {
            return false;
        }
        for f in &inner {
            out.push(Field {
                off: (f.off as u64 + step) as u32,
                ..*f
            });
        }
    }
    true
}

/// The `contains:<struct>:<member>` decl tag of a graph root at `tags`
/// (btf_find_graph_root, btf_parse_graph_root): the struct, found by name
/// in the same BTF, and the offset of its member of kind `node`.
fn graph_root(btf: &Btf, tags: (u32, i32), node: &str) -> Option<GraphRoot> {
    let mut values = btf.ids().filter_map(|i| {
        let t = btf.type_by_id(i)?;
        (t.kind == Kind::DeclTag
            && t.size_or_type == tags.0
            && t.decl_tag_component() == Some(tags.1))
        .then(|| btf.name(t))
        .and_then(|v| v.strip_prefix("contains:"))
    });
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    let (type_name, member) = value.split_once(':')?;
    if member.is_empty() {
        return None;
    }
    let value_btf_id = btf.find_by_name_kind(type_name, Kind::Struct)?;
    let vt = btf.type_by_id(value_btf_id)?;
    let m = btf
        .members(vt)
        .iter()
        .find(|m| btf.str_at(m.name_off) == Some(member))?;
    let (_, mt) = btf.skip_mods_and_typedefs(m.type_id)?;
    if btf.name(mt) != node || m.bit_offset % 8 != 0 {
        return None;
    }
    Some(GraphRoot {
        value_btf_id,
        node_off: m.bit_offset / 8,
    })
}

/// btf_find_kptr: pointer `id` (modifiers skipped) tagged kptr,
/// kptr_untrusted, percpu_kptr or uptr, to a struct. Err: a malformed tag
/// or pointee, which fails map creation.
fn kptr(btf: &Btf, id: u32) -> Result<Option<Kptr>, ()> {
    let Some(t) = btf.type_by_id(id).filter(|t| t.kind == Kind::Ptr) else {
        return Ok(None);
    };
    let tag = btf.type_by_id(t.size_or_type).ok_or(())?;
    if tag.kind != Kind::TypeTag {
        return Ok(None);
    }
    if btf
        .type_by_id(tag.size_or_type)
        .is_some_and(|n| n.kind == Kind::TypeTag)
    {
        return Err(());
    }
    let kind = match btf.name(tag) {
        "kptr_untrusted" => KptrKind::Unref,
        "kptr" => KptrKind::Ref,
        "percpu_kptr" => KptrKind::Percpu,
        "uptr" => KptrKind::Uptr,
        _ => return Err(()),
    };
    let (btf_id, st) = btf.skip_mods_and_typedefs(tag.size_or_type).ok_or(())?;
    if st.kind != Kind::Struct {
        return Err(());
    }
    let name = btf.name(st);
    let target = crate::btf_walk::vmlinux().and_then(|v| v.find_by_name_kind(name, Kind::Struct));
    // A referenced kptr to a kernel type needs a registered destructor.
    if kind == KptrKind::Ref
        && target.is_some()
        && !crate::helpers::kfuncs::KPTR_DTOR_TYPES.contains(&name)
    {
        return Err(());
    }
    let local = target.is_none() && !crate::btf_walk::module_btf_may_define(name);
    Ok(Some(Kptr {
        kind,
        btf_id,
        target,
        local,
    }))
}

fn kptr_name(kind: KptrKind) -> &'static str {
    match kind {
        KptrKind::Unref | KptrKind::Ref => "kptr",
        KptrKind::Percpu => "percpu_kptr",
        KptrKind::Uptr => "uptr",
    }
}

fn is_unique(name: &str) -> bool {
    SPECIAL_STRUCTS.iter().any(|s| s.name == name && s.unique)
}

/// The value's lock, a `struct bpf_spin_lock` or `bpf_res_spin_lock`, if it
/// has one (reg_may_point_to_spin_lock).
pub fn lock_field(fields: &[Field]) -> Option<&Field> {
    fields
        .iter()
        .find(|f| matches!(f.name, "bpf_spin_lock" | "bpf_res_spin_lock"))
}

/// A map's name as the kernel holds it (BPF_OBJ_NAME_LEN with its NUL).
pub fn kernel_map_name(name: &str) -> &str {
    let mut end = name.len().min(15);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// The fields of map `m` (a register's `map`, possibly naming an inner
/// map template) in the per-map table `all`.
pub fn fields_of(all: &[[Vec<Field>; 2]], m: u32) -> &[Field] {
    let inner = m & crate::explore::INNER_MAP != 0;
    all.get((m & !crate::explore::INNER_MAP) as usize)
        .map_or(&[], |f| &f[inner as usize][..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use bpfvet_isa::uapi::MapType;

    /// [1] int, [2] bpf_spin_lock, [3] bpf_rb_root, then `values`: structs
    /// of (member type, byte offset) lists, kind 4 (struct) or 5 (union);
    /// then struct bpf_rb_node, struct n { bpf_rb_node rb; } and a
    /// `contains:n:rb` decl tag on each of the first value's members.
    fn btf(values: &[(u32, &[(u32, u32)])]) -> Btf {
        let strings =
            b"\0int\0bpf_spin_lock\0bpf_rb_root\0v\0m\0bpf_rb_node\0n\0rb\0contains:n:rb\0";
        let (int, lock, root, v, m) = (1u32, 5u32, 19u32, 31u32, 33u32);
        let (node, n, rb, tag) = (35u32, 47u32, 49u32, 52u32);
        let mut t: Vec<u32> = Vec::new();
        t.extend([int, 1 << 24, 4, (1 << 24) | 32]);
        t.extend([lock, (4 << 24) | 1, 4, m, 1, 0]);
        t.extend([root, (4 << 24) | 1, 16, m, 1, 0]);
        for (kind, members) in values {
            t.extend([v, (kind << 24) | members.len() as u32, 64]);
            for (ty, off) in *members {
                t.extend([m, *ty, off * 8]);
            }
        }
        let node_id = 4 + values.len() as u32;
        t.extend([node, (4 << 24) | 1, 32, m, 1, 0]);
        t.extend([n, (4 << 24) | 1, 32, rb, node_id, 0]);
        for idx in 0..values.first().map_or(0, |v| v.1.len()) {
            t.extend([tag, 17 << 24, 4, idx as u32]);
        }
        let types: Vec<u8> = t.iter().flat_map(|w| w.to_le_bytes()).collect();
        let raw = bpfvet_object::btf::encode(&types, strings);
        Btf::from_bytes(&raw).expect("BTF")
    }

    fn fields(b: &Btf, value_type: u32) -> Vec<Field> {
        let mut m = MapDef::new("m", MapType::ARRAY, 4, 64, 1);
        m.btf_value_type_id = value_type;
        map_fields(Some(b), &m)
    }

    #[test]
    fn graph_roots_may_repeat_but_locks_may_not() {
        let b = btf(&[
            (4, &[(3, 0), (3, 16), (2, 32)]),
            (4, &[(2, 0), (2, 8)]),
            (5, &[(2, 0)]),
            (4, &[(1, 0), (6, 8)]),
            (4, &[(3, 0), (2, 32)]),
        ]);
        let f = fields(&b, 4);
        assert_eq!(f.len(), 3);
        assert_eq!(lock_field(&f).map(|l| l.off), Some(32));
        // Two locks fail map creation: no record.
        assert!(fields(&b, 5).is_empty());
        // A union is not searched, even nested in a struct.
        assert!(fields(&b, 6).is_empty());
        assert!(fields(&b, 7).is_empty());
        // A root without `__contains` makes the record an error.
        assert!(fields(&b, 8).is_empty());
        assert_eq!(
            f[0].graph.map(|g| (g.value_btf_id, g.node_off)),
            Some((10, 0))
        );
    }

    #[test]
    fn tagged_pointers_are_kptrs_and_bad_tags_drop_the_record() {
        let strings = b"\0int\0foo\0kptr_untrusted\0bogus\0v\0m\0";
        let (int, foo, untrusted, bogus, v, m) = (1u32, 5u32, 9u32, 24u32, 30u32, 32u32);
        let mut t: Vec<u32> = Vec::new();
        t.extend([int, 1 << 24, 4, (1 << 24) | 32]); // [1] int
        t.extend([foo, 4 << 24, 8]); // [2] struct foo
        t.extend([untrusted, 18 << 24, 2]); // [3] foo __kptr_untrusted
        t.extend([0, 2 << 24, 3]); // [4] pointer to [3]
        t.extend([v, (4 << 24) | 2, 16, m, 1, 0, m, 4, 64]); // [5] {int; [4]}
        t.extend([bogus, 18 << 24, 2]); // [6] foo __bogus
        t.extend([0, 2 << 24, 6]); // [7] pointer to [6]
        t.extend([v, (4 << 24) | 1, 8, m, 7, 0]); // [8] {[7]}
        let types: Vec<u8> = t.iter().flat_map(|w| w.to_le_bytes()).collect();
        let raw = bpfvet_object::btf::encode(&types, strings);
        let b = Btf::from_bytes(&raw).expect("BTF");
        let mut map = MapDef::new("m", MapType::ARRAY, 4, 16, 1);
        map.btf_value_type_id = 5;
        let f = map_fields(Some(&b), &map);
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].name, f[0].off, f[0].size), ("kptr", 8, 8));
        assert_eq!(f[0].kptr_kind(), Some(KptrKind::Unref));
        assert_eq!(f[0].kptr.map(|k| k.btf_id), Some(2));
        map.btf_value_type_id = 8;
        assert!(map_fields(Some(&b), &map).is_empty());
    }
}
