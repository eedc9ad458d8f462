//! Special fields of map values (the kernel's `btf_record`, found in the
//! value's BTF at map creation by btf_parse_fields) and the rules for
//! touching them: kptrs only by 8-byte loads and stores at their exact
//! offset (check_map_access, check_map_kptr_access), never through helper
//! memory arguments; other special fields (locks, timers, ...) never by
//! loads and stores. `bpf_kptr_xchg` needs a referenced kptr field as its
//! destination (process_kptr_func).
//!
//! Modelled: kptrs to vmlinux structs (`__kptr`, `__kptr_untrusted`),
//! loads marked untrusted or RCU-protected as the kernel does, stores of
//! NULL or of a matching unreferenced pointer. Refused by name: kptrs to
//! types outside vmlinux (program-local or module types), percpu kptrs,
//! uptrs, and bpf_list_head / bpf_rb_root fields.

use crate::check_alu::tnum_str;
use crate::error::{VResult, VerifyError};
use crate::explore::Env;
use crate::helpers::kfuncs::{KPTR_DTOR_TYPES, RCU_PROTECTED_KPTR_TYPES};
use crate::regs::{flag, Reg, RegType};
use bpfvet_isa::opcode::{BPF_LDX, BPF_MEM, BPF_ST, BPF_STX};
use bpfvet_isa::uapi::ProgType;
use bpfvet_object::btf::{Btf, BtfType, Kind};
use bpfvet_object::{MapDef, Object, Program};

/// How many special fields a value may have (BTF_FIELDS_MAX).
const FIELDS_MAX: usize = 11;
const MAX_RESOLVE_DEPTH: u32 = 32;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum KptrKind {
    Unref,
    Ref,
    Percpu,
    Uptr,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldKind {
    Kptr {
        kind: KptrKind,
        /// The pointee in vmlinux BTF; None for types bpfvet cannot place.
        target: Option<u32>,
        name: String,
    },
    /// bpf_list_head / bpf_rb_root: graph roots, not modelled.
    GraphRoot(&'static str),
    /// Locks, timers, workqueues, refcounts: opaque to the program.
    Opaque(&'static str),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecialField {
    pub off: u32,
    pub size: u32,
    pub kind: FieldKind,
}

impl SpecialField {
    /// btf_field_type_name.
    pub fn type_name(&self) -> &'static str {
        match &self.kind {
            FieldKind::Kptr { kind, .. } => match kind {
                KptrKind::Unref | KptrKind::Ref => "kptr",
                KptrKind::Percpu => "percpu_kptr",
                KptrKind::Uptr => "uptr",
            },
            FieldKind::GraphRoot(n) | FieldKind::Opaque(n) => n,
        }
    }
    fn kptr_kind(&self) -> Option<KptrKind> {
        match self.kind {
            FieldKind::Kptr { kind, .. } => Some(kind),
            _ => None,
        }
    }
}

/// A map value's special fields, empty when it has none or when the
/// kernel would have dropped the record (a parse error leaves the map
/// without one).
pub type Record = Vec<SpecialField>;

/// Named special structs: (name, size, alignment, at most one per value).
const SPECIAL_STRUCTS: &[(&str, u32, u32, bool)] = &[
    ("bpf_spin_lock", 4, 4, true),
    ("bpf_res_spin_lock", 8, 4, true),
    ("bpf_timer", 16, 8, true),
    ("bpf_wq", 16, 8, true),
    ("bpf_task_work", 8, 8, true),
    ("bpf_list_head", 16, 8, false),
    ("bpf_rb_root", 16, 8, false),
    ("bpf_refcount", 4, 4, true),
];

struct Finder<'b> {
    btf: &'b Btf,
    seen: Vec<&'static str>,
}

/// Why the kernel would drop the record (any parse error).
struct Drop;

impl Finder<'_> {
    fn struct_fields(&mut self, t: &BtfType, level: u32) -> Result<Record, Drop> {
        let mut out = Record::new();
        for m in self.btf.members(t) {
            if m.bit_offset % 8 != 0 {
                return Err(Drop);
            }
            let found = self.field_one(
                m.type_id,
                m.bit_offset / 8,
                0,
                level,
                FIELDS_MAX - out.len(),
            )?;
            out.extend(found);
        }
        Ok(out)
    }

    fn datasec_fields(&mut self, t: &BtfType) -> Result<Record, Drop> {
        let mut out = Record::new();
        for v in self.btf.datasec_vars(t) {
            let Some(var) = self.btf.type_by_id(v.type_id) else {
                return Err(Drop);
            };
            let found = self.field_one(
                var.size_or_type,
                v.offset,
                v.size,
                0,
                FIELDS_MAX - out.len(),
            )?;
            out.extend(found);
        }
        Ok(out)
    }

    /// btf_find_field_one: the fields of one member or variable.
    fn field_one(
        &mut self,
        type_id: u32,
        off: u32,
        expected_size: u32,
        level: u32,
        room: usize,
    ) -> Result<Record, Drop> {
        let btf = self.btf;
        let mut nelems: u64 = 1;
        let mut id = type_id;
        let mut t = btf.type_by_id(id).ok_or(Drop)?;
        let mut depth = 0;
        while t.kind == Kind::Array {
            if depth == MAX_RESOLVE_DEPTH {
                return Err(Drop);
            }
            let (elem, _, n) = t.array_info().ok_or(Drop)?;
            nelems = nelems.saturating_mul(n as u64);
            id = elem;
            t = btf.type_by_id(id).ok_or(Drop)?;
            depth += 1;
        }
        if nelems == 0 {
            return Ok(Record::new());
        }
        let name = btf.name(t);
        let special = SPECIAL_STRUCTS.iter().find(|s| s.0 == name);
        if let Some(&(sname, _, _, once)) = special {
            if once {
                if self.seen.contains(&sname) {
                    return Err(Drop);
                }
                self.seen.push(sname);
            }
        }
        let Some(&(sname, size, align, _)) = special else {
            if t.kind == Kind::Struct {
                if expected_size != 0 && expected_size as u64 != t.size_or_type as u64 * nelems {
                    return Ok(Record::new());
                }
                if level + 1 >= MAX_RESOLVE_DEPTH {
                    return Err(Drop);
                }
                let inner = self.struct_fields(t, level + 1)?;
                let shifted: Record = inner
                    .into_iter()
                    .map(|mut f| {
                        f.off += off;
                        f
                    })
                    .collect();
                return repeat(shifted, nelems, t.size_or_type, room);
            }
            // Anything else may be a kptr.
            if expected_size != 0 && expected_size as u64 != 8 * nelems || !off.is_multiple_of(8) {
                return Ok(Record::new());
            }
            let Some(field) = self.kptr(t, off)? else {
                return Ok(Record::new());
            };
            return repeat(vec![field], nelems, 8, room);
        };
        if expected_size != 0 && expected_size as u64 != size as u64 * nelems
            || !off.is_multiple_of(align)
        {
            return Ok(Record::new());
        }
        if t.kind != Kind::Struct || t.size_or_type != size {
            return Ok(Record::new());
        }
        let kind = if matches!(sname, "bpf_list_head" | "bpf_rb_root") {
            FieldKind::GraphRoot(sname)
        } else {
            FieldKind::Opaque(sname)
        };
        repeat(vec![SpecialField { off, size, kind }], nelems, size, room)
    }

    /// btf_find_kptr: a pointer tagged kptr, kptr_untrusted, percpu_kptr
    /// or uptr, to a struct.
    fn kptr(&self, t: &BtfType, off: u32) -> Result<Option<SpecialField>, Drop> {
        let btf = self.btf;
        let mut t = t;
        if t.kind == Kind::Volatile {
            t = btf.type_by_id(t.size_or_type).ok_or(Drop)?;
        }
        if t.kind != Kind::Ptr {
            return Ok(None);
        }
        let tag = btf.type_by_id(t.size_or_type).ok_or(Drop)?;
        if tag.kind != Kind::TypeTag {
            return Ok(None);
        }
        if btf
            .type_by_id(tag.size_or_type)
            .is_some_and(|n| n.kind == Kind::TypeTag)
        {
            return Err(Drop);
        }
        let kind = match btf.name(tag) {
            "kptr_untrusted" => KptrKind::Unref,
            "kptr" => KptrKind::Ref,
            "percpu_kptr" => KptrKind::Percpu,
            "uptr" => KptrKind::Uptr,
            _ => return Err(Drop),
        };
        let (_, st) = btf.skip_mods_and_typedefs(tag.size_or_type).ok_or(Drop)?;
        if st.kind != Kind::Struct {
            return Err(Drop);
        }
        let name = btf.name(st).to_string();
        let target =
            crate::btf_walk::vmlinux().and_then(|v| v.find_by_name_kind(&name, Kind::Struct));
        // A referenced kptr to a kernel type needs a registered destructor.
        if kind == KptrKind::Ref && target.is_some() && !KPTR_DTOR_TYPES.contains(&name.as_str()) {
            return Err(Drop);
        }
        Ok(Some(SpecialField {
            off,
            size: 8,
            kind: FieldKind::Kptr { kind, target, name },
        }))
    }
}

/// btf_repeat_fields: the fields of an array's first element, for each
/// element.
fn repeat(fields: Record, nelems: u64, elem_size: u32, room: usize) -> Result<Record, Drop> {
    if fields.is_empty() {
        return Ok(fields);
    }
    if nelems > 1
        && fields
            .iter()
            .any(|f| !matches!(f.kind, FieldKind::Kptr { .. } | FieldKind::GraphRoot(_)))
    {
        return Err(Drop);
    }
    let total = (fields.len() as u64).saturating_mul(nelems);
    if total > room as u64 {
        return Err(Drop);
    }
    let mut out = Record::new();
    for i in 0..nelems {
        for f in &fields {
            let mut f = f.clone();
            f.off = f.off.wrapping_add((i as u32).wrapping_mul(elem_size));
            out.push(f);
        }
    }
    Ok(out)
}

/// The record the kernel builds for map `m` of `obj`.
pub fn map_record(obj: &Object, m: &MapDef) -> Record {
    let Some(btf) = obj.btf.as_ref() else {
        return Record::new();
    };
    if m.btf_value_type_id == 0 {
        return Record::new();
    }
    let Some((_, t)) = btf.skip_mods_and_typedefs(m.btf_value_type_id) else {
        return Record::new();
    };
    let mut f = Finder {
        btf,
        seen: Vec::new(),
    };
    let found = match t.kind {
        Kind::Struct => f.struct_fields(t, 0),
        Kind::Datasec => f.datasec_fields(t),
        _ => Err(Drop),
    };
    let Ok(fields) = found else {
        return Record::new();
    };
    // In order, without overlaps, inside the value.
    let mut next = 0u64;
    for fld in &fields {
        if (fld.off as u64) < next || fld.off as u64 + fld.size as u64 > m.value_size as u64 {
            return Record::new();
        }
        next = fld.off as u64 + fld.size as u64;
    }
    let graph = fields
        .iter()
        .any(|f| matches!(f.kind, FieldKind::GraphRoot(_)));
    let lock = fields.iter().any(|f| {
        matches!(
            f.kind,
            FieldKind::Opaque("bpf_spin_lock" | "bpf_res_spin_lock")
        )
    });
    if graph && !lock {
        return Record::new();
    }
    fields
}

/// Program types the kernel counts as tracing (is_tracing_prog_type).
fn is_tracing_prog_type(t: ProgType) -> bool {
    matches!(
        t,
        ProgType::KPROBE
            | ProgType::TRACEPOINT
            | ProgType::PERF_EVENT
            | ProgType::RAW_TRACEPOINT
            | ProgType::RAW_TRACEPOINT_WRITABLE
    )
}

/// check_map_prog_compatibility, for each map the program loads (the
/// kernel checks them before verifying): special fields some program
/// types cannot use yet.
pub fn check_map_prog_compatibility(obj: &Object, prog: &Program) -> Result<(), VerifyError> {
    use bpfvet_isa::opcode::{
        BPF_PSEUDO_MAP_FD, BPF_PSEUDO_MAP_IDX, BPF_PSEUDO_MAP_IDX_VALUE, BPF_PSEUDO_MAP_VALUE,
    };
    let tracing = is_tracing_prog_type(prog.prog_type);
    let mut i = 0;
    while i < prog.insns.len() {
        let insn = prog.insns[i];
        if !insn.is_ld_imm64() {
            i += 1;
            continue;
        }
        let loads_map = matches!(
            insn.src,
            BPF_PSEUDO_MAP_FD
                | BPF_PSEUDO_MAP_VALUE
                | BPF_PSEUDO_MAP_IDX
                | BPF_PSEUDO_MAP_IDX_VALUE
        );
        if let Some(m) = obj.maps.get(insn.imm as u32 as usize).filter(|_| loads_map) {
            let rec = map_record(obj, m);
            let has = |name: &str| {
                rec.iter().any(|f| {
                    matches!(f.kind, FieldKind::Opaque(n) | FieldKind::GraphRoot(n) if n == name)
                })
            };
            let err = |msg: &str| Err(VerifyError::new(Some(i), msg.to_string()));
            if tracing && (has("bpf_list_head") || has("bpf_rb_root")) {
                return err("tracing progs cannot use bpf_{list_head,rb_root} yet");
            }
            if has("bpf_spin_lock") || has("bpf_res_spin_lock") {
                if prog.prog_type == ProgType::SOCKET_FILTER {
                    return err("socket filter progs cannot use bpf_spin_lock yet");
                }
                if tracing {
                    return err("tracing progs cannot use bpf_spin_lock yet");
                }
            }
            if tracing && has("bpf_timer") {
                return err("tracing progs cannot use bpf_timer yet");
            }
            if tracing && has("bpf_wq") {
                return err("tracing progs cannot use bpf_wq yet");
            }
        }
        i += 2;
    }
    Ok(())
}

/// Records of an object's maps and of their inner-map templates.
#[derive(Default)]
pub struct MapRecords {
    outer: Vec<Record>,
    inner: Vec<Record>,
}

impl MapRecords {
    pub fn new(obj: &Object) -> MapRecords {
        MapRecords {
            outer: obj.maps.iter().map(|m| map_record(obj, m)).collect(),
            inner: obj
                .maps
                .iter()
                .map(|m| {
                    m.inner
                        .as_deref()
                        .map(|i| map_record(obj, i))
                        .unwrap_or_default()
                })
                .collect(),
        }
    }
}

impl Env<'_> {
    /// The record of the map a map-value register points into.
    pub fn map_record(&self, m: u32) -> &[SpecialField] {
        let r = if m & crate::explore::INNER_MAP != 0 {
            self.records
                .inner
                .get((m & !crate::explore::INNER_MAP) as usize)
        } else {
            self.records.outer.get(m as usize)
        };
        r.map_or(&[], |r| r.as_slice())
    }

    fn unmodelled<T>(&self, what: String) -> VResult<T> {
        Err(VerifyError::unsupported(Some(self.insn_idx), what))
    }

    /// check_map_access's rule for special fields: an access of `size`
    /// bytes at `off` (plus the register's variable part) that touches
    /// one. `direct`: a load or store (not a helper or callee's access).
    /// Returns the kptr field an exact access hits.
    pub fn check_map_special_fields(
        &self,
        reg: &Reg,
        off: i32,
        size: u32,
        direct: bool,
    ) -> VResult<Option<SpecialField>> {
        let mut hit = None;
        for f in self.map_record(reg.map) {
            let p = f.off as i128;
            let lo = reg.v.smin as i128 + off as i128;
            let hi = reg.v.umax as i128 + off as i128 + size as i128;
            if !(lo < p + f.size as i128 && p < hi) {
                continue;
            }
            let name = f.type_name();
            match f.kind {
                FieldKind::Kptr { .. } => {
                    if !direct {
                        return self.err(format!("{name} cannot be accessed indirectly by helper"));
                    }
                    if !reg.v.is_const() {
                        return self.err(format!("{name} access cannot have variable offset"));
                    }
                    let at = off as i128 + reg.v.const_value() as i128;
                    if p != at {
                        return self.err(format!("{name} access misaligned expected={p} off={at}"));
                    }
                    if size != 8 {
                        return self.err(format!("{name} access size must be BPF_DW"));
                    }
                    hit = Some(f.clone());
                }
                FieldKind::GraphRoot(_) => {
                    return self.unmodelled(format!("access to a map value's {name} field"));
                }
                FieldKind::Opaque(_) => {
                    return self.err(format!("{name} cannot be accessed directly by load/store"));
                }
            }
        }
        Ok(hit)
    }

    /// check_map_kptr_access: a load or store at a kptr field. `value`
    /// is the loaded-into or stored register (None for BPF_ST).
    pub fn check_map_kptr_access(&mut self, f: &SpecialField, value: Option<u8>) -> VResult<()> {
        let insn = self.insns[self.insn_idx];
        let class = insn.code & 0x07;
        let FieldKind::Kptr { kind, target, name } = &f.kind else {
            return Ok(());
        };
        if insn.code & 0xe0 != BPF_MEM {
            return self.err("kptr in map can only be accessed using BPF_MEM instruction mode");
        }
        if class != BPF_LDX && matches!(kind, KptrKind::Ref | KptrKind::Percpu) {
            return self.err("store to referenced kptr disallowed");
        }
        if class != BPF_LDX && *kind == KptrKind::Uptr {
            return self.err("store to uptr disallowed");
        }
        if matches!(kind, KptrKind::Percpu | KptrKind::Uptr) {
            return self.unmodelled(format!("loads of {} fields", f.type_name()));
        }
        let Some(target) = *target else {
            return self.unmodelled(format!(
                "kptrs to struct {name}, a type outside vmlinux BTF"
            ));
        };
        match class {
            BPF_LDX => {
                let Some(d) = value else { return Ok(()) };
                let mut r = Reg::pointer(RegType::BtfId);
                r.aux = target;
                r.flags = flag::MAYBE_NULL;
                let rcu_safe =
                    *kind == KptrKind::Ref && RCU_PROTECTED_KPTR_TYPES.contains(&name.as_str());
                r.flags |= if rcu_safe && self.in_rcu_cs() {
                    flag::RCU
                } else {
                    flag::UNTRUSTED
                };
                r.id = self.new_id();
                *self.cur.reg_mut(d) = r;
                Ok(())
            }
            BPF_STX => {
                let Some(v) = value else { return Ok(()) };
                let vr = *self.cur.reg(v);
                if vr.is_null_const() {
                    return self.mark_chain_precision(v);
                }
                self.kptr_match_type(f, v)
            }
            BPF_ST => {
                if insn.imm != 0 {
                    return self.err(format!(
                        "BPF_ST imm must be 0 when storing to kptr at off={}",
                        f.off
                    ));
                }
                Ok(())
            }
            _ => self.err("kptr in map can only be accessed using BPF_LDX/BPF_STX/BPF_ST"),
        }
    }

    /// Inside an RCU read-side section (in_rcu_cs): a non-sleepable
    /// program is always in one.
    pub fn in_rcu_cs(&self) -> bool {
        self.cur.active_rcu_lock || self.cur.active_locks > 0 || !self.cur.in_sleepable
    }

    /// map_kptr_match_type: register `regno` may be stored into (or
    /// exchanged with) kptr field `f`.
    pub fn kptr_match_type(&mut self, f: &SpecialField, regno: u8) -> VResult<()> {
        let FieldKind::Kptr { kind, target, name } = &f.kind else {
            return Ok(());
        };
        let Some(target) = *target else {
            return self.unmodelled(format!(
                "kptrs to struct {name}, a type outside vmlinux BTF"
            ));
        };
        let r = *self.cur.reg(regno);
        let mut perm = flag::MAYBE_NULL | flag::TRUSTED | flag::RCU;
        if *kind == KptrKind::Unref {
            perm |= flag::UNTRUSTED;
        }
        let vm = crate::btf_walk::vmlinux();
        let bad = |env: &Self, reg_name: &str| -> VResult<()> {
            let mut msg = format!(
                "invalid kptr access, R{regno} type={}{reg_name} expected=ptr_{name}",
                r.type_str()
            );
            if *kind == KptrKind::Unref {
                msg.push_str(&format!(" or untrusted_ptr_{name}"));
            }
            env.err(msg)
        };
        if r.ty != RegType::BtfId || r.flags & !perm != 0 {
            return bad(self, "");
        }
        if r.aux == 0 {
            return self.unmodelled("storing a BTF pointer of unknown type into a kptr".into());
        }
        let reg_name = vm.map_or("", |b| b.name_of(r.aux)).to_string();
        if r.off < 0 {
            return self.err(format!(
                "negative offset {} ptr R{regno} off={} disallowed",
                r.type_str(),
                r.off
            ));
        }
        if !r.v.is_const() || r.v.const_value() != 0 {
            return self.err(format!(
                "variable {} access var_off={} disallowed",
                r.type_str(),
                tnum_str(&r.v)
            ));
        }
        let strict = *kind != KptrKind::Unref;
        let matched = if r.off == 0 && r.aux == target {
            true
        } else if strict {
            false
        } else {
            vm.is_some_and(|b| crate::btf_walk::nested_struct_match(b, r.aux, r.off as u32, target))
        };
        if !matched {
            return bad(self, &reg_name);
        }
        Ok(())
    }

    /// process_kptr_func: the destination of `bpf_kptr_xchg` in `regno`.
    pub fn check_kptr_xchg_dest(&mut self, regno: u8) -> VResult<SpecialField> {
        let r = *self.cur.reg(regno);
        if r.ty != RegType::MapValue {
            return self.unmodelled("bpf_kptr_xchg into allocated objects".into());
        }
        let Some(m) = self.map_def(r.map) else {
            return self.err("invalid map_ptr to access map->value");
        };
        if m.btf_value_type_id == 0 || self.obj.btf.is_none() {
            return self.err(format!(
                "map '{}' has to have BTF in order to use bpf_kptr_xchg",
                m.name.chars().take(15).collect::<String>()
            ));
        }
        if !r.v.is_const() {
            return self.err(format!(
                "R{regno} doesn't have constant offset. kptr has to be at the constant offset"
            ));
        }
        let rec = self.map_record(r.map);
        if !rec.iter().any(|f| f.kptr_kind().is_some()) {
            return self.err(format!("R{regno} has no valid kptr"));
        }
        let off = r.off as i64 + r.v.const_value() as i64;
        let field = rec
            .iter()
            .find(|f| {
                f.kptr_kind().is_some()
                    && (f.off as i64..f.off as i64 + f.size as i64).contains(&off)
            })
            .cloned();
        let Some(field) = field else {
            return self.err(format!("off={off} doesn't point to kptr"));
        };
        match field.kptr_kind() {
            Some(KptrKind::Ref) => {}
            Some(KptrKind::Percpu) => {
                return self.unmodelled("bpf_kptr_xchg on percpu_kptr fields".into());
            }
            _ => return self.err(format!("off={off} kptr isn't referenced kptr")),
        }
        if let FieldKind::Kptr {
            target: None, name, ..
        } = &field.kind
        {
            return self.unmodelled(format!(
                "kptrs to struct {name}, a type outside vmlinux BTF"
            ));
        }
        Ok(field)
    }
}
