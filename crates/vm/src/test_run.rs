//! BPF_PROG_TEST_RUN as Linux 6.18 does it (net/bpf/test_run.c): how each
//! program type's context is built from `data_in` / `ctx_in`, which inputs
//! are refused with EINVAL, and what comes back in `data_out` / `ctx_out`.

use std::time::Instant;

use bpfvet_isa::uapi::ProgType;

use crate::ctx::*;
use crate::error::{Result, VmError};
use crate::interp::{Engine, Interpreter};
use crate::run::{Output, Run};
use crate::vm::Vm;

#[derive(Clone, Debug, Default)]
pub struct TestRunInput<'a> {
    pub data: &'a [u8],
    pub ctx: Option<&'a [u8]>,
    /// 0 and 1 both run once.
    pub repeat: u32,
    /// The CPU to run on (below `Vm::cpus`): its slot of per-CPU maps.
    pub cpu: u32,
}

#[derive(Clone, Debug)]
pub struct TestRunOutput {
    pub retval: u32,
    pub data_out: Vec<u8>,
    pub ctx_out: Vec<u8>,
    /// Mean wall time of one run in ns.
    pub duration_ns: u64,
    pub output: Output,
}

fn invalid(why: &str) -> VmError {
    VmError::Invalid(why.to_string())
}

/// bpf_ctx_init: a shorter ctx_in is zero-padded, a longer one must have
/// only zeros beyond the struct.
fn ctx_init(ctx: Option<&[u8]>, size: usize) -> Result<Option<Vec<u8>>> {
    let Some(c) = ctx else { return Ok(None) };
    if c.len() > size && c[size..].iter().any(|&b| b != 0) {
        return Err(invalid(
            "ctx_in has non-zero bytes beyond the context struct",
        ));
    }
    let mut v = c[..c.len().min(size)].to_vec();
    v.resize(size, 0);
    Ok(Some(v))
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().expect("8 bytes"))
}

/// Runs `prog` of `vm` as BPF_PROG_TEST_RUN would, with the interpreter.
pub fn test_run(vm: &Vm, prog: usize, input: &TestRunInput<'_>) -> Result<TestRunOutput> {
    test_run_with(&Interpreter, vm, prog, input)
}

pub fn test_run_with(
    engine: &dyn Engine,
    vm: &Vm,
    prog: usize,
    input: &TestRunInput<'_>,
) -> Result<TestRunOutput> {
    let p = vm
        .programs
        .get(prog)
        .ok_or_else(|| VmError::NoSuchProgram(format!("#{prog}")))?;
    if p.ops.is_empty() {
        return Err(VmError::Empty);
    }
    match p.prog_type {
        ProgType::XDP => run_xdp(engine, vm, prog, input),
        ProgType::SOCKET_FILTER
        | ProgType::SCHED_CLS
        | ProgType::SCHED_ACT
        | ProgType::CGROUP_SKB
        | ProgType::LWT_IN
        | ProgType::LWT_OUT
        | ProgType::LWT_XMIT => run_skb(engine, vm, prog, p.prog_type, input),
        ProgType::FLOW_DISSECTOR => run_flow_dissector(engine, vm, prog, input),
        ProgType::SYSCALL | ProgType::RAW_TRACEPOINT => {
            run_plain(engine, vm, prog, p.prog_type, input)
        }
        t => Err(VmError::NotRunnable(t.to_string())),
    }
}

/// Runs `repeat` times on the same context, as bpf_test_run does.
fn repeat(
    engine: &dyn Engine,
    run: &mut Run<'_>,
    prog: usize,
    input: &TestRunInput<'_>,
) -> Result<(u32, u64)> {
    run.set_cpu(input.cpu)?;
    let times = input.repeat.max(1);
    let ctx = run.ctx_addr;
    let start = Instant::now();
    let ret = engine.execute_repeated(run, prog, ctx, times)?;
    let ns = start.elapsed().as_nanos() as u64 / times as u64;
    Ok((ret as u32, ns))
}

fn run_xdp(
    engine: &dyn Engine,
    vm: &Vm,
    prog: usize,
    input: &TestRunInput<'_>,
) -> Result<TestRunOutput> {
    let md = ctx_init(input.ctx, XDP_MD_SIZE)?;
    let mut headroom = XDP_HEADROOM;
    let mut meta_sz = 0usize;
    let mut linear = input.data.len();
    let (mut ingress, mut rxq) = (LOOPBACK_IFINDEX, 0);
    if let Some(md) = &md {
        let (data, data_end, data_meta) = (
            u32_at(md, 0) as usize,
            u32_at(md, 4) as usize,
            u32_at(md, 8),
        );
        if data_meta != 0 || data_end > input.data.len() || data > data_end {
            return Err(invalid("xdp_md data/data_end/data_meta out of range"));
        }
        if data % 4 != 0 || data > 32 || data > headroom - XDP_FRAME_SIZE {
            return Err(invalid("xdp_md metadata length"));
        }
        meta_sz = data;
        headroom -= meta_sz;
        linear = data_end;
        if u32_at(md, 20) != 0 {
            return Err(invalid("xdp_md egress_ifindex must be 0"));
        }
        let (ifi, q) = (u32_at(md, 12), u32_at(md, 16));
        if ifi == 0 && q != 0 {
            return Err(invalid("rx_queue_index without ingress_ifindex"));
        }
        if ifi > 1 || q != 0 {
            return Err(invalid(
                "only the loopback device (ifindex 1, queue 0) is modelled",
            ));
        }
        if ifi != 0 {
            (ingress, rxq) = (ifi, q);
        }
    }
    let max_linear = PAGE_SIZE - headroom - SHINFO_TAILROOM;
    if input.data.len() - meta_sz < ETH_HLEN {
        return Err(invalid("XDP frame shorter than an Ethernet header"));
    }
    if input.data.len() > linear.min(max_linear) || linear > max_linear {
        return Err(invalid(
            "multi-buffer (fragmented) XDP frames are not modelled",
        ));
    }
    let mut pkt = Packet::new(PAGE_SIZE, headroom, &input.data[..linear]);
    pkt.data = pkt.meta + meta_sz;
    let mut run = Run::new(
        vm,
        Ctx::Xdp(XdpState {
            pkt,
            ingress_ifindex: ingress,
            rx_queue_index: rxq,
        }),
    );
    let (retval, duration_ns) = repeat(engine, &mut run, prog, input)?;
    let Ctx::Xdp(x) = &run.ctx else {
        unreachable!("xdp run keeps its context")
    };
    let p = &x.pkt;
    let data_out = p.buf[p.meta..p.data_end].to_vec();
    let mut ctx_out = vec![0u8; XDP_MD_SIZE];
    ctx_out[0..4].copy_from_slice(&((p.data - p.meta) as u32).to_le_bytes());
    ctx_out[4..8].copy_from_slice(&((p.data_end - p.meta) as u32).to_le_bytes());
    if md.as_ref().is_some_and(|m| u32_at(m, 12) != 0) {
        ctx_out[12..16].copy_from_slice(&ingress.to_le_bytes());
        ctx_out[16..20].copy_from_slice(&rxq.to_le_bytes());
    }
    Ok(TestRunOutput {
        retval,
        data_out,
        ctx_out,
        duration_ns,
        output: std::mem::take(&mut run.output),
    })
}

/// eth_type_trans on the loopback device: protocol and packet type.
fn eth_type_trans(frame: &[u8]) -> (u16, u32) {
    let dst = &frame[0..6];
    let pkt_type = if dst[0] & 1 != 0 {
        if dst.iter().all(|&b| b == 0xff) {
            1 // PACKET_BROADCAST
        } else {
            2 // PACKET_MULTICAST
        }
    } else if dst.iter().any(|&b| b != 0) {
        3 // PACKET_OTHERHOST: lo's address is all zeros
    } else {
        0
    };
    let ty = u16::from_be_bytes([frame[12], frame[13]]);
    let proto = if ty >= 0x600 {
        ty
    } else if frame.len() >= 16 && frame[14] == 0xff && frame[15] == 0xff {
        0x0001 // ETH_P_802_3
    } else {
        0x0004 // ETH_P_802_2
    };
    // skb->protocol is stored in network byte order.
    (proto.to_be(), pkt_type)
}

fn run_skb(
    engine: &dyn Engine,
    vm: &Vm,
    prog: usize,
    t: ProgType,
    input: &TestRunInput<'_>,
) -> Result<TestRunOutput> {
    let size = input.data.len();
    if size < ETH_HLEN {
        return Err(invalid("packet shorter than an Ethernet header"));
    }
    if size > PAGE_SIZE - SKB_HEADROOM - SHINFO_TAILROOM {
        return Err(invalid(
            "packet larger than a page minus headroom and tailroom",
        ));
    }
    let ctx = ctx_init(input.ctx, SK_BUFF_SIZE)?;
    let is_l2 = matches!(t, ProgType::SCHED_CLS | ProgType::SCHED_ACT);
    let direct = is_l2 || matches!(t, ProgType::LWT_IN | ProgType::LWT_OUT | ProgType::LWT_XMIT);
    let mut pkt = Packet::new(PAGE_SIZE, SKB_HEADROOM, input.data);
    let mut s = SkbState {
        mac: SKB_HEADROOM,
        network: SKB_HEADROOM + ETH_HLEN,
        ifindex: LOOPBACK_IFINDEX,
        direct_access: direct,
        is_tc: is_l2,
        ..Default::default()
    };
    if let Some(c) = &ctx {
        let ifindex = u32_at(c, 40);
        if ifindex > 1 {
            return Err(invalid("only the loopback device (ifindex 1) is modelled"));
        }
    }
    (s.protocol, s.pkt_type) = eth_type_trans(input.data);
    pkt.data += ETH_HLEN;
    pkt.meta = pkt.data;
    let headlen = size - ETH_HLEN;
    match u16::from_be(s.protocol) {
        0x0800 if headlen < 20 => return Err(invalid("IPv4 frame shorter than an IPv4 header")),
        0x86dd if headlen < 40 => return Err(invalid("IPv6 frame shorter than an IPv6 header")),
        0x0800 => s.family = 2,
        0x86dd => s.family = 10,
        _ => {}
    }
    if is_l2 {
        pkt.data -= ETH_HLEN;
        pkt.meta = pkt.data;
    }
    s.pkt = Some(pkt);
    if let Some(c) = &ctx {
        convert_ctx_in(c, &mut s)?;
    } else {
        s.wire_len = s.len();
    }
    let mut run = Run::new(vm, Ctx::Skb(Box::new(s)));
    let (retval, duration_ns) = repeat(engine, &mut run, prog, input)?;
    let Ctx::Skb(s) = &mut run.ctx else {
        unreachable!("skb run keeps its context")
    };
    let p = s.pkt.as_mut().expect("skb has a packet");
    if !is_l2 {
        // The program saw the frame from L3; the kernel pushes back a
        // zeroed link-layer header.
        p.data -= ETH_HLEN;
        p.buf[p.data..p.data + ETH_HLEN].fill(0);
    }
    let data_out = p.buf[p.data..p.data_end].to_vec();
    let ctx_out = convert_ctx_out(s);
    Ok(TestRunOutput {
        retval,
        data_out,
        ctx_out,
        duration_ns,
        output: std::mem::take(&mut run.output),
    })
}

/// convert___skb_to_skb: which __sk_buff fields ctx_in may set.
fn convert_ctx_in(c: &[u8], s: &mut SkbState) -> Result<()> {
    let allowed: &[(usize, usize)] = &[
        (8, 12),
        (32, 44),
        (48, 68),
        (152, 168),
        (176, 180),
        (184, 192),
    ];
    for (i, &b) in c.iter().enumerate() {
        if b != 0 && !allowed.iter().any(|&(lo, hi)| i >= lo && i < hi) {
            return Err(invalid(
                "__sk_buff field that test_run does not accept is set",
            ));
        }
    }
    s.mark = u32_at(c, 8);
    s.priority = u32_at(c, 32);
    s.ingress_ifindex = u32_at(c, 36);
    for (i, cb) in s.cb.iter_mut().enumerate() {
        *cb = u32_at(c, 48 + 4 * i);
    }
    s.tstamp = u64_at(c, 152);
    let wire_len = u32_at(c, 160);
    if wire_len == 0 {
        s.wire_len = s.len();
    } else {
        // GSO_LEGACY_MAX_SIZE
        if wire_len < s.len() || wire_len > 65536 {
            return Err(invalid("wire_len below the packet length or above 64 KiB"));
        }
        s.wire_len = wire_len;
    }
    s.gso_segs = u32_at(c, 164);
    if s.gso_segs > 65535 {
        return Err(invalid("gso_segs above GSO_MAX_SEGS"));
    }
    s.gso_size = u32_at(c, 176);
    s.hwtstamp = u64_at(c, 184);
    Ok(())
}

/// convert_skb_to___skb.
fn convert_ctx_out(s: &SkbState) -> Vec<u8> {
    let mut c = vec![0u8; SK_BUFF_SIZE];
    let mut put = |off: usize, v: u32| c[off..off + 4].copy_from_slice(&v.to_le_bytes());
    put(8, s.mark);
    put(32, s.priority);
    put(36, s.ingress_ifindex);
    put(40, s.ifindex);
    for (i, &cb) in s.cb.iter().enumerate() {
        put(48 + 4 * i, cb);
    }
    put(160, s.wire_len);
    put(164, s.gso_segs);
    put(176, s.gso_size);
    c[152..160].copy_from_slice(&s.tstamp.to_le_bytes());
    c[184..192].copy_from_slice(&s.hwtstamp.to_le_bytes());
    c
}

/// sizeof(struct bpf_flow_keys).
const FLOW_KEYS_SIZE: usize = 56;

fn run_flow_dissector(
    engine: &dyn Engine,
    vm: &Vm,
    prog: usize,
    input: &TestRunInput<'_>,
) -> Result<TestRunOutput> {
    let size = input.data.len();
    if size < ETH_HLEN {
        return Err(invalid("packet shorter than an Ethernet header"));
    }
    if size > PAGE_SIZE {
        return Err(invalid("packet larger than a page"));
    }
    let user = ctx_init(input.ctx, FLOW_KEYS_SIZE)?;
    let flags = match &user {
        Some(k) => {
            if k.iter()
                .enumerate()
                .any(|(i, &b)| b != 0 && !(48..52).contains(&i))
            {
                return Err(invalid("bpf_flow_keys fields other than flags are set"));
            }
            u32_at(k, 48)
        }
        None => 0,
    };
    let mut keys = vec![0u8; FLOW_KEYS_SIZE].into_boxed_slice();
    let keys_addr = keys.as_mut_ptr() as u64;
    let pkt = Packet::new(size, 0, input.data);
    let s = SkbState {
        pkt: Some(pkt),
        direct_access: true,
        flow_keys: keys_addr,
        ..Default::default()
    };
    let mut run = Run::new(vm, Ctx::Skb(Box::new(s)));
    run.add_static_region(keys_addr, FLOW_KEYS_SIZE, true);
    let times = input.repeat.max(1);
    let start = Instant::now();
    let mut retval = 0;
    for _ in 0..times {
        run.reset_dynamic();
        // bpf_flow_dissect: the keys start zeroed with the parameters set.
        let k = run
            .slice(keys_addr, FLOW_KEYS_SIZE as u64, true)
            .expect("flow keys region");
        k.fill(0);
        k[0..2].copy_from_slice(&(ETH_HLEN as u16).to_le_bytes());
        k[2..4].copy_from_slice(&(ETH_HLEN as u16).to_le_bytes());
        k[10..12].copy_from_slice(&input.data[12..14]);
        k[48..52].copy_from_slice(&flags.to_le_bytes());
        let ctx = run.ctx_addr;
        retval = engine.execute(&mut run, prog, 0, [ctx, 0, 0, 0, 0], 0)? as u32;
        let k = run
            .slice(keys_addr, FLOW_KEYS_SIZE as u64, true)
            .expect("flow keys region");
        let clamp = |v: u16, lo: u16, hi: u16| v.max(lo).min(hi);
        let hlen = size.min(0xffff) as u16;
        let nhoff = clamp(u16::from_le_bytes([k[0], k[1]]), ETH_HLEN as u16, hlen);
        let thoff = clamp(u16::from_le_bytes([k[2], k[3]]), nhoff, hlen);
        k[0..2].copy_from_slice(&nhoff.to_le_bytes());
        k[2..4].copy_from_slice(&thoff.to_le_bytes());
    }
    let duration_ns = start.elapsed().as_nanos() as u64 / times as u64;
    let data_out = keys.to_vec();
    Ok(TestRunOutput {
        retval,
        data_out,
        ctx_out: user.map(|_| keys.to_vec()).unwrap_or_default(),
        duration_ns,
        output: std::mem::take(&mut run.output),
    })
}

/// syscall and raw_tp: only ctx_in, run once; a syscall program's
/// context is written back.
fn run_plain(
    engine: &dyn Engine,
    vm: &Vm,
    prog: usize,
    t: ProgType,
    input: &TestRunInput<'_>,
) -> Result<TestRunOutput> {
    if !input.data.is_empty() || input.repeat > 1 {
        return Err(invalid(
            "this program type takes neither data_in nor repeat",
        ));
    }
    let mut ctx: Vec<u8> = input.ctx.unwrap_or(&[]).to_vec();
    if t == ProgType::RAW_TRACEPOINT && ctx.len() > 12 * 8 {
        return Err(invalid("raw_tp context larger than 12 arguments"));
    }
    if t == ProgType::SYSCALL && ctx.len() > u16::MAX as usize {
        return Err(invalid("syscall context larger than 64 KiB"));
    }
    let mut run = Run::new(vm, Ctx::Bytes);
    run.set_cpu(input.cpu)?;
    if ctx.is_empty() {
        run.ctx_addr = 0;
    } else {
        run.set_bytes_ctx(ctx.as_mut_ptr() as u64, ctx.len(), t == ProgType::SYSCALL);
    }
    let start = Instant::now();
    let ctx_addr = run.ctx_addr;
    let r = engine.execute(&mut run, prog, 0, [ctx_addr, 0, 0, 0, 0], 0)?;
    let duration_ns = start.elapsed().as_nanos() as u64;
    let output = std::mem::take(&mut run.output);
    drop(run);
    Ok(TestRunOutput {
        retval: r as u32,
        data_out: Vec::new(),
        ctx_out: if t == ProgType::SYSCALL {
            ctx
        } else {
            Vec::new()
        },
        duration_ns,
        output,
    })
}
