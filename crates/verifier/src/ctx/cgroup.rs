//! cgroup device, sysctl and sockopt contexts.

use super::layout::*;
use super::{narrow, pointer, scalar, CtxValue, Grant, Q};
use bpfvet_isa::uapi::AttachType as At;

fn at(q: &Q, f: Field) -> bool {
    q.within(f.0, f.1)
}

/// Whole-struct bound: these types check `off + size` against the size.
fn fits(q: &Q, size: u32) -> bool {
    q.off >= 0 && q.off + q.size <= size as i64 && q.aligned()
}

pub fn device(q: &Q) -> Grant {
    if q.write || !fits(q, CGROUP_DEV_CTX_SIZE) {
        return None;
    }
    if at(q, DEV_ACCESS_TYPE) {
        return narrow(q, 4);
    }
    (q.size == 4).then(scalar).flatten()
}

pub fn sysctl(q: &Q) -> Grant {
    if !fits(q, SYSCTL_SIZE) {
        return None;
    }
    if at(q, SYSCTL_WRITE) {
        return if q.write { None } else { narrow(q, 4) };
    }
    if at(q, SYSCTL_FILE_POS) {
        return if q.write {
            (q.size == 4).then(scalar).flatten()
        } else {
            narrow(q, 4)
        };
    }
    None
}

pub fn sockopt(q: &Q) -> Grant {
    if q.off < 0 || q.off >= SOCKOPT_SIZE as i64 || !q.aligned() {
        return None;
    }
    let get = q.eat == At::CGROUP_GETSOCKOPT;
    let set = q.eat == At::CGROUP_SETSOCKOPT;
    if q.write {
        let ok = match q.off as u32 {
            o if o == SOCKOPT_RETVAL.0 => q.size == 4 && get,
            SOCKOPT_OPTNAME | SOCKOPT_LEVEL => q.size == 4 && set,
            SOCKOPT_OPTLEN => q.size == 4,
            _ => false,
        };
        return ok.then(scalar).flatten();
    }
    let eight = |v: CtxValue| (q.size == 8).then(|| pointer(v)).flatten();
    if at(q, SOCKOPT_SK) {
        return eight(CtxValue::Sock);
    }
    if at(q, SOCKOPT_OPTVAL) {
        return eight(CtxValue::PacketStart);
    }
    if at(q, SOCKOPT_OPTVAL_END) {
        return eight(CtxValue::PacketEnd);
    }
    if at(q, SOCKOPT_RETVAL) {
        return (q.size == 4 && get).then(scalar).flatten();
    }
    (q.size == 4).then(scalar).flatten()
}
