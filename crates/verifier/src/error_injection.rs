//! The kernel's error-injection list: the functions built with
//! `ALLOW_ERROR_INJECTION`. It decides where a sleepable fentry, fexit or
//! fmod_ret program may attach and which functions fmod_ret may modify
//! (bpf_check_attach_target). Kernel BTF does not show it; the host does,
//! in debugfs, when the kernel was built with it. A kernel built without
//! it (its config says so, or a mounted debugfs has no `error_injection`
//! directory) has an empty list. Anywhere else bpfvet cannot tell, and the
//! callers refuse.

use crate::kernel_config;
use std::collections::HashSet;
use std::path::Path;
use std::sync::OnceLock;

/// Where the host shows the list (one `function<TAB>type` per line).
const HOST_LIST: &str = "/sys/kernel/debug/error_injection/list";
/// Where debugfs is mounted, if it is.
const DEBUGFS: &str = "/sys/kernel/debug";

/// The option that builds the list.
const BUILT: &str = "CONFIG_FUNCTION_ERROR_INJECTION";

/// Overrides the host's list: a file in debugfs's format, or `none` for
/// a kernel built without error injection. For verifying against another
/// kernel than the host's, and for tests.
pub const LIST_ENV: &str = "BPFVET_ERROR_INJECTION_LIST";

/// What a refusal names when the list is unknown, with how to give it.
pub const UNKNOWN_LIST: &str =
    "the kernel's error-injection list: mount debugfs or set BPFVET_ERROR_INJECTION_LIST";

/// What bpfvet knows of the target kernel's error-injection list.
#[derive(Debug, PartialEq, Eq)]
pub enum ErrorInjection {
    /// The functions on the list.
    Functions(HashSet<String>),
    /// Not known: debugfs is not mounted or not readable.
    Unknown,
}

impl ErrorInjection {
    /// Whether `func` is on the list; None where the list is unknown.
    pub fn contains(&self, func: &str) -> Option<bool> {
        match self {
            ErrorInjection::Functions(set) => Some(set.contains(func)),
            ErrorInjection::Unknown => None,
        }
    }

    /// Parses debugfs's format: the function name is each line's first
    /// field (then the injection type, e.g. `ERRNO`).
    pub fn parse(text: &str) -> ErrorInjection {
        ErrorInjection::Functions(
            text.lines()
                .filter_map(|l| l.split_whitespace().next())
                .map(str::to_string)
                .collect(),
        )
    }
}

/// The target kernel's list: `BPFVET_ERROR_INJECTION_LIST` when set; else
/// none when its config does not build one; else the host's, read once
/// per process.
pub fn target_list() -> &'static ErrorInjection {
    static LIST: OnceLock<ErrorInjection> = OnceLock::new();
    LIST.get_or_init(|| match std::env::var_os(LIST_ENV) {
        Some(v) if v == "none" => ErrorInjection::Functions(HashSet::new()),
        Some(path) => std::fs::read_to_string(path)
            .map(|t| ErrorInjection::parse(&t))
            .unwrap_or(ErrorInjection::Unknown),
        None => match kernel_config::target().map(|c| c.is_set(BUILT)) {
            Some(false) => ErrorInjection::Functions(HashSet::new()),
            _ => host_list(),
        },
    })
}

fn host_list() -> ErrorInjection {
    if let Ok(text) = std::fs::read_to_string(HOST_LIST) {
        return ErrorInjection::parse(&text);
    }
    let list_dir = Path::new(HOST_LIST).parent().unwrap_or(Path::new(DEBUGFS));
    let debugfs_mounted = std::fs::read_to_string("/proc/self/mounts").is_ok_and(|m| {
        m.lines().any(|l| {
            let mut f = l.split_whitespace().skip(1);
            f.next() == Some(DEBUGFS) && f.next() == Some("debugfs")
        })
    });
    // Readable debugfs without the directory: built without the list.
    let readable = std::fs::read_dir(DEBUGFS).is_ok();
    if debugfs_mounted && readable && !list_dir.exists() {
        ErrorInjection::Functions(HashSet::new())
    } else {
        ErrorInjection::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debugfs_lines_name_their_function_first() {
        let list = ErrorInjection::parse("__x64_sys_getpgid\tERRNO\nshould_failslab\tERRNO\n\n");
        assert_eq!(list.contains("__x64_sys_getpgid"), Some(true));
        assert_eq!(list.contains("should_failslab"), Some(true));
        assert_eq!(list.contains("ERRNO"), Some(false));
        assert_eq!(ErrorInjection::Unknown.contains("x"), None);
    }
}
