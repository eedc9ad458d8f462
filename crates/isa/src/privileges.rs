//! Who loads a program: the capability sets whose verifier checks differ.
//! The kernel's verifier reads capabilities, not uid, so each level is the
//! set of capabilities the loading thread holds in its effective set.

use std::fmt;
use std::str::FromStr;

/// Capability numbers of include/uapi/linux/capability.h.
pub mod cap {
    pub const NET_ADMIN: u32 = 12;
    pub const SYS_ADMIN: u32 = 21;
    pub const SYS_BOOT: u32 = 22;
    pub const PERFMON: u32 = 38;
    pub const BPF: u32 = 39;
}

/// A privilege level a program can be loaded at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Privileges {
    /// Every capability (root).
    #[default]
    Root,
    /// CAP_BPF alone: no CAP_PERFMON, CAP_NET_ADMIN or CAP_SYS_ADMIN.
    Bpf,
    /// No capability at all (needs kernel.unprivileged_bpf_disabled=0).
    Unprivileged,
    /// CAP_BPF and CAP_NET_ADMIN: networking program types (XDP, tc, flow
    /// dissector) without CAP_PERFMON, so pointer leaks and Spectre checks
    /// apply to them.
    NetAdmin,
}

impl Privileges {
    pub const ALL: [Privileges; 4] = [
        Privileges::Root,
        Privileges::Bpf,
        Privileges::Unprivileged,
        Privileges::NetAdmin,
    ];

    /// The effective capability set, as a bit mask over capability numbers;
    /// None means "all of them" (the loader's own set is left as it is).
    pub fn effective_caps(self) -> Option<u64> {
        match self {
            Privileges::Root => None,
            Privileges::Bpf => Some(1 << cap::BPF),
            Privileges::Unprivileged => Some(0),
            Privileges::NetAdmin => Some((1 << cap::BPF) | (1 << cap::NET_ADMIN)),
        }
    }

    /// Whether the level holds capability `c` (CAP_SYS_ADMIN implies none
    /// of the others here: the kernel's checks name it explicitly).
    pub fn has(self, c: u32) -> bool {
        self.effective_caps().is_none_or(|m| m & (1 << c) != 0)
    }

    /// bpf_token_capable(CAP_PERFMON): CAP_PERFMON or CAP_SYS_ADMIN. It
    /// decides the verifier's pointer-leak and Spectre switches and the
    /// Spectre v1 bypass of the maps the loader creates.
    pub fn perfmon_capable(self) -> bool {
        self.has(cap::SYS_ADMIN) || self.has(cap::PERFMON)
    }

    pub fn name(self) -> &'static str {
        match self {
            Privileges::Root => "root",
            Privileges::Bpf => "bpf",
            Privileges::Unprivileged => "unprivileged",
            Privileges::NetAdmin => "net_admin",
        }
    }
}

impl fmt::Display for Privileges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Privileges {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Privileges::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                format!("unknown privilege level `{s}` (root, bpf, unprivileged or net_admin)")
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_hold_their_capabilities() {
        assert!(Privileges::Root.has(cap::PERFMON));
        assert!(Privileges::Bpf.has(cap::BPF));
        assert!(!Privileges::Bpf.has(cap::PERFMON));
        assert!(!Privileges::Bpf.has(cap::SYS_ADMIN));
        assert!(!Privileges::Unprivileged.has(cap::BPF));
        assert!(Privileges::NetAdmin.has(cap::NET_ADMIN));
        assert!(!Privileges::NetAdmin.has(cap::PERFMON));
        assert!(Privileges::Root.perfmon_capable());
        assert!(!Privileges::Bpf.perfmon_capable());
        assert!(!Privileges::NetAdmin.perfmon_capable());
        assert_eq!("net_admin".parse(), Ok(Privileges::NetAdmin));
        assert_eq!("bpf".parse(), Ok(Privileges::Bpf));
        assert!("admin".parse::<Privileges>().is_err());
    }
}
