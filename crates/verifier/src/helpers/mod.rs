//! Helper functions: their prototypes and which program types may call
//! them, as Linux 6.18 decides it for a root loader; plus the names and
//! flags of common kfuncs.
//!
//! Entry points: [`helper_proto`] (what `check_helper_call` looks up
//! first) and [`kfuncs::kfunc_flags`].

pub mod bprintf;
pub mod classes;
pub mod ids;
pub mod kfuncs;
pub mod map_compat;
pub(crate) mod prog_types;
pub mod proto;
pub mod protos;

pub use ids::{helper_id, id, HELPER_MAX_ID, HELPER_NAMES};
pub use proto::{
    helper_display_name, AllowRule, ArgBase, ArgType, BtfRef, HelperProto, RetBase, RetType,
    TypeFlags,
};

use bpfvet_isa::uapi::{AttachType, ProgType};

/// The kernel's lockdown level (`security_locked_down`), which hides the
/// kernel-memory and user-write helpers.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Lockdown {
    None,
    /// Blocks `bpf_probe_write_user`. The reference host runs this way.
    #[default]
    Integrity,
    /// Also blocks the kernel-reading probe helpers.
    Confidentiality,
}

impl Lockdown {
    pub fn blocks_kernel_reads(self) -> bool {
        self == Lockdown::Confidentiality
    }

    pub fn allows_user_writes(self) -> bool {
        self == Lockdown::None
    }
}

/// The facts about the calling program that the kernel's `get_func_proto`
/// callbacks look at.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CallerProg {
    pub prog_type: ProgType,
    pub expected_attach_type: Option<AttachType>,
    pub sleepable: bool,
    pub lockdown: Lockdown,
    /// CONFIG_BPF_KPROBE_OVERRIDE: `bpf_override_return` exists. The
    /// reference host is built without it.
    pub kprobe_override: bool,
    /// For iterator programs: whether the target (tcp, unix) adds the
    /// socket option helpers.
    pub iter_sockopt: bool,
    /// For struct_ops programs: which helpers their type gives.
    pub struct_ops: StructOpsHelpers,
    /// The loader's capabilities.
    pub privileges: bpfvet_isa::Privileges,
}

impl CallerProg {
    pub fn new(prog_type: ProgType, expected_attach_type: Option<AttachType>) -> Self {
        CallerProg {
            prog_type,
            expected_attach_type,
            sleepable: false,
            lockdown: Lockdown::default(),
            kprobe_override: false,
            iter_sockopt: false,
            struct_ops: StructOpsHelpers::None,
            privileges: bpfvet_isa::Privileges::Root,
        }
    }

    /// bpf_token_capable: capability `c`, or CAP_SYS_ADMIN.
    pub fn has(&self, c: u32) -> bool {
        use bpfvet_isa::privileges::cap;
        self.privileges.has(c) || self.privileges.has(cap::SYS_ADMIN)
    }
}

/// The helpers of a struct_ops type (its verifier ops' get_func_proto).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum StructOpsHelpers {
    /// No get_func_proto: no helper.
    None,
    /// bpf_tcp_ca_get_func_proto; `release` may not change socket options.
    TcpCa { release: bool },
    /// bpf_base_func_proto (bpf_qdisc).
    Base,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HelperError {
    /// The id is past the last helper (printed signed, as the kernel's
    /// `imm` is).
    #[error("invalid func unknown#{}", *.id as i32)]
    Unknown { id: u32 },
    /// A known helper that this program type may not call.
    #[error("program of this type cannot use helper {name}#{id}")]
    NotAllowed { id: u32, name: String },
}

/// The prototype the kernel uses when a program of `prog_type` (with
/// `expected_attach_type`, not sleepable, on the reference host) calls
/// helper `id`, or the kernel's error for the call.
pub fn helper_proto(
    id: u32,
    prog_type: ProgType,
    expected_attach_type: Option<AttachType>,
) -> Result<&'static HelperProto, HelperError> {
    helper_proto_for(id, &CallerProg::new(prog_type, expected_attach_type))
}

/// [`helper_proto`] with every input the kernel considers.
pub fn helper_proto_for(id: u32, prog: &CallerProg) -> Result<&'static HelperProto, HelperError> {
    if id >= HELPER_MAX_ID {
        return Err(HelperError::Unknown { id });
    }
    prog_types::resolve(id, prog).ok_or_else(|| HelperError::NotAllowed {
        id,
        name: helper_display_name(id),
    })
}

/// Every helper's prototype for one calling program, resolved once so a
/// verifier looks helpers up by index while it explores.
#[derive(Clone, Debug)]
pub struct HelperTable {
    protos: Vec<Option<&'static HelperProto>>,
}

impl HelperTable {
    pub fn new(prog: &CallerProg) -> Self {
        HelperTable {
            protos: (0..HELPER_MAX_ID)
                .map(|id| helper_proto_for(id, prog).ok())
                .collect(),
        }
    }

    /// Same answer as [`helper_proto_for`] for the program the table was
    /// built for.
    pub fn get(&self, id: u32) -> Result<&'static HelperProto, HelperError> {
        match self.protos.get(id as usize) {
            None => Err(HelperError::Unknown { id }),
            Some(Some(p)) => Ok(p),
            Some(None) => Err(HelperError::NotAllowed {
                id,
                name: helper_display_name(id),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_and_forbidden_ids_give_kernel_messages() {
        let e = helper_proto(0, ProgType::XDP, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "program of this type cannot use helper bpf_unspec#0"
        );
        let e = helper_proto(-1i32 as u32, ProgType::XDP, None).unwrap_err();
        assert_eq!(e.to_string(), "invalid func unknown#-1");
        let e = helper_proto(HELPER_MAX_ID, ProgType::XDP, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("invalid func unknown#{HELPER_MAX_ID}")
        );
        let e = helper_proto(id::SKB_STORE_BYTES, ProgType::XDP, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "program of this type cannot use helper bpf_skb_store_bytes#9"
        );
    }

    #[test]
    fn variants_follow_the_program_type() {
        let tc = helper_proto(id::SK_LOOKUP_TCP, ProgType::SCHED_CLS, None).unwrap();
        let xdp = helper_proto(id::SK_LOOKUP_TCP, ProgType::XDP, None).unwrap();
        assert_eq!(tc.variant, "bpf_tc_sk_lookup_tcp");
        assert_eq!(xdp.variant, "bpf_xdp_sk_lookup_tcp");
        assert_eq!(tc.ret.base, RetBase::PtrToSocket);
        assert!(tc.ret.flags.contains(TypeFlags::MAYBE_NULL));
    }

    #[test]
    fn attach_type_gates_helpers() {
        let p = ProgType::CGROUP_SOCK_ADDR;
        assert!(helper_proto(id::BIND, p, Some(AttachType::CGROUP_INET4_CONNECT)).is_ok());
        assert!(helper_proto(id::BIND, p, Some(AttachType::CGROUP_INET4_BIND)).is_err());
        // Ingress/egress hooks have no return value to read.
        let s = ProgType::CGROUP_SKB;
        assert!(helper_proto(id::GET_RETVAL, s, Some(AttachType::CGROUP_INET_EGRESS)).is_err());
        let k = helper_proto(id::GET_FUNC_IP, ProgType::KPROBE, None).unwrap();
        let km = helper_proto(
            id::GET_FUNC_IP,
            ProgType::KPROBE,
            Some(AttachType::TRACE_KPROBE_MULTI),
        )
        .unwrap();
        assert_ne!(k.variant, km.variant);
    }

    #[test]
    fn map_lookup_prototype() {
        let p = helper_proto(id::MAP_LOOKUP_ELEM, ProgType::SOCKET_FILTER, None).unwrap();
        assert_eq!(p.name(), "bpf_map_lookup_elem");
        assert_eq!(p.arg_count(), 2);
        assert_eq!(p.args[0].base, ArgBase::ConstMapPtr);
        assert_eq!(p.args[1].base, ArgBase::PtrToMapKey);
        assert_eq!(p.ret.base, RetBase::PtrToMapValue);
        assert!(p.ret.flags.contains(TypeFlags::MAYBE_NULL));
        assert!(p.pkt_access);
    }

    #[test]
    fn table_agrees_with_direct_lookup() {
        for &pt in ProgType::ALL {
            let caller = CallerProg::new(pt, None);
            let table = HelperTable::new(&caller);
            for id in 0..HELPER_MAX_ID + 2 {
                assert_eq!(table.get(id), helper_proto_for(id, &caller), "{pt} {id}");
            }
        }
    }

    #[test]
    fn lockdown_hides_probe_helpers() {
        let mut p = CallerProg::new(ProgType::KPROBE, None);
        assert!(helper_proto_for(id::PROBE_WRITE_USER, &p).is_err());
        assert!(helper_proto_for(id::PROBE_READ_KERNEL, &p).is_ok());
        p.lockdown = Lockdown::None;
        assert!(helper_proto_for(id::PROBE_WRITE_USER, &p).is_ok());
        p.lockdown = Lockdown::Confidentiality;
        assert!(helper_proto_for(id::PROBE_READ_KERNEL, &p).is_err());
    }
}
