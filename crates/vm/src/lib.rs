//! The bpfvet runtime (see issue 6).
