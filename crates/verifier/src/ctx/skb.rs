//! `struct __sk_buff` contexts: the shared rules (`bpf_skb_is_valid_access`)
//! and what each program type adds or forbids on top.

use super::layout::*;
use super::{narrow, pointer, scalar, CtxValue, Grant, Q};

fn in_any(q: &Q, fields: &[Field]) -> bool {
    fields.iter().any(|&(s, l)| q.within(s, l))
}

/// The packet pointer a load at this offset yields, for the types that
/// expose it (checked by the caller).
fn packet_pointer(q: &Q, meta_allowed: bool) -> CtxValue {
    if q.within(SKB_DATA.0, SKB_DATA.1) {
        CtxValue::PacketStart
    } else if q.within(SKB_DATA_END.0, SKB_DATA_END.1) {
        CtxValue::PacketEnd
    } else if meta_allowed && q.within(SKB_DATA_META.0, SKB_DATA_META.1) {
        CtxValue::PacketMeta
    } else {
        CtxValue::Scalar
    }
}

/// The rules every `__sk_buff` user shares; `ptr` is what the caller's
/// type makes of data/data_end/data_meta.
fn common(q: &Q, ptr: CtxValue) -> Grant {
    if q.off < 0 || q.off >= SK_BUFF_SIZE as i64 || !q.aligned() {
        return None;
    }
    let (cb_start, cb_len) = SKB_CB;
    if q.within(cb_start, cb_len) {
        return (q.off + q.size <= (cb_start + cb_len) as i64)
            .then(scalar)
            .flatten();
    }
    if in_any(q, &[SKB_DATA, SKB_DATA_META, SKB_DATA_END]) {
        return (!q.ldsx && q.size == 4).then(|| pointer(ptr)).flatten();
    }
    if in_any(
        q,
        &[SKB_REMOTE_IP6, SKB_LOCAL_IP6, SKB_REMOTE_IP4, SKB_LOCAL_IP4],
    ) {
        return (q.size == 4).then(scalar).flatten();
    }
    if in_any(q, &[SKB_FLOW_KEYS, SKB_PAD_AFTER_TSTAMP_TYPE]) || q.off == SKB_TSTAMP_TYPE as i64 {
        return None;
    }
    if in_any(q, &[SKB_HWTSTAMP]) {
        return (!q.write && q.size == 8).then(scalar).flatten();
    }
    if in_any(q, &[SKB_TSTAMP]) {
        return (q.size == 8).then(scalar).flatten();
    }
    if in_any(q, &[SKB_SK]) {
        return (!q.write && q.size == 8)
            .then(|| pointer(CtxValue::SockCommonOrNull))
            .flatten();
    }
    if q.write {
        (q.size == 4).then(scalar).flatten()
    } else {
        narrow(q, 4)
    }
}

pub fn socket_filter(q: &Q) -> Grant {
    let hidden = [
        SKB_TC_CLASSID,
        SKB_DATA,
        SKB_DATA_META,
        SKB_DATA_END,
        SKB_FAMILY_TO_LOCAL_PORT,
        SKB_TSTAMP,
        SKB_WIRE_LEN,
        SKB_HWTSTAMP,
    ];
    if in_any(q, &hidden) || (q.write && !in_any(q, &[SKB_CB])) {
        return None;
    }
    common(q, CtxValue::Scalar)
}

pub fn cgroup_skb(q: &Q) -> Grant {
    if in_any(q, &[SKB_TC_CLASSID, SKB_DATA_META, SKB_WIRE_LEN]) {
        return None;
    }
    // Packet pointers, and writes of tstamp, need CAP_BPF.
    if !q.bpf_capable && in_any(q, &[SKB_DATA, SKB_DATA_END]) {
        return None;
    }
    let writable: &[_] = if q.bpf_capable {
        &[SKB_MARK, SKB_PRIORITY, SKB_CB, SKB_TSTAMP]
    } else {
        &[SKB_MARK, SKB_PRIORITY, SKB_CB]
    };
    if q.write && !in_any(q, writable) {
        return None;
    }
    common(q, packet_pointer(q, false))
}

pub fn lwt(q: &Q) -> Grant {
    let hidden = [
        SKB_TC_CLASSID,
        SKB_FAMILY_TO_LOCAL_PORT,
        SKB_DATA_META,
        SKB_TSTAMP,
        SKB_WIRE_LEN,
        SKB_HWTSTAMP,
    ];
    if in_any(q, &hidden) || (q.write && !in_any(q, &[SKB_MARK, SKB_PRIORITY, SKB_CB])) {
        return None;
    }
    common(q, packet_pointer(q, false))
}

pub fn tc(q: &Q) -> Grant {
    let writable = [
        SKB_MARK,
        SKB_TC_INDEX,
        SKB_PRIORITY,
        SKB_TC_CLASSID,
        SKB_CB,
        SKB_TSTAMP,
        SKB_QUEUE_MAPPING,
    ];
    if q.write && !in_any(q, &writable) {
        return None;
    }
    if in_any(q, &[SKB_FAMILY_TO_LOCAL_PORT]) {
        return None;
    }
    if q.off == SKB_TSTAMP_TYPE as i64 {
        return (q.size == 1).then(scalar).flatten();
    }
    common(q, packet_pointer(q, true))
}

pub fn sk_skb(q: &Q) -> Grant {
    let hidden = [
        SKB_TC_CLASSID,
        SKB_DATA_META,
        SKB_TSTAMP,
        SKB_WIRE_LEN,
        SKB_HWTSTAMP,
        SKB_MARK,
    ];
    if in_any(q, &hidden) || (q.write && !in_any(q, &[SKB_TC_INDEX, SKB_PRIORITY])) {
        return None;
    }
    common(q, packet_pointer(q, false))
}

/// Flow dissectors see only the packet bounds and the flow keys.
pub fn flow_dissector(q: &Q) -> Grant {
    if q.off < 0 || q.off >= SK_BUFF_SIZE as i64 || !q.aligned() || q.write {
        return None;
    }
    if in_any(q, &[SKB_DATA, SKB_DATA_END]) {
        return (!q.ldsx && q.size == 4)
            .then(|| pointer(packet_pointer(q, false)))
            .flatten();
    }
    if in_any(q, &[SKB_FLOW_KEYS]) {
        return (q.size == 8).then(|| pointer(CtxValue::FlowKeys)).flatten();
    }
    None
}
