//! struct_ops programs (feature `struct_ops`): a program implements a
//! member of one of the host's struct_ops types, given to the kernel as
//! attach_btf_id (the type's vmlinux id) and expected_attach_type (the
//! member's index), both looked up by name in /sys/kernel/btf/vmlinux at run
//! time; or wrong ids: a struct no struct_ops type registered, an index past
//! the last member, a member that is no function pointer or that the type's
//! stubs leave out, a sleepable member that may not sleep. Bodies read the
//! member's arguments from the context, read and write the socket or state
//! they point to, call the congestion-control helpers and kfuncs, and name a
//! struct_ops map (which no program may use).

use super::btf_objects::{T_DUMMY_OPS, T_TCP_CA_OPS};
use super::{Gen, Kind};
use bpfvet_isa::opcode::{BPF_PSEUDO_KFUNC_CALL, BPF_PSEUDO_MAP_IDX};
use bpfvet_isa::Insn;
use bpfvet_object::btf::{Btf, Kind as BtfKind};
use bpfvet_object::StructOpsMember;

/// Harness map indices: struct_ops maps of bpf_dummy_ops and of
/// tcp_congestion_ops, after plain arrays that pad up to them.
pub const DUMMY_OPS_MAP: i32 = 92;
pub const TCP_CA_OPS_MAP: i32 = 93;

/// The members programs may implement: (type, member, may be sleepable).
const MEMBERS: &[(&str, &str, bool)] = &[
    ("tcp_congestion_ops", "ssthresh", false),
    ("tcp_congestion_ops", "cong_avoid", false),
    ("tcp_congestion_ops", "set_state", false),
    ("tcp_congestion_ops", "cwnd_event", false),
    ("tcp_congestion_ops", "in_ack_event", false),
    ("tcp_congestion_ops", "pkts_acked", false),
    ("tcp_congestion_ops", "min_tso_segs", false),
    ("tcp_congestion_ops", "cong_control", false),
    ("tcp_congestion_ops", "undo_cwnd", false),
    ("tcp_congestion_ops", "sndbuf_expand", false),
    ("tcp_congestion_ops", "init", false),
    ("tcp_congestion_ops", "release", false),
    ("bpf_dummy_ops", "test_1", false),
    ("bpf_dummy_ops", "test_2", false),
    ("bpf_dummy_ops", "test_sleepable", true),
];

/// Wrong targets: (type or decimal type id, member name or index).
const WRONG: &[(&str, &str)] = &[
    // Left NULL in the type's stubs.
    ("tcp_congestion_ops", "get_info"),
    // No function pointers.
    ("tcp_congestion_ops", "name"),
    ("tcp_congestion_ops", "owner"),
    ("tcp_congestion_ops", "list"),
    ("tcp_congestion_ops", "key"),
    ("tcp_congestion_ops", "flags"),
    // Past the last member.
    ("tcp_congestion_ops", "18"),
    ("tcp_congestion_ops", "19"),
    ("tcp_congestion_ops", "4096"),
    ("tcp_congestion_ops", "4294967295"),
    ("bpf_dummy_ops", "3"),
    ("bpf_dummy_ops", "65535"),
    // Structs that are no registered struct_ops type.
    ("Qdisc_ops", "enqueue"),
    ("Qdisc_ops", "0"),
    ("task_struct", "0"),
    ("sock", "0"),
    ("bpf_struct_ops_tcp_congestion_ops", "0"),
    ("bpf_dummy_ops_state", "0"),
    // Ids: none (refused before verification), a non-struct, past the
    // last vmlinux type, past BTF_MAX_TYPE (refused).
    ("0", "0"),
    ("1", "0"),
    ("999999", "0"),
    ("1048576", "0"),
];

/// The member a generated struct_ops program implements and what its
/// arguments are.
#[derive(Clone, Debug)]
pub struct Target {
    pub member: StructOpsMember,
    pub sleepable: bool,
    /// Per argument: None for a scalar, else the pointee struct's vmlinux
    /// id (0 when it is no struct).
    args: Vec<Option<u32>>,
    /// The first argument may be NULL (bpf_dummy_ops.test_1).
    nullable_first: bool,
}

/// A target drawn for a new struct_ops program; None on a host without
/// vmlinux BTF or these types.
pub(super) fn pick(rng: &mut super::Rng) -> Option<Target> {
    let btf = super::kfunc_blocks::vmlinux()?;
    let (type_name, member, may_sleep) = if rng.chance(75) {
        let (t, m, s) = rng.pick(MEMBERS);
        (t, m.to_string(), s)
    } else {
        let (t, m) = rng.pick(WRONG);
        (t, m.to_string(), false)
    };
    let member = StructOpsMember::by_ids(btf, type_name, &member)?;
    let sleepable = if may_sleep {
        rng.chance(70)
    } else {
        rng.chance(8)
    };
    let raw = member.raw?;
    let args = btf
        .type_by_id(raw.type_id)
        .and_then(|t| btf.members(t).get(raw.member_idx as usize))
        .map_or_else(Vec::new, |m| arg_kinds(btf, m.type_id));
    Some(Target {
        nullable_first: member.member == "test_1",
        member,
        sleepable,
        args,
    })
}

/// The arguments of the function pointer of type `id`.
fn arg_kinds(btf: &Btf, id: u32) -> Vec<Option<u32>> {
    let Some((_, ptr)) = btf.skip_mods_and_typedefs(id) else {
        return Vec::new();
    };
    if ptr.kind != BtfKind::Ptr {
        return Vec::new();
    }
    let Some((_, proto)) = btf.skip_mods_and_typedefs(ptr.size_or_type) else {
        return Vec::new();
    };
    if proto.kind != BtfKind::FuncProto {
        return Vec::new();
    }
    btf.params(proto)
        .iter()
        .map(|p| {
            let (_, t) = btf.skip_mods_and_typedefs(p.type_id)?;
            if t.kind != BtfKind::Ptr {
                return None;
            }
            let pointee = btf
                .skip_mods_and_typedefs(t.size_or_type)
                .filter(|(_, s)| s.kind == BtfKind::Struct)
                .map_or(0, |(sid, _)| sid);
            Some(pointee)
        })
        .collect()
}

/// Whether a program names one of the struct_ops maps.
pub fn names_struct_ops_map(insns: &[Insn]) -> bool {
    insns.windows(2).any(|w| {
        w[0].is_ld_imm64()
            && matches!(w[0].src, 1 | 2 | 5 | 6)
            && (DUMMY_OPS_MAP..=TCP_CA_OPS_MAP).contains(&w[0].imm)
    })
}

/// The harness maps from `have` (the object's map count so far) on when a
/// program names a struct_ops map: one-entry arrays up to
/// [`DUMMY_OPS_MAP`], then the two struct_ops maps.
pub fn maps<'a>(
    mut progs: impl Iterator<Item = &'a [Insn]>,
    have: usize,
) -> Vec<bpfvet_object::MapDef> {
    use bpfvet_isa::uapi::MapType;
    use bpfvet_object::MapDef;
    if !progs.any(names_struct_ops_map) {
        return Vec::new();
    }
    let mut maps: Vec<MapDef> = (have..DUMMY_OPS_MAP as usize)
        .map(|k| MapDef::new(&format!("pad{k}"), MapType::ARRAY, 4, 8, 1))
        .collect();
    for (name, value_type) in [("dummy_ops", T_DUMMY_OPS), ("tcp_ca_ops", T_TCP_CA_OPS)] {
        let mut m = MapDef::new(name, MapType::STRUCT_OPS, 4, 0, 1);
        m.btf_value_type_id = value_type;
        maps.push(m);
    }
    maps
}

/// `# map:` lines of a case for [`maps`] (after `have` others; the case
/// has `# btf: fuzz`).
pub fn case_maps(insns: &[Insn], have: usize) -> Vec<String> {
    if !names_struct_ops_map(insns) {
        return Vec::new();
    }
    let mut lines = vec!["array 4 8 1".to_string(); (DUMMY_OPS_MAP as usize).saturating_sub(have)];
    lines.push(format!("struct_ops 4 0 1 btf={T_DUMMY_OPS}"));
    lines.push(format!("struct_ops 4 0 1 btf={T_TCP_CA_OPS}"));
    lines
}

/// A case's `# struct_ops:` value for `m`: the type by name where that
/// name finds its id as a struct (so the case survives a rebuilt vmlinux),
/// else the id; the member by index (it may have none).
pub fn case_directive(m: &StructOpsMember) -> String {
    let (t, i) = m.raw.map_or((0, 0), |k| (k.type_id, k.member_idx));
    let by_name = super::kfunc_blocks::vmlinux()
        .and_then(|b| b.find_by_name_kind(&m.type_name, BtfKind::Struct));
    let t = if by_name == Some(t) {
        m.type_name.clone()
    } else {
        t.to_string()
    };
    format!("{t} {i}")
}

/// Writable places of bpf_tcp_ca_btf_struct_access and neighbours:
/// (struct, member path).
const TCP_FIELDS: &[(&str, &[&str])] = &[
    ("tcp_sock", &["snd_cwnd"]),
    ("tcp_sock", &["snd_cwnd_cnt"]),
    ("tcp_sock", &["snd_cwnd_stamp"]),
    ("tcp_sock", &["snd_ssthresh"]),
    ("tcp_sock", &["ecn_flags"]),
    ("tcp_sock", &["app_limited"]),
    ("tcp_sock", &["srtt_us"]),
    ("tcp_sock", &["rcv_nxt"]),
    ("tcp_sock", &["snd_una"]),
    ("sock", &["sk_pacing_rate"]),
    ("sock", &["sk_pacing_status"]),
    ("sock", &["sk_max_pacing_rate"]),
    ("inet_connection_sock", &["icsk_ca_priv"]),
    ("inet_connection_sock", &["icsk_ack", "pending"]),
    ("inet_connection_sock", &["icsk_ca_state"]),
    ("inet_connection_sock", &["icsk_retransmits"]),
];

/// (offset, size) of a member path in vmlinux struct `st`.
fn field(btf: &Btf, st: &str, path: &[&str]) -> Option<(i32, i32)> {
    let mut id = btf.find_by_name_kind(st, BtfKind::Struct)?;
    let (mut off, mut size) = (0u32, 0u64);
    for name in path {
        let (_, t) = btf.skip_mods_and_typedefs(id)?;
        let m = btf
            .members(t)
            .iter()
            .find(|m| btf.str_at(m.name_off) == Some(name))?;
        off += m.bit_offset / 8;
        size = if m.bitfield_size != 0 {
            1
        } else {
            btf.resolve_size(m.type_id).ok()?
        };
        id = m.type_id;
    }
    Some((off as i32, size.min(8) as i32))
}

/// Congestion-control kfuncs (bpf_tcp_ca's set): argument count, whether
/// they return a value.
const TCP_CA_KFUNCS: &[(&str, u8, bool)] = &[
    ("tcp_reno_ssthresh", 1, true),
    ("tcp_reno_cong_avoid", 3, false),
    ("tcp_reno_undo_cwnd", 1, true),
    ("tcp_slow_start", 2, true),
    ("tcp_cong_avoid_ai", 3, false),
];

const SIZE_CODES: [(u8, i32); 4] = [(0x00, 4), (0x08, 2), (0x10, 1), (0x18, 8)];

fn size_code(bytes: i32) -> u8 {
    SIZE_CODES
        .iter()
        .find(|(_, b)| *b == bytes)
        .map_or(0x18, |(c, _)| *c)
}

impl Gen {
    /// A ctx access of a struct_ops program: an argument slot (8 bytes
    /// each), past the last one or narrow at the mistake rate.
    pub(super) fn struct_ops_ctx_field(&mut self) -> (i16, u8, Kind) {
        let n = self.struct_ops.as_ref().map_or(0, |t| t.args.len()) as i16;
        if n == 0 || self.rng.chance(self.mistakes * 3) {
            let off = self.rng.pick(&[n * 8, n * 8 + 8, 4, 1, -8, 8 * 12]);
            let (sz, _) = self.rng.pick(&SIZE_CODES);
            return (off, sz, Kind::Scalar);
        }
        let i = self.rng.below(n as u64) as usize;
        let pointer = self
            .struct_ops
            .as_ref()
            .is_some_and(|t| t.args[i].is_some());
        // A pointer argument is no scalar: the generator leaves it alone.
        let kind = if pointer { Kind::Uninit } else { Kind::Scalar };
        let sz = if !pointer && self.rng.chance(20) {
            self.rng.pick(&[0x00, 0x08, 0x10])
        } else {
            0x18
        };
        (8 * i as i16, sz, kind)
    }

    /// A struct_ops block: in a struct_ops program, argument pointers
    /// dereferenced and written, helpers and kfuncs of congestion control;
    /// in any program, a struct_ops map or a congestion-control kfunc.
    pub(super) fn struct_ops_block(&mut self) {
        if self.rng.chance(3) {
            return self.struct_ops_map_ref();
        }
        if self.struct_ops.is_none() {
            return if self.rng.chance(50) {
                self.tcp_ca_kfunc()
            } else {
                self.alu()
            };
        }
        match self.rng.below(10) {
            0..=3 => self.struct_ops_arg_read(),
            4..=6 => self.struct_ops_arg_write(),
            7 => self.tcp_ca_kfunc(),
            _ => self.tcp_ca_helper(),
        }
    }

    /// `r = struct_ops map` (either type).
    fn struct_ops_map_ref(&mut self) {
        let m = self.rng.pick(&[DUMMY_OPS_MAP, TCP_CA_OPS_MAP]);
        let r = self.dst();
        self.emit(Insn::new(0x18, r, BPF_PSEUDO_MAP_IDX, 0, m));
        self.emit(Insn::new(0, 0, 0, 0, 0));
        self.set(r, Kind::MapPtr(m));
    }

    /// `r = *(u64 *)(ctx + 8 * i)` of a pointer argument, NULL-checked when
    /// it may be NULL (but at the mistake rate); the register and the
    /// pointee's vmlinux id, or None with nothing emitted.
    fn struct_ops_arg_ptr(&mut self) -> Option<(u8, u32, usize)> {
        let c = self.ctx_reg()?;
        let t = self.struct_ops.as_ref()?;
        let ptrs: Vec<(usize, u32)> = t
            .args
            .iter()
            .enumerate()
            .filter_map(|(i, a)| a.map(|id| (i, id)))
            .collect();
        if ptrs.is_empty() {
            return None;
        }
        let nullable = t.nullable_first;
        let (i, id) = self.rng.pick(&ptrs);
        let r = self.rng.pick(&[7u8, 8, 9]);
        self.emit(Insn::new(0x79, r, c, 8 * i as i16, 0));
        self.set(r, Kind::Uninit);
        let null_check = nullable && i == 0 && !self.rng.chance(self.mistakes * 5);
        Some((r, id, usize::from(null_check)))
    }

    /// Reads through an argument pointer: a known field, past the struct's
    /// end, misaligned or of another width.
    fn struct_ops_arg_read(&mut self) {
        let Some((p, pointee, null_check)) = self.struct_ops_arg_ptr() else {
            return self.ctx_load();
        };
        let (off, bytes) = self.struct_ops_field(pointee);
        let d = self.dst();
        let d = if d == p { 0 } else { d };
        if null_check == 1 {
            self.emit(Insn::new(0x15, p, 0, 1, 0));
        }
        self.emit(Insn::new(0x61 | size_code(bytes), d, p, off as i16, 0));
        self.set(d, Kind::Scalar);
        if null_check == 1 {
            // d may be unset on the NULL path.
            self.set(d, Kind::Uninit);
        }
    }

    /// Writes through an argument pointer: the fields congestion control
    /// may write and others, as STX or ST, of the right or another width.
    fn struct_ops_arg_write(&mut self) {
        let Some((p, pointee, null_check)) = self.struct_ops_arg_ptr() else {
            return self.ctx_store();
        };
        let (off, bytes) = self.struct_ops_field(pointee);
        let s = self.scalar();
        if null_check == 1 {
            self.emit(Insn::new(0x15, p, 0, 1, 0));
        }
        if self.rng.chance(20) {
            self.emit(Insn::new(0x62 | size_code(bytes), p, 0, off as i16, 3));
        } else if self.rng.chance(5) {
            // An atomic add into kernel memory.
            self.emit(Insn::new(0xc3, p, s, off as i16, 0));
        } else {
            self.emit(Insn::new(0x63 | size_code(bytes), p, s, off as i16, 0));
        }
    }

    /// (offset, size) of an access into the argument's struct.
    fn struct_ops_field(&mut self, pointee: u32) -> (i32, i32) {
        let Some(btf) = super::kfunc_blocks::vmlinux() else {
            return (0, 4);
        };
        let pointee_name = btf.name_of(pointee);
        let (off, bytes) = if pointee_name == "sock" {
            let (st, path) = self.rng.pick(TCP_FIELDS);
            field(btf, st, path).unwrap_or((0, 4))
        } else {
            // bpf_dummy_ops_state (int val), rate_sample, ack_sample: a
            // top-level member.
            let members: Vec<(i32, i32)> = btf
                .type_by_id(pointee)
                .map(|t| {
                    btf.members(t)
                        .iter()
                        .filter(|m| m.bitfield_size == 0)
                        .filter_map(|m| {
                            let size = btf.resolve_size(m.type_id).ok()?;
                            Some(((m.bit_offset / 8) as i32, size.min(8) as i32))
                        })
                        .collect()
                })
                .unwrap_or_default();
            if members.is_empty() {
                (0, 4)
            } else {
                self.rng.pick(&members)
            }
        };
        let off = if self.rng.chance(self.mistakes * 3) {
            let size = btf.resolve_size(pointee).unwrap_or(8) as i32;
            self.rng
                .pick(&[off + 1, off + bytes, size, size + 8, -8, off + 2])
        } else {
            off
        };
        let bytes = if self.rng.chance(self.mistakes * 3) || ![1, 2, 4, 8].contains(&bytes) {
            self.rng.pick(&[1, 2, 4, 8])
        } else {
            bytes
        };
        (off, bytes)
    }

    /// A congestion-control kfunc with the socket argument (or, at the
    /// mistake rate or outside struct_ops, whatever r1 holds).
    fn tcp_ca_kfunc(&mut self) {
        let (name, args, returns) = self.rng.pick(TCP_CA_KFUNCS);
        let Some(id) = super::kfunc_blocks::kfunc_id(name) else {
            return self.alu();
        };
        let sock = match self.struct_ops_arg_ptr() {
            Some((p, _, _)) if !self.rng.chance(self.mistakes * 2) => Some(p),
            _ => None,
        };
        match sock {
            Some(p) => self.emit(Insn::new(0xbf, 1, p, 0, 0)),
            None => {
                let c = self.ctx_reg().unwrap_or(1);
                self.emit(Insn::new(0xbf, 1, c, 0, 0));
            }
        }
        self.set(1, Kind::Uninit);
        for r in 2..=args {
            let s = self.scalar();
            if s != r {
                self.emit(Insn::new(0xbf, r, s, 0, 0));
            }
        }
        self.emit(Insn::new(0x85, 0, BPF_PSEUDO_KFUNC_CALL, 0, id));
        self.clobber();
        self.set(0, if returns { Kind::Scalar } else { Kind::Uninit });
    }

    /// bpf_tcp_send_ack, bpf_ktime_get_coarse_ns, bpf_setsockopt and
    /// bpf_getsockopt (not in `release`) on the socket argument.
    fn tcp_ca_helper(&mut self) {
        const TCP_SEND_ACK: i32 = 116;
        const KTIME_GET_COARSE_NS: i32 = 160;
        const SETSOCKOPT: i32 = 49;
        const GETSOCKOPT: i32 = 57;
        let func = self
            .rng
            .pick(&[TCP_SEND_ACK, KTIME_GET_COARSE_NS, SETSOCKOPT, GETSOCKOPT]);
        if func != KTIME_GET_COARSE_NS {
            let Some((p, _, _)) = self.struct_ops_arg_ptr() else {
                return self.alu();
            };
            if func == TCP_SEND_ACK {
                let s = self.scalar();
                self.emit(Insn::new(0xbf, 2, s, 0, 0));
            } else {
                // (sk, SOL_TCP, TCP_CONGESTION or TCP_NODELAY, buf, len)
                let opt = self.rng.pick(&[13, 1, 9999]);
                let len = self.rng.pick(&[4, 8, 16, 0, 64]);
                self.emit(Insn::new(0x7a, 10, 0, -16, 0));
                self.emit(Insn::new(0x7a, 10, 0, -8, 0));
                self.stack.push((-16, 8, Kind::Scalar));
                self.stack.push((-8, 8, Kind::Scalar));
                self.emit(Insn::new(0xb7, 2, 0, 0, 6));
                self.emit(Insn::new(0xb7, 3, 0, 0, opt));
                self.emit(Insn::new(0xbf, 4, 10, 0, 0));
                self.emit(Insn::new(0x07, 4, 0, 0, -16));
                self.emit(Insn::new(0xb7, 5, 0, 0, len));
            }
            self.emit(Insn::new(0xbf, 1, p, 0, 0));
        }
        self.emit(Insn::new(0x85, 0, 0, 0, func));
        self.clobber();
        self.set(0, Kind::Scalar);
    }
}
