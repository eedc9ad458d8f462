//! The target kernel's build options, for the verifier's rules that
//! depend on them (which functions tracing may attach to, the
//! error-injection list). Read from `BPFVET_KERNEL_CONFIG` when set (a
//! `.config`, plain or gzipped: to verify for another kernel), else from
//! the host's `/proc/config.gz`. Without either, those rules refuse.

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

pub const CONFIG_ENV: &str = "BPFVET_KERNEL_CONFIG";
const HOST_CONFIG: &str = "/proc/config.gz";

/// A kernel's options: `CONFIG_X` -> its value (`y`, `m`, a number...).
#[derive(Debug, Default)]
pub struct KernelConfig(HashMap<String, String>);

/// A condition on build options, as an `#ifdef` in the kernel writes it.
#[derive(Clone, Copy, Debug)]
pub enum When {
    Always,
    /// Any of these is built in.
    AnySet(&'static [&'static str]),
    /// None of these is built in.
    NoneSet(&'static [&'static str]),
}

impl KernelConfig {
    #[cfg(test)]
    pub fn parse(text: &str) -> KernelConfig {
        KernelConfig(bpfvet_object::parse_kernel_config(text))
    }

    /// Whether `option` (e.g. `CONFIG_SMP`) is built in.
    pub fn is_set(&self, option: &str) -> bool {
        self.0.get(option).is_some_and(|v| v == "y")
    }

    pub fn holds(&self, when: When) -> bool {
        match when {
            When::Always => true,
            When::AnySet(opts) => opts.iter().any(|o| self.is_set(o)),
            When::NoneSet(opts) => !opts.iter().any(|o| self.is_set(o)),
        }
    }
}

/// The target kernel's options, read once per process; None when bpfvet
/// cannot read them.
pub fn target() -> Option<&'static KernelConfig> {
    static CONFIG: OnceLock<Option<KernelConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let path = std::env::var_os(CONFIG_ENV).unwrap_or_else(|| HOST_CONFIG.into());
            bpfvet_object::read_kernel_config(Path::new(&path))
                .ok()
                .map(KernelConfig)
        })
        .as_ref()
}

/// Says whether the target kernel JITs programs, as its
/// `net.core.bpf_jit_enable` sysctl: `0` for the interpreter only (a
/// kernel built without CONFIG_BPF_JIT_ALWAYS_ON). Unset: the JIT is on,
/// as on the x86-64 host.
pub const JIT_ENV: &str = "BPFVET_BPF_JIT_ENABLE";

/// Whether the verifier's `prog->jit_requested` holds for the target,
/// read once per process ([`JIT_ENV`]).
pub fn jit_enabled() -> bool {
    static JIT: OnceLock<bool> = OnceLock::new();
    *JIT.get_or_init(|| std::env::var(JIT_ENV).map_or(true, |v| v.trim() != "0"))
}

/// Says whether the target kernel was booted with `mitigations=off`
/// (cpu_mitigations_off()): then every loader bypasses the verifier's
/// Spectre v1 and v4 sanitation, as CAP_PERFMON does, while pointer leaks
/// and uninitialised stack reads still need CAP_PERFMON. `off` sets it;
/// unset, mitigations are on, as on the host.
pub const MITIGATIONS_ENV: &str = "BPFVET_CPU_MITIGATIONS";

/// Whether the target kernel's CPU mitigations are off, read once per
/// process ([`MITIGATIONS_ENV`]).
pub fn cpu_mitigations_off() -> bool {
    static OFF: OnceLock<bool> = OnceLock::new();
    *OFF.get_or_init(|| std::env::var(MITIGATIONS_ENV).is_ok_and(|v| v.trim() == "off"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_read_built_in_options_only() {
        let c = KernelConfig::parse("CONFIG_SMP=y\nCONFIG_KUNIT=m\n# CONFIG_MODULES is not set\n");
        assert!(c.is_set("CONFIG_SMP"));
        assert!(!c.is_set("CONFIG_KUNIT"));
        assert!(!c.is_set("CONFIG_MODULES"));
        assert!(c.holds(When::AnySet(&["CONFIG_MODULES", "CONFIG_SMP"])));
        assert!(!c.holds(When::NoneSet(&["CONFIG_MODULES", "CONFIG_SMP"])));
        assert!(c.holds(When::NoneSet(&["CONFIG_KUNIT"])));
    }
}
