//! Register state: what a register holds (its type) and what is known about
//! it (fixed offset, variable part as a scalar, ids, precision).

use crate::scalar::Scalar;

/// `enum bpf_reg_type` without flags.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash)]
#[repr(u8)]
pub enum RegType {
    #[default]
    NotInit,
    Scalar,
    Ctx,
    MapPtr,
    MapValue,
    Stack,
    Packet,
    PacketMeta,
    PacketEnd,
    FlowKeys,
    Sock,
    SockCommon,
    TcpSock,
    TpBuffer,
    /// An iterator's key or value buffer (PTR_TO_BUF): its size is the
    /// map's, checked when the program is attached.
    Buf,
    BtfId,
    Mem,
    Func,
    MapKey,
    /// `const struct bpf_dynptr *` handed to a callback (CONST_PTR_TO_DYNPTR);
    /// `aux` holds the dynptr kind.
    ConstPtrToDynptr,
    /// A pointer into the program's arena (PTR_TO_ARENA): made by
    /// addr_space_cast from address space 1; any arithmetic and any access
    /// is allowed, since the JIT turns every access into a guarded one.
    Arena,
    /// An object the program allocated (PTR_TO_BTF_ID | MEM_ALLOC, from
    /// bpf_obj_new): `aux` is its struct's id in the program's BTF, `id`
    /// names the allocation for its lock (graph.rs).
    Alloc,
    /// A PTR_TO_BTF_ID into the program's BTF that is no allocation of
    /// the program's (no MEM_ALLOC): a per-CPU kptr loaded from its field
    /// (percpu and RCU-protected, or untrusted), or a local kptr loaded
    /// outside an RCU section (untrusted). `aux` is the struct's id in the
    /// program's BTF.
    LocalBtfId,
}

impl RegType {
    /// Any pointer type (neither a scalar nor uninitialised).
    pub fn is_pointer(self) -> bool {
        !matches!(self, RegType::Scalar | RegType::NotInit)
    }

    pub fn name(self) -> &'static str {
        match self {
            RegType::NotInit => "?",
            RegType::Scalar => "scalar",
            RegType::Ctx => "ctx",
            RegType::MapPtr => "map_ptr",
            RegType::MapValue => "map_value",
            RegType::Stack => "fp",
            RegType::Packet => "pkt",
            RegType::PacketMeta => "pkt_meta",
            RegType::PacketEnd => "pkt_end",
            RegType::FlowKeys => "flow_keys",
            RegType::Sock => "sock",
            RegType::SockCommon => "sock_common",
            RegType::TcpSock => "tcp_sock",
            RegType::TpBuffer => "tp_buffer",
            RegType::Buf => "buf",
            RegType::BtfId => "ptr_",
            RegType::Mem => "mem",
            RegType::Func => "func",
            RegType::MapKey => "map_key",
            RegType::ConstPtrToDynptr => "dynptr_ptr",
            RegType::Arena => "arena",
            // MEM_ALLOC has no name of its own in the kernel's messages.
            RegType::Alloc => "ptr_",
            RegType::LocalBtfId => "ptr_",
        }
    }

    /// Any PTR_TO_BTF_ID, whichever BTF its id belongs to.
    pub fn is_btf_id(self) -> bool {
        matches!(self, RegType::BtfId | RegType::Alloc | RegType::LocalBtfId)
    }

    pub fn is_pkt(self) -> bool {
        matches!(self, RegType::Packet | RegType::PacketMeta)
    }
    /// Packet pointers with the end (reg_is_pkt_pointer_any).
    pub fn is_pkt_any(self) -> bool {
        matches!(
            self,
            RegType::Packet | RegType::PacketMeta | RegType::PacketEnd
        )
    }
    /// Pointer types that may be NULL-checked into a socket.
    pub fn is_sock(self) -> bool {
        matches!(self, RegType::Sock | RegType::SockCommon | RegType::TcpSock)
    }
}

/// Type flags (`enum bpf_type_flag`) that matter for registers.
pub mod flag {
    pub const MAYBE_NULL: u16 = 1 << 0;
    pub const RDONLY: u16 = 1 << 1;
    pub const RINGBUF: u16 = 1 << 2;
    pub const USER: u16 = 1 << 3;
    pub const PERCPU: u16 = 1 << 4;
    pub const UNTRUSTED: u16 = 1 << 6;
    pub const TRUSTED: u16 = 1 << 12;
    pub const RCU: u16 = 1 << 13;
    /// A non-owning reference to an allocated object in a graph, valid
    /// until the lock is released (NON_OWN_REF).
    pub const NON_OWN_REF: u16 = 1 << 14;
    /// The dynptr kind of a slice a kfunc returned (DYNPTR_TYPE_*): part
    /// of the register's type, so such a slice is not a plain `mem`.
    pub const DYNPTR_LOCAL: u16 = 1 << 5;
    pub const DYNPTR_RINGBUF: u16 = 1 << 7;
    pub const DYNPTR_SKB: u16 = 1 << 8;
    pub const DYNPTR_XDP: u16 = 1 << 9;
    pub const DYNPTR_SKB_META: u16 = 1 << 10;
    /// Slices into packet data: invalid once the packet may have moved.
    pub const DYNPTR_PKT: u16 = DYNPTR_SKB | DYNPTR_XDP | DYNPTR_SKB_META;
}

/// The flags of a non-owning reference to a refcounted object.
pub const NON_OWN_RCU: u16 = flag::NON_OWN_REF | flag::RCU;

/// One register. `Copy` and compact so that a state clone is a memcpy.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reg {
    pub ty: RegType,
    pub flags: u16,
    pub precise: bool,
    /// Frame a stack pointer points into.
    pub frameno: u8,
    /// Fixed offset of a pointer.
    pub off: i32,
    /// Shared by registers that hold the same value (copied scalars, the
    /// same `_or_null` pointer, pointers into the same packet).
    pub id: u32,
    pub ref_obj_id: u32,
    /// For slices of a dynptr (`bpf_dynptr_data`): the dynptr's id, so
    /// destroying the dynptr invalidates them.
    pub dynptr_id: u32,
    /// Type-specific: packet range; memory size; map index for map
    /// pointers/values/keys; BTF id for BTF pointers; subprog for funcs.
    pub aux: u32,
    /// Map index of map_value / map_key / map_ptr (u32::MAX if none).
    pub map: u32,
    /// Which lookup an inner map pointer came from, when its map holds
    /// timers or work items (the kernel's map_uid: the lookup's id), and
    /// the values looked up in it; 0 otherwise. Two lookups of the same
    /// inner map slot are two maps to the timer helpers.
    pub map_uid: u32,
    /// Scalar value, or the variable offset of a pointer.
    pub v: Scalar,
}

impl Reg {
    pub fn not_init() -> Reg {
        Reg {
            map: u32::MAX,
            v: Scalar::unknown(),
            ..Default::default()
        }
    }

    pub fn unknown_scalar() -> Reg {
        Reg {
            ty: RegType::Scalar,
            ..Reg::not_init()
        }
    }

    pub fn known(val: u64) -> Reg {
        Reg {
            ty: RegType::Scalar,
            v: Scalar::constant(val),
            ..Reg::not_init()
        }
    }

    pub fn pointer(ty: RegType) -> Reg {
        Reg {
            ty,
            v: Scalar::constant(0),
            ..Reg::not_init()
        }
    }

    pub fn is_scalar(&self) -> bool {
        self.ty == RegType::Scalar
    }
    pub fn is_pointer(&self) -> bool {
        self.ty.is_pointer()
    }
    pub fn maybe_null(&self) -> bool {
        self.flags & flag::MAYBE_NULL != 0
    }
    pub fn is_null_const(&self) -> bool {
        self.is_scalar() && self.v.is_const() && self.v.const_value() == 0
    }

    /// The kernel's reg_type_str.
    pub fn type_str(&self) -> String {
        let f = self.flags;
        let mut s = String::new();
        for (bit, p) in [
            (flag::RDONLY, "rdonly_"),
            (flag::RINGBUF, "ringbuf_"),
            (flag::USER, "user_"),
            (flag::PERCPU, "percpu_"),
            (flag::RCU, "rcu_"),
            (flag::UNTRUSTED, "untrusted_"),
            (flag::TRUSTED, "trusted_"),
        ] {
            if f & bit != 0 {
                s.push_str(p);
            }
        }
        s.push_str(self.ty.name());
        if f & flag::MAYBE_NULL != 0 {
            s.push_str(if self.ty.is_btf_id() {
                "or_null_"
            } else {
                "_or_null"
            });
        }
        s
    }
}
