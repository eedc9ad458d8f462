//! BTF (BPF Type Format) reader: the `.BTF` section of an object or a
//! kernel's `/sys/kernel/btf/vmlinux`. Types are addressed by id (0 is void);
//! variable-length parts (members, enum values, params, datasec entries) live
//! in flat arrays so that parsing vmlinux BTF costs one pass and a handful of
//! allocations.

use std::ops::Range;

pub const BTF_MAGIC: u16 = 0xeb9f;

/// A BTF blob (version 1, 24-byte header) holding encoded type records and
/// a string section: for tests and tools that build BTF by hand.
pub fn encode(types: &[u8], strings: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(24 + types.len() + strings.len());
    out.extend_from_slice(&BTF_MAGIC.to_le_bytes());
    out.extend_from_slice(&[1, 0]);
    let (tl, sl) = (types.len() as u32, strings.len() as u32);
    for w in [24u32, 0, tl, tl, sl] {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out.extend_from_slice(types);
    out.extend_from_slice(strings);
    out
}
const HEADER_MIN: usize = 24;
/// Depth limit when following typedef/modifier/array chains; BTF from a file
/// may contain loops, which must not hang us.
pub const MAX_RESOLVE_DEPTH: usize = 32;

#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
pub enum BtfError {
    #[error("header: {0}")]
    Header(String),
    #[error("type [{id}]: {reason}")]
    Type { id: u32, reason: String },
    #[error("string offset {0} outside the string section")]
    String(u32),
    #[error("{0}")]
    Fixup(String),
}

fn type_err(id: u32, reason: impl Into<String>) -> BtfError {
    BtfError::Type {
        id,
        reason: reason.into(),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
#[repr(u8)]
pub enum Kind {
    Void = 0,
    Int = 1,
    Ptr = 2,
    Array = 3,
    Struct = 4,
    Union = 5,
    Enum = 6,
    Fwd = 7,
    Typedef = 8,
    Volatile = 9,
    Const = 10,
    Restrict = 11,
    Func = 12,
    FuncProto = 13,
    Var = 14,
    Datasec = 15,
    Float = 16,
    DeclTag = 17,
    TypeTag = 18,
    Enum64 = 19,
}

impl Kind {
    fn from_u32(k: u32) -> Option<Kind> {
        use Kind::*;
        Some(match k {
            0 => Void,
            1 => Int,
            2 => Ptr,
            3 => Array,
            4 => Struct,
            5 => Union,
            6 => Enum,
            7 => Fwd,
            8 => Typedef,
            9 => Volatile,
            10 => Const,
            11 => Restrict,
            12 => Func,
            13 => FuncProto,
            14 => Var,
            15 => Datasec,
            16 => Float,
            17 => DeclTag,
            18 => TypeTag,
            19 => Enum64,
            _ => return None,
        })
    }

    /// The kernel's spelling, as in `bpftool btf dump`.
    pub fn name(self) -> &'static str {
        use Kind::*;
        match self {
            Void => "VOID",
            Int => "INT",
            Ptr => "PTR",
            Array => "ARRAY",
            Struct => "STRUCT",
            Union => "UNION",
            Enum => "ENUM",
            Fwd => "FWD",
            Typedef => "TYPEDEF",
            Volatile => "VOLATILE",
            Const => "CONST",
            Restrict => "RESTRICT",
            Func => "FUNC",
            FuncProto => "FUNC_PROTO",
            Var => "VAR",
            Datasec => "DATASEC",
            Float => "FLOAT",
            DeclTag => "DECL_TAG",
            TypeTag => "TYPE_TAG",
            Enum64 => "ENUM64",
        }
    }

    pub fn is_modifier(self) -> bool {
        matches!(
            self,
            Kind::Typedef | Kind::Volatile | Kind::Const | Kind::Restrict | Kind::TypeTag
        )
    }

    pub fn is_composite(self) -> bool {
        matches!(self, Kind::Struct | Kind::Union)
    }

    pub fn is_enum(self) -> bool {
        matches!(self, Kind::Enum | Kind::Enum64)
    }
}

// INT encoding bits.
pub const BTF_INT_SIGNED: u8 = 1;
pub const BTF_INT_CHAR: u8 = 2;
pub const BTF_INT_BOOL: u8 = 4;

// VAR / FUNC linkage.
pub const BTF_VAR_STATIC: u32 = 0;
pub const BTF_VAR_GLOBAL_ALLOCATED: u32 = 1;
pub const BTF_VAR_GLOBAL_EXTERN: u32 = 2;
pub const BTF_FUNC_STATIC: u32 = 0;
pub const BTF_FUNC_GLOBAL: u32 = 1;
pub const BTF_FUNC_EXTERN: u32 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    pub name_off: u32,
    pub type_id: u32,
    /// Bit offset from the start of the struct.
    pub bit_offset: u32,
    /// Bitfield width, 0 when the member is not a bitfield.
    pub bitfield_size: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnumValue {
    pub name_off: u32,
    /// The value, sign- or zero-extended to 64 bits by the enum's signedness.
    pub value: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    pub name_off: u32,
    pub type_id: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VarSecinfo {
    pub type_id: u32,
    pub offset: u32,
    pub size: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Extra {
    None,
    Int { encoding: u8, offset: u8, bits: u8 },
    Array { elem: u32, index: u32, nelems: u32 },
    Members(Range<u32>),
    Enums(Range<u32>),
    Params(Range<u32>),
    Var { linkage: u32 },
    Secinfos(Range<u32>),
    DeclTag { component_idx: i32 },
}

/// One type record. `size_or_type` is the size for INT/STRUCT/UNION/ENUM/
/// DATASEC/FLOAT and the referenced type id for the others.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BtfType {
    pub name_off: u32,
    pub kind: Kind,
    pub kind_flag: bool,
    pub vlen: u16,
    pub size_or_type: u32,
    extra: Extra,
}

impl BtfType {
    const VOID: BtfType = BtfType {
        name_off: 0,
        kind: Kind::Void,
        kind_flag: false,
        vlen: 0,
        size_or_type: 0,
        extra: Extra::None,
    };

    /// (encoding, bit offset, bits) of an INT.
    pub fn int_info(&self) -> Option<(u8, u8, u8)> {
        match self.extra {
            Extra::Int {
                encoding,
                offset,
                bits,
            } => Some((encoding, offset, bits)),
            _ => None,
        }
    }

    /// (element type, index type, element count) of an ARRAY.
    pub fn array_info(&self) -> Option<(u32, u32, u32)> {
        match self.extra {
            Extra::Array {
                elem,
                index,
                nelems,
            } => Some((elem, index, nelems)),
            _ => None,
        }
    }

    /// Linkage of a VAR, or of a FUNC (kept in vlen).
    pub fn linkage(&self) -> u32 {
        match self.extra {
            Extra::Var { linkage } => linkage,
            _ => self.vlen as u32,
        }
    }

    pub fn decl_tag_component(&self) -> Option<i32> {
        match self.extra {
            Extra::DeclTag { component_idx } => Some(component_idx),
            _ => None,
        }
    }

    /// For ENUM: whether values are signed (kind_flag).
    pub fn enum_signed(&self) -> bool {
        self.kind_flag
    }
}

#[derive(Clone, Debug)]
pub struct Btf {
    raw: Vec<u8>,
    hdr_len: usize,
    type_off: usize,
    type_len: usize,
    str_off: usize,
    str_len: usize,
    types: Vec<BtfType>,
    /// Byte offset of each type record inside the type section (id 0 unused).
    type_offsets: Vec<u32>,
    members: Vec<Member>,
    enums: Vec<EnumValue>,
    params: Vec<Param>,
    secinfos: Vec<VarSecinfo>,
    /// Type ids by name without `___flavour` suffix, built on first use
    /// (by-name lookups in vmlinux BTF would otherwise scan 100k+ types).
    by_name: std::sync::OnceLock<NameIndex>,
}

fn rd_u32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn range(start: usize, len: usize) -> Range<u32> {
    start as u32..(start + len) as u32
}

impl Btf {
    /// Parses little-endian BTF (the only byte order bpfvet targets).
    pub fn from_bytes(bytes: &[u8]) -> Result<Btf, BtfError> {
        if bytes.len() < HEADER_MIN {
            return Err(BtfError::Header(format!(
                "{} bytes is shorter than the header",
                bytes.len()
            )));
        }
        let magic = u16::from_le_bytes([bytes[0], bytes[1]]);
        if magic != BTF_MAGIC {
            return Err(BtfError::Header(if magic.swap_bytes() == BTF_MAGIC {
                "big-endian BTF is not supported".into()
            } else {
                format!("bad magic {magic:#06x}")
            }));
        }
        if bytes[2] != 1 {
            return Err(BtfError::Header(format!(
                "unsupported version {}",
                bytes[2]
            )));
        }
        let hdr_len = rd_u32(bytes, 4).unwrap_or(0) as usize;
        if hdr_len < HEADER_MIN || hdr_len > bytes.len() {
            return Err(BtfError::Header(format!("bad header length {hdr_len}")));
        }
        // A longer header than we know must have zeros in the unknown part.
        if bytes[HEADER_MIN..hdr_len].iter().any(|&b| b != 0) {
            return Err(BtfError::Header("unknown non-zero header fields".into()));
        }
        let field = |i: usize| rd_u32(bytes, 8 + 4 * i).unwrap_or(0) as usize;
        let (type_off, type_len, str_off, str_len) = (field(0), field(1), field(2), field(3));
        let data_len = bytes.len() - hdr_len;
        let within = |off: usize, len: usize| off.checked_add(len).is_some_and(|e| e <= data_len);
        if !within(type_off, type_len) || !within(str_off, str_len) {
            return Err(BtfError::Header(
                "type or string section outside the data".into(),
            ));
        }
        if type_off % 4 != 0 {
            return Err(BtfError::Header("type section not 4-byte aligned".into()));
        }
        if type_off < str_off && type_off + type_len > str_off
            || str_off < type_off && str_off + str_len > type_off
        {
            return Err(BtfError::Header("type and string sections overlap".into()));
        }
        let strs = &bytes[hdr_len + str_off..hdr_len + str_off + str_len];
        if str_len > 0 && (strs[0] != 0 || strs[str_len - 1] != 0) {
            return Err(BtfError::Header(
                "string section must start and end with NUL".into(),
            ));
        }
        let mut btf = Btf {
            raw: bytes.to_vec(),
            hdr_len,
            type_off,
            type_len,
            str_off,
            str_len,
            types: vec![BtfType::VOID],
            type_offsets: vec![0],
            members: Vec::new(),
            enums: Vec::new(),
            params: Vec::new(),
            secinfos: Vec::new(),
            by_name: std::sync::OnceLock::new(),
        };
        btf.parse_types()?;
        btf.validate_refs()?;
        Ok(btf)
    }

    fn parse_types(&mut self) -> Result<(), BtfError> {
        let start = self.hdr_len + self.type_off;
        let sec = &self.raw[start..start + self.type_len];
        let mut pos = 0usize;
        while pos < sec.len() {
            let id = self.types.len() as u32;
            let rec = pos;
            let hdr = |o: usize| rd_u32(sec, pos + o).ok_or_else(|| type_err(id, "truncated"));
            let name_off = hdr(0)?;
            let info = hdr(4)?;
            let size_or_type = hdr(8)?;
            pos += 12;
            let vlen = (info & 0xffff) as usize;
            let kind_num = (info >> 24) & 0x1f;
            let kind = Kind::from_u32(kind_num)
                .filter(|k| *k != Kind::Void)
                .ok_or_else(|| type_err(id, format!("unknown kind {kind_num}")))?;
            let kind_flag = info >> 31 != 0;
            let need = |n: usize| -> Result<&[u8], BtfError> {
                sec.get(pos..pos + n)
                    .ok_or_else(|| type_err(id, format!("{} record truncated", kind.name())))
            };
            let u = |b: &[u8], i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
            let extra = match kind {
                Kind::Int => {
                    let v = u(need(4)?, 0);
                    pos += 4;
                    let (encoding, offset, bits) = (
                        ((v >> 24) & 0x0f) as u8,
                        ((v >> 16) & 0xff) as u8,
                        (v & 0xff) as u8,
                    );
                    if bits > 128 || offset as u32 + bits as u32 > size_or_type.saturating_mul(8) {
                        return Err(type_err(id, "INT bits exceed its size"));
                    }
                    Extra::Int {
                        encoding,
                        offset,
                        bits,
                    }
                }
                Kind::Array => {
                    let b = need(12)?;
                    let e = Extra::Array {
                        elem: u(b, 0),
                        index: u(b, 4),
                        nelems: u(b, 8),
                    };
                    pos += 12;
                    e
                }
                Kind::Struct | Kind::Union => {
                    let b = need(vlen * 12)?;
                    let first = self.members.len();
                    for i in 0..vlen {
                        let off = u(b, i * 12 + 8);
                        let (bit_offset, bitfield_size) = if kind_flag {
                            (off & 0xff_ffff, off >> 24)
                        } else {
                            (off, 0)
                        };
                        self.members.push(Member {
                            name_off: u(b, i * 12),
                            type_id: u(b, i * 12 + 4),
                            bit_offset,
                            bitfield_size,
                        });
                    }
                    pos += vlen * 12;
                    Extra::Members(range(first, vlen))
                }
                Kind::Enum => {
                    let b = need(vlen * 8)?;
                    let first = self.enums.len();
                    for i in 0..vlen {
                        let raw = u(b, i * 8 + 4);
                        let value = if kind_flag {
                            raw as i32 as i64
                        } else {
                            raw as i64
                        };
                        self.enums.push(EnumValue {
                            name_off: u(b, i * 8),
                            value,
                        });
                    }
                    pos += vlen * 8;
                    Extra::Enums(range(first, vlen))
                }
                Kind::Enum64 => {
                    let b = need(vlen * 12)?;
                    let first = self.enums.len();
                    for i in 0..vlen {
                        let lo = u(b, i * 12 + 4) as u64;
                        let hi = u(b, i * 12 + 8) as u64;
                        self.enums.push(EnumValue {
                            name_off: u(b, i * 12),
                            value: ((hi << 32) | lo) as i64,
                        });
                    }
                    pos += vlen * 12;
                    Extra::Enums(range(first, vlen))
                }
                Kind::FuncProto => {
                    let b = need(vlen * 8)?;
                    let first = self.params.len();
                    for i in 0..vlen {
                        self.params.push(Param {
                            name_off: u(b, i * 8),
                            type_id: u(b, i * 8 + 4),
                        });
                    }
                    pos += vlen * 8;
                    Extra::Params(range(first, vlen))
                }
                Kind::Var => {
                    let linkage = u(need(4)?, 0);
                    pos += 4;
                    Extra::Var { linkage }
                }
                Kind::Datasec => {
                    let b = need(vlen * 12)?;
                    let first = self.secinfos.len();
                    for i in 0..vlen {
                        self.secinfos.push(VarSecinfo {
                            type_id: u(b, i * 12),
                            offset: u(b, i * 12 + 4),
                            size: u(b, i * 12 + 8),
                        });
                    }
                    pos += vlen * 12;
                    Extra::Secinfos(range(first, vlen))
                }
                Kind::DeclTag => {
                    let c = u(need(4)?, 0) as i32;
                    pos += 4;
                    Extra::DeclTag { component_idx: c }
                }
                _ => Extra::None,
            };
            if !self.str_off_valid(name_off) {
                return Err(type_err(id, format!("name offset {name_off} invalid")));
            }
            self.types.push(BtfType {
                name_off,
                kind,
                kind_flag,
                vlen: vlen as u16,
                size_or_type,
                extra,
            });
            self.type_offsets.push(rec as u32);
        }
        Ok(())
    }

    /// Every referenced type id must exist; names of members must be valid
    /// strings. Cycles are handled where chains are followed.
    fn validate_refs(&self) -> Result<(), BtfError> {
        let n = self.types.len() as u32;
        let check = |id: u32, r: u32| {
            if r >= n {
                Err(type_err(id, format!("references missing type [{r}]")))
            } else {
                Ok(())
            }
        };
        for (id, t) in self.types.iter().enumerate().skip(1) {
            let id = id as u32;
            match t.kind {
                Kind::Ptr
                | Kind::Typedef
                | Kind::Volatile
                | Kind::Const
                | Kind::Restrict
                | Kind::Func
                | Kind::FuncProto
                | Kind::Var
                | Kind::DeclTag
                | Kind::TypeTag => check(id, t.size_or_type)?,
                _ => {}
            }
            if let Some((elem, index, _)) = t.array_info() {
                check(id, elem)?;
                check(id, index)?;
            }
            for m in self.members(t) {
                check(id, m.type_id)?;
                if !self.str_off_valid(m.name_off) {
                    return Err(type_err(id, "member name offset invalid"));
                }
            }
            for p in self.params(t) {
                check(id, p.type_id)?;
            }
            for v in self.datasec_vars(t) {
                check(id, v.type_id)?;
            }
            if self
                .enum_values(t)
                .iter()
                .any(|e| !self.str_off_valid(e.name_off))
            {
                return Err(type_err(id, "enumerator name offset invalid"));
            }
            if t.kind == Kind::Func && self.types[t.size_or_type as usize].kind != Kind::FuncProto {
                return Err(type_err(id, "FUNC does not point to a FUNC_PROTO"));
            }
        }
        Ok(())
    }

    /// Number of type ids, including void (id 0).
    pub fn len(&self) -> u32 {
        self.types.len() as u32
    }

    pub fn is_empty(&self) -> bool {
        self.types.len() <= 1
    }

    pub fn type_by_id(&self, id: u32) -> Option<&BtfType> {
        self.types.get(id as usize)
    }

    pub fn raw_bytes(&self) -> &[u8] {
        &self.raw
    }

    /// Whether `off` points into the string section (which ends with NUL,
    /// so every such offset starts a terminated string).
    pub fn str_off_valid(&self, off: u32) -> bool {
        off == 0 || (off as usize) < self.str_len
    }

    /// The string at `off` in the string section (None if out of range or
    /// not UTF-8).
    pub fn str_at(&self, off: u32) -> Option<&str> {
        let off = off as usize;
        if off >= self.str_len {
            return if off == 0 { Some("") } else { None };
        }
        let base = self.hdr_len + self.str_off;
        let s = &self.raw[base + off..base + self.str_len];
        let end = memchr::memchr(0, s)?;
        std::str::from_utf8(&s[..end]).ok()
    }

    /// The name of a type, "" for anonymous ones.
    pub fn name(&self, t: &BtfType) -> &str {
        self.str_at(t.name_off).unwrap_or("")
    }

    pub fn name_of(&self, id: u32) -> &str {
        self.type_by_id(id).map(|t| self.name(t)).unwrap_or("")
    }

    pub fn members(&self, t: &BtfType) -> &[Member] {
        match &t.extra {
            Extra::Members(r) => &self.members[r.start as usize..r.end as usize],
            _ => &[],
        }
    }

    pub fn enum_values(&self, t: &BtfType) -> &[EnumValue] {
        match &t.extra {
            Extra::Enums(r) => &self.enums[r.start as usize..r.end as usize],
            _ => &[],
        }
    }

    pub fn params(&self, t: &BtfType) -> &[Param] {
        match &t.extra {
            Extra::Params(r) => &self.params[r.start as usize..r.end as usize],
            _ => &[],
        }
    }

    pub fn datasec_vars(&self, t: &BtfType) -> &[VarSecinfo] {
        match &t.extra {
            Extra::Secinfos(r) => &self.secinfos[r.start as usize..r.end as usize],
            _ => &[],
        }
    }

    /// Byte offset inside `raw_bytes()` of type `id`'s record.
    pub(crate) fn record_offset(&self, id: u32) -> Option<usize> {
        self.type_offsets
            .get(id as usize)
            .filter(|_| id != 0)
            .map(|o| self.hdr_len + self.type_off + *o as usize)
    }

    /// Follows typedefs and modifiers (const, volatile, restrict, type tags).
    pub fn skip_mods_and_typedefs(&self, mut id: u32) -> Option<(u32, &BtfType)> {
        for _ in 0..MAX_RESOLVE_DEPTH {
            let t = self.type_by_id(id)?;
            if !t.kind.is_modifier() {
                return Some((id, t));
            }
            id = t.size_or_type;
        }
        None
    }

    /// Size in bytes of a type, as libbpf's btf__resolve_size computes it.
    pub fn resolve_size(&self, id: u32) -> Result<u64, BtfError> {
        let mut id = id;
        let mut nelems: u64 = 1;
        for _ in 0..MAX_RESOLVE_DEPTH {
            let t = self.type_by_id(id).ok_or_else(|| type_err(id, "missing"))?;
            match t.kind {
                Kind::Int
                | Kind::Struct
                | Kind::Union
                | Kind::Enum
                | Kind::Enum64
                | Kind::Datasec
                | Kind::Float => {
                    return nelems
                        .checked_mul(t.size_or_type as u64)
                        .ok_or_else(|| type_err(id, "size overflows"));
                }
                Kind::Ptr => return Ok(nelems * 8),
                Kind::Typedef
                | Kind::Volatile
                | Kind::Const
                | Kind::Restrict
                | Kind::Var
                | Kind::DeclTag
                | Kind::TypeTag => id = t.size_or_type,
                Kind::Array => {
                    let (elem, _, n) = t.array_info().unwrap_or_default();
                    nelems = nelems
                        .checked_mul(n as u64)
                        .ok_or_else(|| type_err(id, "array size overflows"))?;
                    id = elem;
                }
                _ => return Err(type_err(id, format!("{} has no size", t.kind.name()))),
            }
        }
        Err(type_err(id, "type chain too deep or cyclic"))
    }

    /// The strings of the DECL_TAGs attached to type `id` as a whole
    /// (component index -1), in type-id order: how `__attribute__((
    /// btf_decl_tag("...")))` on a function or variable appears in BTF.
    pub fn decl_tags_of(&self, id: u32) -> impl Iterator<Item = &str> + '_ {
        self.types
            .iter()
            .filter(move |t| {
                t.kind == Kind::DeclTag
                    && t.size_or_type == id
                    && t.decl_tag_component() == Some(-1)
            })
            .map(|t| self.name(t))
    }

    /// First type with this name and kind.
    pub fn find_by_name_kind(&self, name: &str, kind: Kind) -> Option<u32> {
        self.ids_by_essential_name(essential_name(name))
            .find(|&id| {
                let t = &self.types[id as usize];
                t.kind == kind && self.name(t) == name
            })
    }

    /// Ids of the types whose name, without a `___flavour` suffix, is
    /// `name` (CO-RE candidates), in id order.
    pub fn ids_by_essential_name<'a>(&'a self, name: &'a str) -> impl Iterator<Item = u32> + 'a {
        let index = self.by_name.get_or_init(|| NameIndex::new(self));
        let key = name_hash(name.as_bytes());
        // Ids are grouped by a hash of the name: drop hash collisions.
        index
            .bucket(key)
            .iter()
            .filter(move |&&(h, _)| h == key)
            .map(|&(_, id)| id)
            .filter(move |&id| essential_name(self.name(&self.types[id as usize])) == name)
    }

    /// Ids of all types, from 1.
    pub fn ids(&self) -> Range<u32> {
        1..self.len()
    }
}

/// The named types of a BTF by the hash of their essential name: a hash
/// table laid out flat (vmlinux has 100k+ names), bucketed by the hash's
/// top bits with a counting sort, which keeps each bucket in id order.
#[derive(Clone, Debug)]
struct NameIndex {
    /// Bucket `b` holds `entries[starts[b]..starts[b + 1]]`.
    starts: Vec<u32>,
    /// (hash, id) of every named type.
    entries: Vec<(u64, u32)>,
    /// 64 minus the number of bucket bits.
    shift: u32,
}

impl NameIndex {
    fn new(btf: &Btf) -> NameIndex {
        let base = btf.hdr_len + btf.str_off;
        let strs = &btf.raw[base..base + btf.str_len];
        let named: Vec<(u64, u32)> = (1..btf.len())
            .filter_map(|id| {
                // Hashed as bytes: a name that is not UTF-8 is never asked for.
                let tail = strs.get(btf.types[id as usize].name_off as usize..)?;
                let name = &tail[..memchr::memchr(0, tail)?];
                (!name.is_empty()).then(|| (name_hash(essential_bytes(name)), id))
            })
            .collect();
        // About one name per bucket.
        let bits = named.len().next_power_of_two().trailing_zeros().max(1);
        let shift = 64 - bits;
        let mut starts = vec![0u32; (1 << bits) + 1];
        for &(h, _) in &named {
            starts[(h >> shift) as usize + 1] += 1;
        }
        for b in 1..starts.len() {
            starts[b] += starts[b - 1];
        }
        let mut next = starts.clone();
        let mut entries = vec![(0, 0); named.len()];
        for &(h, id) in &named {
            let slot = &mut next[(h >> shift) as usize];
            entries[*slot as usize] = (h, id);
            *slot += 1;
        }
        NameIndex {
            starts,
            entries,
            shift,
        }
    }

    fn bucket(&self, hash: u64) -> &[(u64, u32)] {
        let b = (hash >> self.shift) as usize;
        &self.entries[self.starts[b] as usize..self.starts[b + 1] as usize]
    }
}

/// FxHash of a name, eight bytes at a time (vmlinux has 100k+ names to
/// index; the index checks each candidate's name, so any hash would do).
fn name_hash(s: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut chunks = s.chunks_exact(8);
    let mut h = s.len() as u64;
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("eight bytes"));
        h = (h.rotate_left(5) ^ w).wrapping_mul(K);
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    (h.rotate_left(5) ^ u64::from_le_bytes(tail)).wrapping_mul(K)
}

/// A CO-RE name without its `___flavour` suffix (`task_struct___v2` ->
/// `task_struct`), as libbpf strips it.
pub fn essential_name(name: &str) -> &str {
    &name[..essential_bytes(name.as_bytes()).len()]
}

/// [`essential_name`] of a name's bytes (the suffix is ASCII).
fn essential_bytes(b: &[u8]) -> &[u8] {
    // Most names have no `___`: a vectorised search rules them out.
    static TRIPLE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"___"));
    if b.len() >= 5 && TRIPLE.find(b).is_some() {
        for i in (0..=b.len() - 5).rev() {
            if b[i] != b'_' && &b[i + 1..i + 4] == b"___" && b[i + 4] != b'_' {
                return &b[..i + 1];
            }
        }
    }
    b
}

/// Appends type records and strings to a raw BTF blob, laid out as header,
/// types, strings. Existing type ids and string offsets stay valid; the
/// first appended string gets offset `old string length`.
pub(crate) fn append_raw(raw: &[u8], types: &[u8], strings: &[u8]) -> Result<Vec<u8>, BtfError> {
    let field = |at: usize| rd_u32(raw, at).ok_or_else(|| BtfError::Header("truncated".into()));
    let hdr_len = field(4)? as usize;
    let (type_off, type_len) = (field(8)? as usize, field(12)? as usize);
    let (str_off, str_len) = (field(16)? as usize, field(20)? as usize);
    let body = raw
        .get(hdr_len..)
        .ok_or_else(|| BtfError::Header("truncated".into()))?;
    let old_types = body
        .get(type_off..type_off + type_len)
        .ok_or_else(|| BtfError::Header("type section outside the data".into()))?;
    let old_strs = body
        .get(str_off..str_off + str_len)
        .ok_or_else(|| BtfError::Header("string section outside the data".into()))?;
    let new_type_len = (type_len + types.len()) as u32;
    let mut out = raw[..hdr_len].to_vec();
    out[8..12].copy_from_slice(&0u32.to_le_bytes());
    out[12..16].copy_from_slice(&new_type_len.to_le_bytes());
    out[16..20].copy_from_slice(&new_type_len.to_le_bytes());
    out[20..24].copy_from_slice(&((str_len + strings.len()) as u32).to_le_bytes());
    out.extend_from_slice(old_types);
    out.extend_from_slice(types);
    out.extend_from_slice(old_strs);
    out.extend_from_slice(strings);
    Ok(out)
}

impl Btf {
    /// Length in bytes of the string section (the offset a new string
    /// appended with [`append_raw`] gets).
    pub(crate) fn strings_len(&self) -> u32 {
        self.str_len as u32
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A tiny BTF builder for tests: types are appended as raw records.
    #[derive(Default)]
    pub struct Builder {
        pub types: Vec<u8>,
        pub strings: Vec<u8>,
    }

    impl Builder {
        pub fn new() -> Self {
            Builder {
                types: Vec::new(),
                strings: vec![0],
            }
        }
        pub fn s(&mut self, name: &str) -> u32 {
            if name.is_empty() {
                return 0;
            }
            let off = self.strings.len() as u32;
            self.strings.extend_from_slice(name.as_bytes());
            self.strings.push(0);
            off
        }
        pub fn rec(
            &mut self,
            name: &str,
            kind: u32,
            vlen: u32,
            kflag: bool,
            sz: u32,
            extra: &[u32],
        ) {
            let n = self.s(name);
            let info = (kind << 24) | vlen | ((kflag as u32) << 31);
            for w in [n, info, sz].iter().chain(extra) {
                self.types.extend_from_slice(&w.to_le_bytes());
            }
        }
        pub fn build(&self) -> Vec<u8> {
            super::encode(&self.types, &self.strings)
        }
    }

    #[test]
    fn parses_struct_members_and_sizes() {
        let mut b = Builder::new();
        b.rec("int", 1, 0, false, 4, &[(1 << 24) | 32]); // [1] signed int
        let a = b.s("a");
        let c = b.s("c");
        b.rec("s", 4, 2, false, 16, &[a, 1, 0, c, 3, 64]); // [2] struct s { int a; int c[2] at 8 }
        b.rec("", 3, 0, false, 0, &[1, 1, 2]); // [3] int[2]
        b.rec("t", 8, 0, false, 2, &[]); // [4] typedef struct s t
        let btf = Btf::from_bytes(&b.build()).unwrap();
        assert_eq!(btf.len(), 5);
        let s = btf.type_by_id(2).unwrap();
        assert_eq!(btf.name(s), "s");
        let m = btf.members(s);
        assert_eq!(btf.str_at(m[1].name_off), Some("c"));
        assert_eq!(m[1].bit_offset, 64);
        assert_eq!(btf.resolve_size(3).unwrap(), 8);
        assert_eq!(btf.resolve_size(4).unwrap(), 16);
        assert_eq!(btf.skip_mods_and_typedefs(4).unwrap().0, 2);
        assert_eq!(btf.find_by_name_kind("s", Kind::Struct), Some(2));
        assert_eq!(btf.type_by_id(1).unwrap().int_info(), Some((1, 0, 32)));
    }

    #[test]
    fn rejects_dangling_reference_and_truncation() {
        let mut b = Builder::new();
        b.rec("p", 2, 0, false, 7, &[]); // ptr to missing [7]
        assert!(matches!(
            Btf::from_bytes(&b.build()),
            Err(BtfError::Type { id: 1, .. })
        ));
        let mut b = Builder::new();
        b.rec("s", 4, 3, false, 4, &[]); // 3 members announced, none present
        assert!(Btf::from_bytes(&b.build()).is_err());
        assert!(matches!(
            Btf::from_bytes(&[0x9f, 0xeb, 1, 0]),
            Err(BtfError::Header(_))
        ));
    }

    #[test]
    fn typedef_cycle_does_not_hang() {
        let mut b = Builder::new();
        b.rec("a", 8, 0, false, 2, &[]);
        b.rec("b", 8, 0, false, 1, &[]);
        let btf = Btf::from_bytes(&b.build()).unwrap();
        assert!(btf.resolve_size(1).is_err());
        assert!(btf.skip_mods_and_typedefs(1).is_none());
    }

    #[test]
    fn finds_types_by_name_without_flavour_in_id_order() {
        let mut b = Builder::new();
        // Typedefs of int [1]; names chosen to share or almost share a stem.
        b.rec("int", 1, 0, false, 4, &[(1 << 24) | 32]); // [1]
        for name in [
            "task",
            "task___v2",
            "task___",
            "ta",
            "task_s",
            "task",
            "a___b___c",
            "x____y",
            "___task",
        ] {
            b.rec(name, 8, 0, false, 1, &[]); // [2]..[10]
        }
        let btf = Btf::from_bytes(&b.build()).unwrap();
        let ids = |n: &str| btf.ids_by_essential_name(n).collect::<Vec<_>>();
        // `task___` keeps its name (nothing after the suffix), as libbpf.
        assert_eq!(ids("task"), [2, 3, 7]);
        assert_eq!(ids("task___"), [4]);
        assert_eq!(ids("a___b"), [8]);
        assert_eq!(ids("x____y"), [9]);
        assert_eq!(ids("___task"), [10]);
        assert_eq!(ids("ta"), [5]);
        assert!(ids("tas").is_empty());
        assert!(ids("").is_empty());
        assert_eq!(btf.find_by_name_kind("task___v2", Kind::Typedef), Some(3));
    }

    #[test]
    fn parses_host_vmlinux_when_present() {
        let Ok(bytes) = std::fs::read("/sys/kernel/btf/vmlinux") else {
            println!("SKIP: /sys/kernel/btf/vmlinux not readable");
            return;
        };
        let btf = Btf::from_bytes(&bytes).unwrap();
        let ts = btf.find_by_name_kind("task_struct", Kind::Struct).unwrap();
        let t = btf.type_by_id(ts).unwrap();
        assert!(btf
            .members(t)
            .iter()
            .any(|m| btf.str_at(m.name_off) == Some("pid")));
    }
}
