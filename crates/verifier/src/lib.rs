//! The bpfvet verifier (see issue 4).
