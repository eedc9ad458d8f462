//! The kernel that decides: the host's (bpf(2) here) or a guest's
//! ([`super::guest`]), for the whole run.

use super::guest::Guest;
use bpfvet_kernel::Kernel;
use std::sync::Mutex;

pub enum Oracle {
    Host(Kernel),
    Guest(Mutex<Guest>),
}

impl Oracle {
    /// The guest `BPFVET_FUZZ_KERNEL` names, else the host kernel; Err
    /// says why neither can verify here.
    pub fn open() -> Result<Oracle, String> {
        match Guest::from_env()? {
            Some(g) => {
                eprintln!(
                    "kernel side: guest {} (bpf_jit_enable={}, mitigations {})",
                    g.release, g.jit, g.mitigations
                );
                Ok(Oracle::Guest(Mutex::new(g)))
            }
            None => Kernel::open().map(Oracle::Host).map_err(|e| e.to_string()),
        }
    }

    /// Whether programs go to a guest, one object per program.
    pub fn is_guest(&self) -> bool {
        matches!(self, Oracle::Guest(_))
    }
}
