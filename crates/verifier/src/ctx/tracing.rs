//! Tracing-side contexts: pt_regs, tracepoint records, raw tracepoint
//! arguments, perf event data, BTF-typed arguments; plus the small
//! contexts of lirc, syscall and netfilter programs.

use super::layout::*;
use super::{narrow, pointer, scalar, CtxValue, Grant, Q};

pub fn kprobe(q: &Q) -> Grant {
    let ok = q.off >= 0
        && q.off < PT_REGS_SIZE as i64
        && !q.write
        && q.aligned()
        && q.off + q.size <= PT_REGS_SIZE as i64;
    ok.then(scalar).flatten()
}

/// Tracepoint records: the first 8 bytes are hidden, the rest is read-only
/// and checked only against the largest possible record. The kernel
/// compares the lower bound unsigned and the upper one signed, so aligned
/// negative offsets pass.
pub fn tracepoint(q: &Q) -> Grant {
    let hidden = q.off >= 0 && q.off < TP_HIDDEN as i64;
    let ok = !hidden && q.off < PERF_MAX_TRACE_SIZE as i64 && !q.write && q.aligned();
    ok.then(scalar).flatten()
}

pub fn perf_event(q: &Q) -> Grant {
    if q.off < 0 || q.off >= PERF_EVENT_DATA_SIZE as i64 || q.write || !q.aligned() {
        return None;
    }
    let (sp, sl) = PE_SAMPLE_PERIOD;
    let (ad, al) = PE_ADDR;
    if q.within(sp, sl) || q.within(ad, al) {
        return narrow(q, 8);
    }
    (q.size == 8).then(scalar).flatten()
}

/// `bpf_tracing_ctx_access`: u64 arguments, read-only.
fn args(q: &Q) -> bool {
    q.off >= 0 && q.off < RAW_TP_ARGS_SIZE as i64 && !q.write && q.aligned()
}

pub fn raw_tp(q: &Q) -> Grant {
    args(q).then(scalar).flatten()
}

pub fn raw_tp_writable(q: &Q) -> Grant {
    if q.off == 0 {
        if q.size != 8 || q.write {
            return None;
        }
        return args(q).then(|| pointer(CtxValue::TpBuffer)).flatten();
    }
    raw_tp(q)
}

/// Tracing, LSM (and struct_ops) programs: the argument's BTF type decides
/// the rest (`btf_ctx_access`), which needs the attach target.
pub fn btf_args(q: &Q) -> Grant {
    args(q)
        .then(|| {
            pointer(CtxValue::BtfArg {
                arg: (q.off / 8) as u32,
            })
        })
        .flatten()
}

/// LSM programs: `btf_ctx_access` alone (no read-only or alignment rule
/// of the trampoline's generic check), so arguments may be written and
/// read at any width; the argument's BTF type decides.
pub fn lsm_args(q: &Q) -> Grant {
    (q.off >= 0 && q.off < RAW_TP_ARGS_SIZE as i64)
        .then(|| {
            pointer(CtxValue::BtfArg {
                arg: (q.off / 8) as u32,
            })
        })
        .flatten()
}

pub fn lirc_mode2(q: &Q) -> Grant {
    (!q.write && q.off == 0 && q.size == 4)
        .then(scalar)
        .flatten()
}

pub fn syscall(q: &Q) -> Grant {
    (q.off >= 0 && q.off < SYSCALL_CTX_MAX as i64 && q.aligned())
        .then(scalar)
        .flatten()
}

pub fn netfilter(q: &Q) -> Grant {
    if q.off < 0 || q.off >= NF_CTX_SIZE as i64 || !q.aligned() || q.write {
        return None;
    }
    let (field, name) = if q.within(NF_SKB.0, NF_SKB.1) {
        (NF_SKB, "sk_buff")
    } else {
        (NF_STATE, "nf_hook_state")
    };
    (q.size == field.1 as i64)
        .then(|| pointer(CtxValue::BtfStruct(name)))
        .flatten()
}
