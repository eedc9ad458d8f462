//! BPF maps with kernel semantics (see issue 5).
