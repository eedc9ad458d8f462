//! The context a program runs on, as test_run builds it: `xdp_md` over an
//! `xdp_buff`, `__sk_buff` over an `sk_buff`, or plain bytes (syscall,
//! raw tracepoint, conformance). Structured contexts are not memory: the
//! kernel rewrites their field loads, so the interpreter routes accesses to
//! the context region through [`Ctx::load`] / [`Ctx::store`].

/// XDP_PACKET_HEADROOM.
pub const XDP_HEADROOM: usize = 256;
/// SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) on x86-64.
pub const SHINFO_TAILROOM: usize = 320;
pub const PAGE_SIZE: usize = 4096;
/// sizeof(struct xdp_frame): the front of the headroom a program may not use.
pub const XDP_FRAME_SIZE: usize = 40;
pub const ETH_HLEN: usize = 14;
/// NET_SKB_PAD + NET_IP_ALIGN on x86-64.
pub const SKB_HEADROOM: usize = 64;
/// sizeof(struct __sk_buff) and sizeof(struct xdp_md).
pub const SK_BUFF_SIZE: usize = 192;
pub const XDP_MD_SIZE: usize = 24;
/// The loopback device's ifindex: test_run's default device.
pub const LOOPBACK_IFINDEX: u32 = 1;

/// A packet buffer that never moves during a run (programs hold pointers
/// into it); `data`, `data_end`, `meta` are offsets into `buf`.
#[derive(Clone, Debug)]
pub struct Packet {
    pub buf: Box<[u8]>,
    pub meta: usize,
    pub data: usize,
    pub data_end: usize,
}

impl Packet {
    pub fn new(total: usize, headroom: usize, bytes: &[u8]) -> Packet {
        let mut buf = vec![0u8; total].into_boxed_slice();
        buf[headroom..headroom + bytes.len()].copy_from_slice(bytes);
        Packet {
            buf,
            meta: headroom,
            data: headroom,
            data_end: headroom + bytes.len(),
        }
    }

    pub fn addr(&self, off: usize) -> u64 {
        self.buf.as_ptr() as u64 + off as u64
    }

    pub fn bytes(&self) -> &[u8] {
        &self.buf[self.data..self.data_end]
    }
}

#[derive(Clone, Debug)]
pub struct XdpState {
    pub pkt: Packet,
    pub ingress_ifindex: u32,
    pub rx_queue_index: u32,
}

/// The `sk_buff` fields a program can see or set through `__sk_buff`.
#[derive(Clone, Debug, Default)]
pub struct SkbState {
    pub pkt: Option<Packet>,
    /// Offsets in `pkt.buf` of the MAC and network headers.
    pub mac: usize,
    pub network: usize,
    pub pkt_type: u32,
    pub mark: u32,
    pub queue_mapping: u32,
    /// Network byte order as in the sk_buff.
    pub protocol: u16,
    pub priority: u32,
    pub ingress_ifindex: u32,
    pub ifindex: u32,
    pub tc_index: u32,
    pub cb: [u32; 5],
    pub hash: u32,
    pub tc_classid: u32,
    pub tstamp: u64,
    pub wire_len: u32,
    pub gso_segs: u32,
    pub gso_size: u32,
    pub hwtstamp: u64,
    pub family: u32,
    /// Whether the program type may use data/data_end (tc, flow dissector).
    pub direct_access: bool,
    /// tc programs may write tc_classid and tc_index.
    pub is_tc: bool,
    /// Flow dissector: the address of the `bpf_flow_keys` buffer.
    pub flow_keys: u64,
}

impl SkbState {
    pub fn pkt(&self) -> &Packet {
        self.pkt.as_ref().expect("skb context has a packet")
    }
    pub fn len(&self) -> u32 {
        let p = self.pkt();
        (p.data_end - p.data) as u32
    }
}

#[derive(Clone, Debug)]
pub enum Ctx {
    /// Plain bytes at `addr` (syscall, raw_tp, conformance memory); no
    /// special region.
    Bytes,
    Xdp(XdpState),
    Skb(Box<SkbState>),
}

pub enum CtxError {
    Denied,
}

impl Ctx {
    pub fn packet(&self) -> Option<&Packet> {
        match self {
            Ctx::Bytes => None,
            Ctx::Xdp(x) => Some(&x.pkt),
            Ctx::Skb(s) => s.pkt.as_ref(),
        }
    }

    pub fn packet_mut(&mut self) -> Option<&mut Packet> {
        match self {
            Ctx::Bytes => None,
            Ctx::Xdp(x) => Some(&mut x.pkt),
            Ctx::Skb(s) => s.pkt.as_mut(),
        }
    }

    /// A converted context load: what the kernel's rewritten load yields.
    pub fn load(&self, off: u32, size: u32) -> Result<u64, CtxError> {
        match self {
            Ctx::Bytes => Err(CtxError::Denied),
            Ctx::Xdp(x) => xdp_load(x, off, size),
            Ctx::Skb(s) => skb_load(s, off, size),
        }
    }

    /// A converted context store. It changes only the field at `off`:
    /// loads of other fields yield what they did (compiled code keeps
    /// them cached).
    /// Where a 4-byte store at `off` goes when it does nothing but set a
    /// u32 field (compiled code then stores there itself), or None.
    pub(crate) fn u32_field(&mut self, off: u32) -> Option<*mut u32> {
        match self {
            Ctx::Skb(s) => skb_u32_field(s, off).map(std::ptr::from_mut),
            _ => None,
        }
    }

    pub fn store(&mut self, off: u32, size: u32, v: u64) -> Result<(), CtxError> {
        match self {
            Ctx::Skb(s) => skb_store(s, off, size, v),
            _ => Err(CtxError::Denied),
        }
    }
}

fn xdp_load(x: &XdpState, off: u32, size: u32) -> Result<u64, CtxError> {
    if size != 4 {
        return Err(CtxError::Denied);
    }
    let p = &x.pkt;
    Ok(match off {
        0 => p.addr(p.data),
        4 => p.addr(p.data_end),
        8 => p.addr(p.meta),
        12 => x.ingress_ifindex as u64,
        16 => x.rx_queue_index as u64,
        20 => 0,
        _ => return Err(CtxError::Denied),
    })
}

/// Reads a narrow or full load of a u32 field (the verifier allows narrow
/// loads of most __sk_buff fields).
fn narrow(v: u32, off: u32, size: u32) -> u64 {
    let shift = (off % 4) * 8;
    let v = (v >> shift) as u64;
    match size {
        1 => v & 0xff,
        2 => v & 0xffff,
        _ => v & 0xffff_ffff,
    }
}

fn skb_load(s: &SkbState, off: u32, size: u32) -> Result<u64, CtxError> {
    // Pointer fields: full-width loads only.
    match (off, size) {
        (76, 4) if s.direct_access => return Ok(s.pkt().addr(s.pkt().data)),
        (80, 4) if s.direct_access => return Ok(s.pkt().addr(s.pkt().data_end)),
        (140, 4) if s.direct_access => return Ok(s.pkt().addr(s.pkt().meta)),
        (144, 8) if s.flow_keys != 0 => return Ok(s.flow_keys),
        (152, 8) => return Ok(s.tstamp),
        (184, 8) => return Ok(s.hwtstamp),
        (168, 8) => return Ok(0),
        (76 | 80 | 140 | 144 | 152 | 184 | 168..=175, _) => return Err(CtxError::Denied),
        _ => {}
    }
    if size == 8 || off as usize >= SK_BUFF_SIZE {
        return Err(CtxError::Denied);
    }
    let word = off & !3;
    let v = match word {
        0 => s.len(),
        4 => s.pkt_type,
        8 => s.mark,
        12 => s.queue_mapping,
        16 => s.protocol as u32,
        20 | 24 | 28 => 0, // no VLAN tag in a test_run skb
        32 => s.priority,
        36 => s.ingress_ifindex,
        40 => s.ifindex,
        44 => s.tc_index,
        48..=64 => s.cb[((word - 48) / 4) as usize],
        68 => s.hash,
        72 => s.tc_classid,
        84 => 0, // napi_id
        88 => s.family,
        92..=136 => 0, // socket addresses and ports: the dummy socket has none
        160 => s.wire_len,
        164 => s.gso_segs,
        176 => s.gso_size,
        180 => 0,
        _ => return Err(CtxError::Denied),
    };
    Ok(narrow(v, off, size))
}

fn skb_store(s: &mut SkbState, off: u32, size: u32, v: u64) -> Result<(), CtxError> {
    if off == 152 && size == 8 {
        s.tstamp = v;
        return Ok(());
    }
    if size != 4 {
        return Err(CtxError::Denied);
    }
    *skb_u32_field(s, off).ok_or(CtxError::Denied)? = v as u32;
    Ok(())
}

/// The u32 field a 4-byte store at `off` of __sk_buff sets.
fn skb_u32_field(s: &mut SkbState, off: u32) -> Option<&mut u32> {
    Some(match off {
        8 => &mut s.mark,
        12 => &mut s.queue_mapping,
        32 => &mut s.priority,
        44 if s.is_tc => &mut s.tc_index,
        48..=64 if off.is_multiple_of(4) => &mut s.cb[((off - 48) / 4) as usize],
        72 if s.is_tc => &mut s.tc_classid,
        _ => return None,
    })
}
