//! The shape of a helper prototype, mirroring the kernel's
//! `struct bpf_func_proto`: a base type per argument and for the return
//! value, refined by the same type flags the kernel ORs into them.

use super::ids::HELPER_NAMES;

/// Type flags the kernel ORs into argument and return types (and register
/// types): `enum bpf_type_flag`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct TypeFlags(pub u32);

impl TypeFlags {
    pub const NONE: TypeFlags = TypeFlags(0);
    /// The pointer may be NULL (`PTR_MAYBE_NULL`).
    pub const MAYBE_NULL: TypeFlags = TypeFlags(1 << 0);
    /// The memory is only read.
    pub const MEM_RDONLY: TypeFlags = TypeFlags(1 << 1);
    pub const MEM_RINGBUF: TypeFlags = TypeFlags(1 << 2);
    pub const MEM_USER: TypeFlags = TypeFlags(1 << 3);
    pub const MEM_PERCPU: TypeFlags = TypeFlags(1 << 4);
    /// The argument's reference is released by the call.
    pub const OBJ_RELEASE: TypeFlags = TypeFlags(1 << 5);
    pub const PTR_UNTRUSTED: TypeFlags = TypeFlags(1 << 6);
    /// The helper fills the memory, so it need not be initialised.
    pub const MEM_UNINIT: TypeFlags = TypeFlags(1 << 7);
    pub const DYNPTR_TYPE_LOCAL: TypeFlags = TypeFlags(1 << 8);
    pub const DYNPTR_TYPE_RINGBUF: TypeFlags = TypeFlags(1 << 9);
    /// The memory size is fixed by the prototype (`arg_size`), not by the
    /// next argument.
    pub const MEM_FIXED_SIZE: TypeFlags = TypeFlags(1 << 10);
    pub const MEM_ALLOC: TypeFlags = TypeFlags(1 << 11);
    pub const PTR_TRUSTED: TypeFlags = TypeFlags(1 << 12);
    pub const MEM_RCU: TypeFlags = TypeFlags(1 << 13);
    pub const NON_OWN_REF: TypeFlags = TypeFlags(1 << 14);
    pub const DYNPTR_TYPE_SKB: TypeFlags = TypeFlags(1 << 15);
    pub const DYNPTR_TYPE_XDP: TypeFlags = TypeFlags(1 << 16);
    /// The memory must be aligned to its size.
    pub const MEM_ALIGNED: TypeFlags = TypeFlags(1 << 17);
    /// The helper writes the memory.
    pub const MEM_WRITE: TypeFlags = TypeFlags(1 << 18);

    pub const fn or(self, other: TypeFlags) -> TypeFlags {
        TypeFlags(self.0 | other.0)
    }

    pub const fn contains(self, other: TypeFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for TypeFlags {
    type Output = TypeFlags;
    fn bitor(self, rhs: TypeFlags) -> TypeFlags {
        self.or(rhs)
    }
}

/// `enum bpf_arg_type` without its flags.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum ArgBase {
    /// Unused argument.
    #[default]
    DontCare,
    ConstMapPtr,
    PtrToMapKey,
    PtrToMapValue,
    /// Stack, packet, map value or other readable memory; the size is the
    /// next argument unless `MEM_FIXED_SIZE`.
    PtrToMem,
    PtrToArena,
    ConstSize,
    ConstSizeOrZero,
    PtrToCtx,
    /// Any initialised value, pointer or scalar.
    Anything,
    Scalar,
    PtrToSpinLock,
    PtrToSockCommon,
    PtrToSocket,
    PtrToBtfId,
    PtrToRingbufMem,
    ConstAllocSizeOrZero,
    PtrToBtfIdSockCommon,
    PtrToPercpuBtfId,
    PtrToFunc,
    PtrToStack,
    PtrToConstStr,
    PtrToTimer,
    KptrXchgDest,
    PtrToDynptr,
}

/// `enum bpf_return_type` without its flags.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum RetBase {
    #[default]
    Integer,
    Void,
    PtrToMapValue,
    PtrToSocket,
    PtrToTcpSock,
    PtrToSockCommon,
    PtrToMem,
    PtrToMemOrBtfId,
    PtrToBtfId,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct ArgType {
    pub base: ArgBase,
    pub flags: TypeFlags,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct RetType {
    pub base: RetBase,
    pub flags: TypeFlags,
}

impl ArgType {
    pub const fn is_dont_care(self) -> bool {
        matches!(self.base, ArgBase::DontCare)
    }
}

/// The kernel's list of register types that may be passed for each
/// argument type (`compatible_reg_types`), as it prints them in
/// "R1 type=ctx expected=...".
const MEM_TYPES: &str =
    "fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_";

impl ArgBase {
    /// The "expected=" list for a register of the wrong type, None for
    /// argument types that take anything (or nothing).
    pub fn expected_reg_types(self) -> Option<&'static str> {
        use ArgBase::*;
        Some(match self {
            DontCare | Anything | PtrToArena => return None,
            PtrToMapKey | PtrToMapValue | PtrToMem => MEM_TYPES,
            ConstSize | ConstSizeOrZero | ConstAllocSizeOrZero | Scalar => "scalar",
            ConstMapPtr => "map_ptr",
            PtrToCtx => "ctx",
            PtrToSockCommon => "sock_common, sock, tcp_sock, xdp_sock",
            PtrToBtfIdSockCommon => "sock_common, sock, tcp_sock, xdp_sock, ptr_, trusted_ptr_",
            PtrToSocket => "sock",
            PtrToBtfId => "ptr_, trusted_ptr_, rcu_ptr_",
            PtrToSpinLock | KptrXchgDest => "map_value, ptr_",
            PtrToRingbufMem => "ringbuf_mem",
            PtrToPercpuBtfId => "percpu_ptr_, percpu_rcu_ptr_, percpu_trusted_ptr_",
            PtrToFunc => "func",
            PtrToStack => "fp",
            PtrToConstStr | PtrToTimer => "map_value",
            PtrToDynptr => "fp, dynptr_ptr",
        })
    }
}

/// A plain argument type.
pub const fn a(base: ArgBase) -> ArgType {
    ArgType {
        base,
        flags: TypeFlags::NONE,
    }
}

/// An argument type with flags.
pub const fn af(base: ArgBase, flags: TypeFlags) -> ArgType {
    ArgType { base, flags }
}

pub const fn r(base: RetBase) -> RetType {
    RetType {
        base,
        flags: TypeFlags::NONE,
    }
}

pub const fn rf(base: RetBase, flags: TypeFlags) -> RetType {
    RetType { base, flags }
}

/// Where the BTF type of a pointer argument or return value comes from.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum BtfRef {
    /// A vmlinux struct, by name (e.g. "task_struct", "sock_common").
    Struct(&'static str),
    /// `bpf_kptr_xchg`: the type of the kptr field the destination points to.
    FromKptrField,
}

/// Extra per-program checks some prototypes carry (`bpf_func_proto.allowed`);
/// failing one gives "helper call is not allowed in probe".
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum AllowRule {
    /// `bpf_d_path`: only from an allow-list of attach functions, or
    /// sleepable LSM / iterator programs.
    DPath,
    /// `bpf_ima_*_hash`: only from sleepable LSM hooks.
    SleepableLsmOrIter,
    /// `bpf_sk_storage_*` from tracing: not from the functions that free
    /// socket storage.
    SkStorageTracing,
}

/// Attach functions of tracing programs that may call `bpf_d_path`
/// (the kernel's `btf_allowlist_d_path`, CONFIG_SECURITY and
/// CONFIG_SECURITY_PATH set, as on the 6.18 host).
const D_PATH_ATTACH_FUNCS: &[&str] = &[
    "security_file_permission",
    "security_inode_getattr",
    "security_file_open",
    "security_path_truncate",
    "vfs_truncate",
    "vfs_fallocate",
    "dentry_open",
    "vfs_getattr",
    "filp_close",
];

impl AllowRule {
    /// The prototype's `allowed` callback for a program of this type,
    /// expected attach type and attach target.
    pub fn allows(
        self,
        prog_type: bpfvet_isa::uapi::ProgType,
        attach: Option<bpfvet_isa::uapi::AttachType>,
        target: Option<&str>,
    ) -> bool {
        use bpfvet_isa::uapi::{AttachType as At, ProgType as Pt};
        let lsm_hook_may_sleep = || target.is_some_and(crate::lsm::hook_may_sleep);
        match self {
            AllowRule::DPath => match prog_type {
                Pt::TRACING if attach == Some(At::TRACE_ITER) => true,
                Pt::LSM => lsm_hook_may_sleep(),
                _ => target.is_some_and(|t| D_PATH_ATTACH_FUNCS.contains(&t)),
            },
            AllowRule::SleepableLsmOrIter => match prog_type {
                Pt::LSM => lsm_hook_may_sleep(),
                _ => false,
            },
            // Socket storage may not be used while tracing its own code.
            AllowRule::SkStorageTracing => match attach {
                Some(At::TRACE_ITER | At::TRACE_RAW_TP) => true,
                Some(At::TRACE_FENTRY | At::TRACE_FEXIT) => {
                    target.is_some_and(|t| !t.starts_with("bpf_sk_storage"))
                }
                _ => false,
            },
        }
    }
}

/// One helper prototype (`struct bpf_func_proto`). Several variants may
/// exist per helper id (e.g. `bpf_sk_lookup_tcp` for tc, xdp and sock_addr);
/// which one a program gets depends on its type, see [`super::helper_proto`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct HelperProto {
    pub id: u32,
    /// The kernel's proto variable minus `_proto`, naming the variant.
    pub variant: &'static str,
    pub ret: RetType,
    pub args: [ArgType; 5],
    /// For `MEM_FIXED_SIZE` arguments: the size in bytes.
    pub arg_size: [u32; 5],
    /// For BTF-id arguments: the expected struct.
    pub arg_btf: [Option<BtfRef>; 5],
    /// For BTF-id returns: the returned struct.
    pub ret_btf: Option<BtfRef>,
    pub gpl_only: bool,
    /// May be called with packet pointers in arguments without invalidating
    /// them (it does not change the packet).
    pub pkt_access: bool,
    pub might_sleep: bool,
    pub allow_fastcall: bool,
    pub allowed: Option<AllowRule>,
}

impl HelperProto {
    pub const fn new(id: u32, variant: &'static str, ret: RetType) -> Self {
        HelperProto {
            id,
            variant,
            ret,
            args: [a(ArgBase::DontCare); 5],
            arg_size: [0; 5],
            arg_btf: [None; 5],
            ret_btf: None,
            gpl_only: false,
            pkt_access: false,
            might_sleep: false,
            allow_fastcall: false,
            allowed: None,
        }
    }

    pub const fn args(mut self, args: &[ArgType]) -> Self {
        let mut i = 0;
        while i < args.len() && i < 5 {
            self.args[i] = args[i];
            i += 1;
        }
        self
    }

    pub const fn arg_size(mut self, arg: usize, size: u32) -> Self {
        self.arg_size[arg] = size;
        self
    }

    pub const fn arg_btf(mut self, arg: usize, name: &'static str) -> Self {
        self.arg_btf[arg] = Some(BtfRef::Struct(name));
        self
    }

    pub const fn ret_btf(mut self, name: &'static str) -> Self {
        self.ret_btf = Some(BtfRef::Struct(name));
        self
    }

    pub const fn ret_btf_from_kptr(mut self) -> Self {
        self.ret_btf = Some(BtfRef::FromKptrField);
        self
    }

    pub const fn gpl_only(mut self) -> Self {
        self.gpl_only = true;
        self
    }

    pub const fn pkt_access(mut self) -> Self {
        self.pkt_access = true;
        self
    }

    pub const fn might_sleep(mut self) -> Self {
        self.might_sleep = true;
        self
    }

    pub const fn allow_fastcall(mut self) -> Self {
        self.allow_fastcall = true;
        self
    }

    pub const fn allowed(mut self, rule: AllowRule) -> Self {
        self.allowed = Some(rule);
        self
    }

    /// The name the kernel prints, e.g. "bpf_map_lookup_elem".
    pub fn name(&self) -> String {
        helper_display_name(self.id)
    }

    /// Number of arguments the helper takes (up to the first unused one).
    pub fn arg_count(&self) -> usize {
        self.args.iter().take_while(|t| !t.is_dont_care()).count()
    }
}

/// `bpf_<name>` for a known id (id 0 is "bpf_unspec"), "unknown"
/// otherwise, as the kernel's `func_id_name` prints it.
pub fn helper_display_name(id: u32) -> String {
    match HELPER_NAMES.get(id as usize) {
        Some(n) => format!("bpf_{n}"),
        None => "unknown".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bpfvet_isa::uapi::{AttachType as At, ProgType as Pt};

    #[test]
    fn allow_rules_decide_by_attach_point() {
        let fentry = Some(At::TRACE_FENTRY);
        let d_path = |t, a, f| AllowRule::DPath.allows(t, a, f);
        assert!(d_path(Pt::TRACING, fentry, Some("vfs_truncate")));
        assert!(!d_path(Pt::TRACING, fentry, Some("do_sys_open")));
        assert!(d_path(Pt::TRACING, Some(At::TRACE_ITER), None));
        // LSM programs: on the hooks that may sleep.
        let lsm = Some(At::LSM_MAC);
        assert!(d_path(Pt::LSM, lsm, Some("file_open")));
        assert!(!d_path(Pt::LSM, lsm, Some("task_free")));
        let ima = |f| AllowRule::SleepableLsmOrIter.allows(Pt::LSM, lsm, Some(f));
        assert!(ima("bpf_lsm_bprm_committed_creds"));
        assert!(!ima("bpf_lsm_task_free"));
        let sk = |a, f| AllowRule::SkStorageTracing.allows(Pt::TRACING, a, f);
        assert!(sk(fentry, Some("inet_csk_accept")));
        assert!(!sk(fentry, Some("bpf_sk_storage_free")));
        assert!(sk(Some(At::TRACE_RAW_TP), Some("inet_sock_set_state")));
        assert!(!sk(Some(At::MODIFY_RETURN), Some("x")));
        assert!(!AllowRule::SleepableLsmOrIter.allows(Pt::TRACING, fentry, Some("x")));
    }
}
