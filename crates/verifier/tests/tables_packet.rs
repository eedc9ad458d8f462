//! Direct packet access per program type against the host kernel: a store
//! through a bounds-checked packet pointer, and a packet pointer passed to a
//! helper with and without `pkt_access`.

mod tables_support;

use bpfvet_isa::uapi::{AttachType, ProgType};
use bpfvet_isa::Insn;
use bpfvet_verifier::ctx::packet::{
    direct_write_allowed, helper_packet_arg_allowed, CANNOT_WRITE_INTO_PACKET,
    HELPER_PACKET_ACCESS_NOT_ALLOWED,
};
use bpfvet_verifier::helpers::{helper_proto, id};
use tables_support::*;

/// (type, attach type, offset of the packet start and end pointers, load size)
const TYPES: &[(ProgType, Option<AttachType>, i16, i16, u32)] = &[
    (ProgType::SCHED_CLS, None, 76, 80, 4),
    (ProgType::SCHED_ACT, None, 76, 80, 4),
    (ProgType::XDP, None, 0, 4, 4),
    (ProgType::LWT_IN, None, 76, 80, 4),
    (ProgType::LWT_OUT, None, 76, 80, 4),
    (ProgType::LWT_XMIT, None, 76, 80, 4),
    (ProgType::LWT_SEG6LOCAL, None, 76, 80, 4),
    (ProgType::SK_SKB, None, 76, 80, 4),
    (ProgType::SK_MSG, None, 0, 8, 8),
    (
        ProgType::CGROUP_SKB,
        Some(AttachType::CGROUP_INET_INGRESS),
        76,
        80,
        4,
    ),
    (ProgType::FLOW_DISSECTOR, None, 76, 80, 4),
    (ProgType::SK_REUSEPORT, None, 0, 8, 8),
    (ProgType::SOCK_OPS, None, 192, 200, 8),
    (
        ProgType::CGROUP_SOCKOPT,
        Some(AttachType::CGROUP_GETSOCKOPT),
        8,
        16,
        8,
    ),
];

/// Loads the packet bounds into r7/r8, checks one byte, then runs `body`.
fn program(start: i16, end: i16, size: u32, body: &[Insn]) -> Vec<Insn> {
    let mut p = vec![
        Insn::new(0xbf, 6, 1, 0, 0),
        ldx(size, 7, 6, start),
        ldx(size, 8, 6, end),
        Insn::new(0xbf, 9, 7, 0, 0),
        Insn::new(0x07, 9, 0, 0, 8),
        // if r9 > r8 goto out
        Insn::new(0x2d, 9, 8, body.len() as i16, 0),
    ];
    p.extend_from_slice(body);
    p.extend([mov_r0(1), exit()]);
    p
}

#[test]
fn packet_access_matches_the_host_kernel() {
    if let Some(why) = kernel_unavailable() {
        println!("SKIP: {why}");
        return;
    }
    let map = create_array_map(4, 8, 1).expect("array map");
    let mut mismatches = Vec::new();
    for &(prog_type, attach, start, end, size) in TYPES {
        let spec = LoadSpec {
            prog_type: prog_type.0,
            expected_attach_type: attach.map_or(0, |a| a.0),
            ..Default::default()
        };
        // A store: *(u8 *)(r7 + 0) = 0.
        let r = load(
            &spec,
            &program(start, end, size, &[Insn::new(0x72, 7, 0, 0, 0)]),
        );
        let kernel = if r.ok {
            Some(true)
        } else if r.last_error_line() == CANNOT_WRITE_INTO_PACKET {
            Some(false)
        } else {
            None
        };
        if kernel != Some(direct_write_allowed(prog_type)) {
            mismatches.push(format!(
                "{prog_type} store: kernel {:?}",
                r.last_error_line()
            ));
        }
        // map_lookup_elem (pkt_access) and trace_printk (not) with the
        // packet as memory argument.
        for (helper, args) in [
            (
                id::MAP_LOOKUP_ELEM,
                [
                    ld_map_fd(1, map.raw())[0],
                    ld_map_fd(1, map.raw())[1],
                    Insn::new(0xbf, 2, 7, 0, 0),
                ],
            ),
            (
                id::TRACE_PRINTK,
                [
                    Insn::new(0xbf, 1, 7, 0, 0),
                    Insn::new(0xb7, 2, 0, 0, 4),
                    Insn::new(0xb7, 3, 0, 0, 0),
                ],
            ),
        ] {
            let Ok(proto) = helper_proto(helper, prog_type, attach) else {
                continue;
            };
            let mut body = args.to_vec();
            body.push(call(helper));
            let r = load(&spec, &program(start, end, size, &body));
            let refused = r.last_error_line() == HELPER_PACKET_ACCESS_NOT_ALLOWED;
            if refused == helper_packet_arg_allowed(prog_type, proto.pkt_access) {
                mismatches.push(format!(
                    "{prog_type} {}: kernel {:?}",
                    proto.name(),
                    r.last_error_line()
                ));
            }
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
