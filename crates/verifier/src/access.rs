//! What the verifier proved about each memory access of an accepted
//! program, for a runtime that wants to drop its own checks where the
//! proof covers them (bpfvet's JIT).

use crate::regs::RegType;

/// The kinds of pointer one load, store or atomic dereferenced, over every
/// path the verifier explored (pruned paths included: a pruned state has
/// the same pointer types as the one it matched). On an accepted program,
/// each of these accesses was proved in bounds for its kind: inside the
/// frame's stack, the packet up to data_end, the map value, or a context
/// field the program type may access, aligned where the kernel demands it.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct AccessKinds(u8);

impl AccessKinds {
    pub const NONE: AccessKinds = AccessKinds(0);
    pub const STACK: AccessKinds = AccessKinds(1);
    /// Packet data or packet metadata.
    pub const PACKET: AccessKinds = AccessKinds(2);
    pub const MAP_VALUE: AccessKinds = AccessKinds(4);
    pub const CTX: AccessKinds = AccessKinds(8);
    /// Any other pointer (helper memory, BTF objects, sockets, arena...).
    pub const OTHER: AccessKinds = AccessKinds(16);

    pub(crate) fn of(ty: RegType) -> AccessKinds {
        match ty {
            RegType::Stack => AccessKinds::STACK,
            RegType::Packet | RegType::PacketMeta => AccessKinds::PACKET,
            RegType::MapValue => AccessKinds::MAP_VALUE,
            RegType::Ctx => AccessKinds::CTX,
            _ => AccessKinds::OTHER,
        }
    }

    pub const fn union(self, other: AccessKinds) -> AccessKinds {
        AccessKinds(self.0 | other.0)
    }

    /// Whether the access was seen at all and only through kinds in
    /// `allowed`.
    pub const fn only(self, allowed: AccessKinds) -> bool {
        self.0 != 0 && self.0 & !allowed.0 == 0
    }
}
