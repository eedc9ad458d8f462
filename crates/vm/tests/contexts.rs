//! ctx_in / ctx_out and input refusals against the host kernel's
//! BPF_PROG_TEST_RUN: syscall and raw_tp contexts, __sk_buff fields a tc
//! program reads and writes, xdp_md with metadata, and the inputs the
//! kernel refuses with EINVAL. Needs root and the bpf() syscall; prints
//! SKIP otherwise.

use std::path::{Path, PathBuf};

use bpfvet_kernel::{Kernel, LoadOptions, LoadedProgram, TestRunInput as KInput};
use bpfvet_object::Object;
use bpfvet_vm::{test_run, TestRunInput, Vm, VmError};

fn progs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs")
}

struct Both {
    _obj: Box<Object>,
    kprog: LoadedProgram,
    vm: Vm,
    idx: usize,
}

fn load(kernel: &Kernel, file: &str, prog: &str) -> Both {
    let obj =
        Box::new(Object::from_file(progs_dir().join(file), &Default::default()).expect("object"));
    let idx = obj
        .programs
        .iter()
        .position(|p| p.name == prog)
        .expect("program");
    let session = kernel.open_object(&obj);
    let kprog = session
        .load_program(idx, &LoadOptions::default())
        .and_then(|r| r.loaded)
        .expect("kernel loads it");
    let vm = Vm::load(&obj).expect("vm loads it");
    // The session's maps stay alive through the program's references.
    std::mem::forget(session);
    Both {
        _obj: obj,
        kprog,
        vm,
        idx,
    }
}

/// Runs both; returns (retval, data_out, ctx_out) of each, or the refusal.
fn both(b: &Both, data: &[u8], ctx: Option<&[u8]>, ctx_out: usize, repeat: u32) {
    let k = b.kprog.test_run(&KInput {
        data,
        data_out_size: if data.is_empty() { 0 } else { 4096 },
        ctx,
        ctx_out_size: ctx_out,
        repeat,
        ..Default::default()
    });
    let v = test_run(
        &b.vm,
        b.idx,
        &TestRunInput {
            data,
            ctx,
            repeat,
            cpu: 0,
        },
    );
    match (k, v) {
        (Ok(k), Ok(v)) => {
            assert_eq!(
                k.retval,
                v.retval,
                "retval (data {} bytes, ctx {ctx:?}, repeat {repeat})",
                data.len()
            );
            assert_eq!(k.data_out, v.data_out, "data_out");
            if ctx_out > 0 {
                assert_eq!(
                    k.ctx_out,
                    v.ctx_out[..k.ctx_out.len().min(v.ctx_out.len())],
                    "ctx_out"
                );
            }
        }
        (Err(e), Err(VmError::Invalid(_))) if e.0 == 22 => {}
        (k, v) => panic!("kernel {k:?} vm {:?}", v.map(|o| o.retval)),
    }
}

fn kernel() -> Option<Kernel> {
    match Kernel::open() {
        Ok(k) => Some(k),
        Err(e) => {
            println!("SKIP: {e}");
            None
        }
    }
}

#[test]
fn syscall_context_is_written_back() {
    let Some(kernel) = kernel() else { return };
    let b = load(&kernel, "syscall_rawtp.bpf.o", "syscall_sum");
    let mut ctx = Vec::new();
    for v in [5u64, 7, 0, 0] {
        ctx.extend_from_slice(&v.to_le_bytes());
    }
    // The kernel writes the context back into ctx_in; compare our ctx_out
    // with what the kernel wrote.
    let k = b.kprog.test_run(&KInput {
        ctx: Some(&ctx),
        ..Default::default()
    });
    let v = test_run(
        &b.vm,
        b.idx,
        &TestRunInput {
            data: &[],
            ctx: Some(&ctx),
            repeat: 0,
            cpu: 0,
        },
    )
    .unwrap();
    let k = k.expect("kernel runs syscall_sum");
    assert_eq!(k.retval, v.retval);
    assert_eq!(
        u64::from_le_bytes(v.ctx_out[16..24].try_into().unwrap()),
        12
    );
    assert_eq!(u32::from_le_bytes(v.ctx_out[24..28].try_into().unwrap()), 1);
    // data_in is refused by both.
    both(&b, &[0u8; 20], Some(&ctx), 0, 0);
}

#[test]
fn raw_tracepoint_args() {
    let Some(kernel) = kernel() else { return };
    let b = load(&kernel, "syscall_rawtp.bpf.o", "rawtp_sys_enter");
    let mut ctx = Vec::new();
    for v in [0u64, 42] {
        ctx.extend_from_slice(&v.to_le_bytes());
    }
    both(&b, &[], Some(&ctx), 0, 0);
}

fn frame(name: &str) -> Vec<u8> {
    std::fs::read(progs_dir().join("packets").join(name)).expect("frame")
}

#[test]
fn sk_buff_fields_in_and_out() {
    let Some(kernel) = kernel() else { return };
    let b = load(&kernel, "tc_classifier.bpf.o", "tc_classify");
    let mut ctx = vec![0u8; 192];
    ctx[8..12].copy_from_slice(&0x55u32.to_le_bytes()); // mark
    ctx[32..36].copy_from_slice(&3u32.to_le_bytes()); // priority
    ctx[48..52].copy_from_slice(&9u32.to_le_bytes()); // cb[0]
    ctx[60..64].copy_from_slice(&0xabcdu32.to_le_bytes()); // cb[3]
    for f in [
        "v4_udp53.bin",
        "v4_tcp80.bin",
        "arp.bin",
        "v6_udp53.bin",
        "v4_ttl0.bin",
    ] {
        both(&b, &frame(f), Some(&ctx), 192, 1);
    }
    // wire_len above the packet length is accepted, below it refused.
    let mut c2 = ctx.clone();
    c2[160..164].copy_from_slice(&1000u32.to_le_bytes());
    both(&b, &frame("v4_udp53.bin"), Some(&c2), 192, 1);
    c2[160..164].copy_from_slice(&10u32.to_le_bytes());
    both(&b, &frame("v4_udp53.bin"), Some(&c2), 192, 1);
    // A field test_run does not take (len) is refused.
    let mut c3 = ctx.clone();
    c3[0] = 1;
    both(&b, &frame("v4_udp53.bin"), Some(&c3), 192, 1);
    // Frames shorter than an Ethernet header are refused.
    both(&b, &[0u8; 13], None, 0, 1);
}

#[test]
fn socket_filter_ctx_out() {
    let Some(kernel) = kernel() else { return };
    let b = load(&kernel, "socket_filter.bpf.o", "sock_count_ipproto");
    let mut ctx = vec![0u8; 192];
    ctx[52..56].copy_from_slice(&7u32.to_le_bytes()); // cb[1]
    for f in ["v4_tcp80.bin", "v6_tcp23.bin", "eth_only.bin"] {
        both(&b, &frame(f), Some(&ctx), 192, 1);
    }
}

#[test]
fn xdp_md_with_metadata() {
    let Some(kernel) = kernel() else { return };
    let b = load(&kernel, "xdp_parser.bpf.o", "xdp_vlan_pop");
    let data = frame("vlan_v4_tcp80.bin");
    // 8 bytes of metadata in front of the frame.
    let mut input = vec![0xeeu8; 8];
    input.extend_from_slice(&data);
    let mut md = vec![0u8; 24];
    md[0..4].copy_from_slice(&8u32.to_le_bytes());
    md[4..8].copy_from_slice(&(input.len() as u32).to_le_bytes());
    both(&b, &input, Some(&md), 24, 1);
    // ingress_ifindex 1 (lo), queue 0.
    md[12..16].copy_from_slice(&1u32.to_le_bytes());
    both(&b, &input, Some(&md), 24, 1);
    // Metadata not a multiple of 4, data_meta set, egress set: refused.
    let mut bad = md.clone();
    bad[0..4].copy_from_slice(&6u32.to_le_bytes());
    both(&b, &input, Some(&bad), 24, 1);
    let mut bad = md.clone();
    bad[8..12].copy_from_slice(&4u32.to_le_bytes());
    both(&b, &input, Some(&bad), 24, 1);
    // Shorter than an Ethernet header after the metadata.
    both(&b, &[0u8; 13], None, 0, 1);
    // repeat runs on the same buffer. (No ctx_out here: asking for ctx_out
    // without ctx_in makes the kernel use a zeroed xdp_md, i.e. an empty
    // linear part and the whole frame in a fragment.)
    both(&b, &data, None, 0, 5);
}
