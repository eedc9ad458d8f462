//! struct_ops programs: the member of a kernel struct_ops type a program
//! implements decides its arguments, helpers and the kernel memory it may
//! write (check_struct_ops_btf_id and the type's verifier ops). bpfvet
//! models tcp_congestion_ops, bpf_dummy_ops and Qdisc_ops (bpf_qdisc) and
//! refuses the other types by name. A member's stub function in kernel BTF
//! tags its arguments: `__nullable` (may be NULL) and `__ref` (a reference
//! the program holds from entry and must release).

use crate::btf_walk::vmlinux;
use crate::error::VerifyError;
use crate::helpers::StructOpsHelpers;
use bpfvet_isa::uapi::ProgType;
use bpfvet_object::btf::{Btf, Kind};
use bpfvet_object::{Object, Program};

/// What a struct_ops type's verifier ops allow, for the types bpfvet
/// verifies (the others are refused by name).
pub struct OpsType {
    pub name: &'static str,
    /// The members a program may implement (those the type's stub table
    /// fills).
    members: &'static [&'static str],
    /// The members whose stub, `<type>__<member>` in kernel BTF, names
    /// its arguments with tags; the other members' stubs tag none (and
    /// follow no naming rule).
    tagged_stubs: &'static [&'static str],
    /// Which members may be sleepable.
    sleepable: Sleepable,
    /// The helpers it gets.
    helpers: StructOpsHelpers,
    /// The kernel memory its programs may write.
    writes: Writes,
}

/// The type's `check_member` on sleepable programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sleepable {
    /// No check_member: any member may be sleepable.
    Any,
    /// Only this member may be sleepable.
    Only(&'static str),
}

/// The type's `btf_struct_access`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Writes {
    /// bpf_tcp_ca_btf_struct_access: some tcp_sock fields.
    TcpSock,
    /// bpf_dummy_ops_btf_struct_access: struct bpf_dummy_ops_state.
    DummyState,
    /// bpf_qdisc_btf_struct_access: some sk_buff and Qdisc fields.
    Qdisc,
}

const OPS_TYPES: &[OpsType] = &[
    // net/ipv4/bpf_tcp_ca.c
    OpsType {
        name: "tcp_congestion_ops",
        members: &[
            "ssthresh",
            "cong_avoid",
            "set_state",
            "cwnd_event",
            "in_ack_event",
            "pkts_acked",
            "min_tso_segs",
            "cong_control",
            "undo_cwnd",
            "sndbuf_expand",
            "init",
            "release",
        ],
        tagged_stubs: &[],
        sleepable: Sleepable::Any,
        helpers: StructOpsHelpers::TcpCa { release: false },
        writes: Writes::TcpSock,
    },
    // net/bpf/bpf_dummy_struct_ops.c: no get_func_proto, so no helpers.
    OpsType {
        name: "bpf_dummy_ops",
        members: &["test_1", "test_2", "test_sleepable"],
        tagged_stubs: &["test_1"],
        sleepable: Sleepable::Only("test_sleepable"),
        helpers: StructOpsHelpers::None,
        writes: Writes::DummyState,
    },
    // net/sched/bpf_qdisc.c (CONFIG_NET_SCH_BPF): bpf_base_func_proto.
    // dequeue returns an skb or NULL; a program that returns a referenced
    // skb is refused by name (check_return_code).
    OpsType {
        name: "Qdisc_ops",
        members: &["enqueue", "dequeue", "init", "reset", "destroy"],
        tagged_stubs: &["enqueue", "dequeue", "init", "reset", "destroy"],
        sleepable: Sleepable::Any,
        helpers: StructOpsHelpers::Base,
        writes: Writes::Qdisc,
    },
];

/// The tags a member's stub gives its arguments (prepare_arg_info): bit
/// `i` set for argument `i`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArgTags {
    /// `__nullable`: a trusted pointer that may be NULL.
    pub nullable: u32,
    /// `__ref`: a trusted pointer whose reference the program holds from
    /// entry.
    pub refcounted: u32,
}

/// The one place the stub suffixes are read: the tags of `member`'s
/// arguments from its stub's parameter names in `btf`. None when the
/// stub is not there (the kernel would not have registered the type).
fn stub_arg_tags(btf: &Btf, ops: &OpsType, member: &str) -> Option<ArgTags> {
    if !ops.tagged_stubs.contains(&member) {
        return Some(ArgTags::default());
    }
    let stub = btf.find_by_name_kind(&format!("{}__{member}", ops.name), Kind::Func)?;
    let proto = btf.type_by_id(btf.type_by_id(stub)?.size_or_type)?;
    let mut tags = ArgTags::default();
    for (i, p) in btf.params(proto).iter().enumerate().take(32) {
        let name = btf.str_at(p.name_off).unwrap_or("");
        // `__nullable` wins where both would match.
        if name.ends_with("__nullable") {
            tags.nullable |= 1 << i;
        } else if name.ends_with("__ref") {
            tags.refcounted |= 1 << i;
        }
    }
    Some(tags)
}

/// The member a struct_ops program implements, in vmlinux BTF.
#[derive(Clone, Copy)]
pub struct StructOpsTarget {
    pub ops: &'static OpsType,
    /// The FUNC_PROTO of the member's function pointer.
    pub func_proto: u32,
    /// The stub's argument tags.
    pub tags: ArgTags,
    /// Qdisc_ops.enqueue: bpf_qdisc_is_valid_access types a read of its
    /// third argument (`struct sk_buff **to_free`) as a trusted pointer to
    /// this struct (bpf_sk_buff_ptr), the list bpf_qdisc_skb_drop takes.
    pub to_free_list: Option<u32>,
    /// Whether the member returns nothing (R0 is then not looked at).
    pub returns_void: bool,
    /// The type's gen_prologue or gen_epilogue calls a kfunc in this
    /// member's program: the JIT must be on.
    adds_kfunc_call: bool,
    /// The type a member returning a pointer returns (Qdisc_ops.dequeue's
    /// sk_buff): the program returns a reference to one, or 0.
    pub ret_pointee: Option<u32>,
    /// vmlinux ids of struct sock and struct tcp_sock: a trusted sock
    /// argument is a tcp_sock to a congestion-control program.
    sock_ids: Option<(u32, u32)>,
}

/// check_struct_ops_btf_id: the program's member must be a function
/// pointer of a struct_ops type the kernel has, one the type lets programs
/// implement. None for other program types.
pub fn check_target(obj: &Object, prog: &Program) -> Result<Option<StructOpsTarget>, VerifyError> {
    if prog.prog_type != ProgType::STRUCT_OPS {
        return Ok(None);
    }
    let refuse = |what: String| Err(VerifyError::unsupported(None, what));
    let reject = |msg: String| Err(VerifyError::new(None, msg));
    let Some(member) = &prog.struct_ops else {
        return refuse(
            "a struct_ops program that no struct_ops map holds (libbpf does not load it)".into(),
        );
    };
    if !crate::check_call::license_is_gpl(obj.license_of(prog)) {
        return reject("struct ops programs must have a GPL compatible license".into());
    }
    let Some(btf) = vmlinux() else {
        return refuse("struct_ops programs without kernel BTF".into());
    };
    let k = match member.resolve(btf) {
        Ok(k) => k,
        Err(why) => {
            return refuse(format!(
                "struct_ops member the loader cannot resolve: {why}"
            ))
        }
    };
    // bpf_prog_load turns these ids away before verifying (ENOTSUPP,
    // EINVAL), with nothing in the log.
    if k.type_id == 0 || k.type_id > BTF_MAX_TYPE {
        return refuse(format!(
            "struct_ops attach_btf_id {} (the kernel refuses the load)",
            k.type_id
        ));
    }
    let Some(type_name) = registered_type(btf, k.type_id) else {
        return reject(format!(
            "attach_btf_id {} is not a supported struct",
            k.type_id
        ));
    };
    let Some(ops) = OPS_TYPES.iter().find(|o| o.name == type_name) else {
        return refuse(format!("struct_ops type {type_name}"));
    };
    let members = btf
        .type_by_id(k.type_id)
        .map_or(&[][..], |t| btf.members(t));
    let Some(m) = members.get(k.member_idx as usize) else {
        return reject(format!(
            "attach to invalid member idx {} of struct {type_name}",
            k.member_idx
        ));
    };
    let mname = btf.str_at(m.name_off).unwrap_or("");
    let Some(func_proto) = func_proto_of_ptr(btf, m.type_id) else {
        return reject(format!(
            "attach to invalid member {mname}(@idx {}) of struct {type_name}",
            k.member_idx
        ));
    };
    // Helpers and stubs are looked up by these names: ids given as they
    // are must name the same member.
    if member.type_name != type_name || member.member != mname {
        return refuse(format!(
            "struct_ops member {}.{} given with the ids of {type_name}.{mname}",
            member.type_name, member.member
        ));
    }
    let sleepable_ok = match ops.sleepable {
        Sleepable::Any => true,
        Sleepable::Only(m) => !prog.sleepable || m == mname,
    };
    if !ops.members.contains(&mname) || !sleepable_ok {
        return reject(format!(
            "attach to unsupported member {mname} of struct {type_name}"
        ));
    }
    let Some(tags) = stub_arg_tags(btf, ops, mname) else {
        return refuse(format!(
            "struct_ops member {type_name}.{mname} whose stub is not in kernel BTF"
        ));
    };
    // A tail call would hand the callee a context whose referenced
    // argument it cannot know about (check_subprogs marks any call to
    // bpf_tail_call, reachable or not).
    let tail_call = prog
        .insns
        .iter()
        .any(|i| i.code == 0x85 && i.src == 0 && i.imm == TAIL_CALL);
    if tags.refcounted != 0 && tail_call {
        return reject("program with __ref argument cannot tail call".into());
    }
    // A member returning a pointer takes back a referenced object of the
    // pointee's type, or NULL (check_return_code).
    let ret = btf.type_by_id(func_proto).map_or(0, |p| p.size_or_type);
    let ret_pointee = btf
        .skip_mods_and_typedefs(ret)
        .filter(|(_, t)| t.kind == Kind::Ptr)
        .map(|(_, t)| {
            btf.skip_mods_and_typedefs(t.size_or_type)
                .map_or(0, |(id, _)| id)
        });
    // bpf_qdisc's prologue (init) and epilogue (reset, destroy) call a
    // kfunc, added after verification.
    let adds_kfunc_call = type_name == "Qdisc_ops" && matches!(mname, "init" | "reset" | "destroy");
    let sock_ids = btf
        .find_by_name_kind("sock", Kind::Struct)
        .zip(btf.find_by_name_kind("tcp_sock", Kind::Struct))
        .filter(|_| ops.writes == Writes::TcpSock);
    let to_free_list = if type_name == "Qdisc_ops" && mname == "enqueue" {
        match btf.find_by_name_kind("bpf_sk_buff_ptr", Kind::Struct) {
            Some(id) => Some(id),
            None => return refuse("Qdisc_ops without struct bpf_sk_buff_ptr in kernel BTF".into()),
        }
    } else {
        None
    };
    Ok(Some(StructOpsTarget {
        ops,
        func_proto,
        tags,
        to_free_list,
        ret_pointee,
        adds_kfunc_call,
        returns_void: ret == 0,
        sock_ids,
    }))
}

/// The helpers a struct_ops program gets: its type's, for its member.
pub fn helpers(prog: &Program) -> StructOpsHelpers {
    let Some(member) = &prog.struct_ops else {
        return StructOpsHelpers::None;
    };
    match OPS_TYPES.iter().find(|o| o.name == member.type_name) {
        Some(OpsType {
            helpers: StructOpsHelpers::TcpCa { .. },
            ..
        }) => StructOpsHelpers::TcpCa {
            release: member.member == "release",
        },
        Some(o) => o.helpers,
        None => StructOpsHelpers::None,
    }
}

/// Whether a program implements a Qdisc_ops member.
pub fn is_qdisc(prog: &Program) -> bool {
    prog.prog_type == ProgType::STRUCT_OPS
        && prog
            .struct_ops
            .as_ref()
            .is_some_and(|m| m.type_name == "Qdisc_ops")
}

/// A struct_ops type's kfunc filter: bpf_qdisc's kfuncs are for the
/// Qdisc_ops members their set names.
pub fn kfunc_filter(prog: &Program, set: crate::helpers::kfuncs::KfuncSet) -> bool {
    match set {
        crate::helpers::kfuncs::KfuncSet::Qdisc(members) => {
            is_qdisc(prog)
                && prog
                    .struct_ops
                    .as_ref()
                    .is_some_and(|m| members.contains(&m.member.as_str()))
        }
        _ => true,
    }
}

/// BPF_FUNC_tail_call.
const TAIL_CALL: i32 = 12;

/// The largest BTF type id bpf_prog_load takes as attach_btf_id.
const BTF_MAX_TYPE: u32 = 0x000f_ffff;

/// bpf_struct_ops_find: the name of the struct_ops type `id` is, if the
/// kernel registered one there. Each registered type has its
/// `bpf_struct_ops_<name>` value wrapper in vmlinux BTF, and the kernel
/// keeps the first struct of that name.
fn registered_type(btf: &Btf, id: u32) -> Option<&str> {
    let t = btf.type_by_id(id).filter(|t| t.kind == Kind::Struct)?;
    let name = btf.name(t);
    let wrapper = format!("bpf_struct_ops_{name}");
    let first = btf.find_by_name_kind(name, Kind::Struct)?;
    (first == id && btf.find_by_name_kind(&wrapper, Kind::Struct).is_some()).then_some(name)
}

/// The FUNC_PROTO a member of type `id` points to, if it is a function
/// pointer.
fn func_proto_of_ptr(btf: &Btf, id: u32) -> Option<u32> {
    let (_, ptr) = btf.skip_mods_and_typedefs(id)?;
    if ptr.kind != Kind::Ptr {
        return None;
    }
    let (proto_id, proto) = btf.skip_mods_and_typedefs(ptr.size_or_type)?;
    (proto.kind == Kind::FuncProto).then_some(proto_id)
}

impl StructOpsTarget {
    /// Whether the program gets a kfunc call after verification (bpf_qdisc's
    /// prologue and epilogue).
    pub fn adds_kfunc_call(&self) -> bool {
        self.adds_kfunc_call
    }

    /// The register a read of the context at `off` gives where the type's
    /// is_valid_access decides before the usual argument typing: the
    /// enqueue's `to_free` slot, whatever the width.
    pub fn ctx_read_override(&self, off: i32) -> Option<u32> {
        self.to_free_list.filter(|_| (16..24).contains(&off))
    }

    /// bpf_tcp_ca_is_valid_access: the type a trusted BTF pointer argument
    /// of struct `btf_id` has (a sock is a tcp_sock to congestion control).
    pub fn promoted_arg(&self, btf_id: u32) -> u32 {
        match self.sock_ids {
            Some((sock, tcp_sock)) if sock == btf_id => tcp_sock,
            _ => btf_id,
        }
    }

    /// Whether the type's btf_struct_access lets programs write into
    /// tcp_sock alone (refusing other structs with `only read is
    /// supported`).
    pub fn writes_only_tcp_sock(&self) -> bool {
        self.ops.writes == Writes::TcpSock
    }

    /// The type's btf_struct_access for a write of `size` bytes at `off`
    /// into struct `btf_id`: the kernel's line when it refuses.
    pub fn write(&self, btf: &Btf, btf_id: u32, off: u32, size: u32) -> Result<(), String> {
        match self.ops.writes {
            Writes::TcpSock => tcp_ca_write(btf, btf_id, off, size),
            Writes::Qdisc => qdisc_write(btf, btf_id, off, size),
            Writes::DummyState => {
                if btf.name_of(btf_id) != "bpf_dummy_ops_state" {
                    return Err("only access to bpf_dummy_ops_state is supported".into());
                }
                let state = btf.resolve_size(btf_id).unwrap_or(0);
                if u64::from(off) + u64::from(size) > state {
                    return Err(format!("write access at off {off} with size {size}"));
                }
                Ok(())
            }
        }
    }
}

/// bpf_tcp_ca_btf_struct_access: a congestion-control program may write
/// these fields of a tcp_sock, each within its own bounds (the private area
/// from anywhere inside it); other writes are refused with the kernel's
/// line.
fn tcp_ca_write(btf: &Btf, btf_id: u32, off: u32, size: u32) -> Result<(), String> {
    if btf.name_of(btf_id) != "tcp_sock" {
        return Err("only read is supported".into());
    }
    // (struct, member path, any offset inside it starts the member)
    const WRITABLE: &[(&str, &[&str], bool)] = &[
        ("sock", &["sk_pacing_rate"], false),
        ("sock", &["sk_pacing_status"], false),
        ("inet_connection_sock", &["icsk_ca_priv"], true),
        ("inet_connection_sock", &["icsk_ack", "pending"], false),
        ("tcp_sock", &["snd_cwnd"], false),
        ("tcp_sock", &["snd_cwnd_cnt"], false),
        ("tcp_sock", &["snd_cwnd_stamp"], false),
        ("tcp_sock", &["snd_ssthresh"], false),
        ("tcp_sock", &["ecn_flags"], false),
        ("tcp_sock", &["app_limited"], false),
    ];
    for (st, path, range) in WRITABLE {
        let Some((start, len)) = member_span(btf, st, path) else {
            continue;
        };
        let end = start + len;
        let hit = if *range {
            (start..end).contains(&off)
        } else {
            off == start
        };
        if hit {
            if u64::from(off) + u64::from(size) > u64::from(end) {
                return Err(format!(
                    "write access at off {off} with size {size} beyond the member of tcp_sock ended at {end}"
                ));
            }
            return Ok(());
        }
    }
    Err(format!("no write support to tcp_sock at off {off}"))
}

/// bpf_qdisc_btf_struct_access: a qdisc program may write an skb's
/// tstamp and its control block's private data, and a Qdisc's limit,
/// queue length and queue statistics; other writes are refused with the
/// kernel's line.
fn qdisc_write(btf: &Btf, btf_id: u32, off: u32, size: u32) -> Result<(), String> {
    let name = btf.name_of(btf_id);
    // (start, end): a write starting at `start` may reach `end`; `range`
    // lets it start anywhere before `end`.
    let spans: Vec<(u32, u32, bool)> = match name {
        "sk_buff" => {
            let tstamp = nested_member(btf, "sk_buff", "tstamp");
            let cb = nested_member(btf, "sk_buff", "cb");
            let data = nested_member(btf, "qdisc_skb_cb", "data");
            [
                tstamp.map(|(o, l)| (o, o + l, false)),
                cb.zip(data)
                    .map(|((c, _), (d, l))| (c + d, c + d + l, true)),
            ]
            .into_iter()
            .collect::<Option<_>>()
            .ok_or("sk_buff fields missing in kernel BTF")?
        }
        "Qdisc" => {
            let limit = nested_member(btf, "Qdisc", "limit");
            let q = nested_member(btf, "Qdisc", "q");
            let qlen = nested_member(btf, "qdisc_skb_head", "qlen");
            let qstats = nested_member(btf, "Qdisc", "qstats");
            [
                limit.map(|(o, l)| (o, o + l, false)),
                q.zip(qlen)
                    .map(|((q, _), (o, l))| (q + o, q + o + l, false)),
                qstats.map(|(o, l)| (o, o + l, true)),
            ]
            .into_iter()
            .collect::<Option<_>>()
            .ok_or("Qdisc fields missing in kernel BTF")?
        }
        _ => return Err("only read is supported".into()),
    };
    let Some(&(_, end, _)) = spans
        .iter()
        .find(|(start, end, range)| off == *start || (*range && (*start..*end).contains(&off)))
    else {
        return Err(format!("no write support to {name} at off {off}"));
    };
    if u64::from(off) + u64::from(size) > u64::from(end) {
        return Err(format!(
            "write access at off {off} with size {size} beyond the member of {name} ended at {end}"
        ));
    }
    Ok(())
}

/// Byte offset and size of member `name` of struct `st`, looking through
/// anonymous structs and unions (sk_buff's tstamp sits in one).
fn nested_member(btf: &Btf, st: &str, name: &str) -> Option<(u32, u32)> {
    fn find(btf: &Btf, id: u32, name: &str, depth: u32) -> Option<(u32, u32)> {
        let (_, t) = btf.skip_mods_and_typedefs(id)?;
        if depth > 8 || !matches!(t.kind, Kind::Struct | Kind::Union) {
            return None;
        }
        for m in btf.members(t) {
            let mname = btf.str_at(m.name_off).unwrap_or("");
            if mname == name && m.bitfield_size == 0 {
                let size = u32::try_from(btf.resolve_size(m.type_id).ok()?).ok()?;
                return Some((m.bit_offset / 8, size));
            }
            if mname.is_empty() {
                if let Some((o, l)) = find(btf, m.type_id, name, depth + 1) {
                    return Some((m.bit_offset / 8 + o, l));
                }
            }
        }
        None
    }
    find(btf, btf.find_by_name_kind(st, Kind::Struct)?, name, 0)
}

/// Byte offset and size of the member at `path` in struct `st` (the
/// structs of a tcp_sock all start at its offset 0).
fn member_span(btf: &Btf, st: &str, path: &[&str]) -> Option<(u32, u32)> {
    let mut id = btf.find_by_name_kind(st, Kind::Struct)?;
    let mut off = 0u32;
    let mut size = 0u32;
    for name in path {
        let (_, t) = btf.skip_mods_and_typedefs(id)?;
        let m = btf
            .members(t)
            .iter()
            .find(|m| btf.str_at(m.name_off) == Some(name))?;
        if m.bitfield_size != 0 {
            return None;
        }
        off += m.bit_offset / 8;
        size = u32::try_from(btf.resolve_size(m.type_id).ok()?).ok()?;
        id = m.type_id;
    }
    Some((off, size))
}
