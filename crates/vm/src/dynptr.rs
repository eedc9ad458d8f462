//! Dynptr helpers (local dynptrs over memory, ring buffer records, the
//! samples of a USER_RINGBUF drain) with the kernel's semantics.
//!
//! A `struct bpf_dynptr` on the program's stack (16 bytes) holds what the
//! kernel's bpf_dynptr_kern holds, laid out the same way: the data
//! pointer; a u32 of size (low 24 bits), type (bits 28-30) and read-only
//! flag (bit 31); a u32 offset. All zero is the invalid ("null") dynptr.
//! Programs cannot read these bytes (the verifier forbids it), but the
//! helpers must agree on them.

use bpfvet_isa::uapi::HelperId;
use bpfvet_maps::user_ringbuf::UserRingBuf;
use bpfvet_maps::RingBuf;

use crate::error::Result;
use crate::interp::execute;
use crate::run::Run;

const EINVAL: u64 = (-22i64) as u64;
const E2BIG: u64 = (-7i64) as u64;

/// bpf_dynptr_kern's size field: 24 bits of size, then type and flag.
const MAX_SIZE: u32 = (1 << 24) - 1;
const TYPE_SHIFT: u32 = 28;
const RDONLY_BIT: u32 = 1 << 31;
const TYPE_LOCAL: u32 = 1;
const TYPE_RINGBUF: u32 = 2;

pub(crate) const DYNPTR_SIZE: u64 = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Dynptr {
    data: u64,
    size_word: u32,
    offset: u32,
}

impl Dynptr {
    const NULL: Dynptr = Dynptr {
        data: 0,
        size_word: 0,
        offset: 0,
    };

    fn new(data: u64, kind: u32, size: u32) -> Dynptr {
        Dynptr {
            data,
            size_word: size | kind << TYPE_SHIFT,
            offset: 0,
        }
    }

    fn decode(b: &[u8]) -> Dynptr {
        let word = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        Dynptr {
            data: u64::from_le_bytes(b[..8].try_into().expect("8 bytes")),
            size_word: word(8),
            offset: word(12),
        }
    }

    fn encode(self, b: &mut [u8]) {
        b[..8].copy_from_slice(&self.data.to_le_bytes());
        b[8..12].copy_from_slice(&self.size_word.to_le_bytes());
        b[12..16].copy_from_slice(&self.offset.to_le_bytes());
    }

    fn size(self) -> u32 {
        self.size_word & MAX_SIZE
    }

    fn rdonly(self) -> bool {
        self.size_word & RDONLY_BIT != 0
    }

    /// bpf_dynptr_check_off_len: E2BIG unless [off, off+len) lies inside.
    fn in_bounds(self, off: u32, len: u32) -> bool {
        len <= self.size() && off <= self.size() - len
    }

    /// The address of byte `off` of the dynptr's view.
    fn at(self, off: u32) -> u64 {
        self.data + self.offset as u64 + off as u64
    }
}

impl<'a> Run<'a> {
    fn dynptr_at(&self, addr: u64, pc: usize, name: &'static str) -> Result<Dynptr> {
        Ok(Dynptr::decode(self.mem(
            addr,
            DYNPTR_SIZE,
            false,
            pc,
            name,
        )?))
    }

    fn set_dynptr(&self, addr: u64, d: Dynptr, pc: usize, name: &'static str) -> Result<()> {
        d.encode(self.mem(addr, DYNPTR_SIZE, true, pc, name)?);
        Ok(())
    }

    /// Copies `len` bytes from `src` to `dst`, both in run memory; they may
    /// overlap (two dynptrs over one map value), as the kernel's memmove.
    fn move_bytes(
        &self,
        dst: u64,
        src: u64,
        len: u32,
        pc: usize,
        name: &'static str,
    ) -> Result<()> {
        let s = self.mem(src, len as u64, false, pc, name)?.as_ptr();
        let d = self.mem(dst, len as u64, true, pc, name)?.as_mut_ptr();
        // SAFETY: both ranges lie in run memory (checked above).
        unsafe { std::ptr::copy(s, d, len as usize) };
        Ok(())
    }

    /// The dynptr helpers; `None` when `h` is not one of them.
    pub(crate) fn dynptr_helper(
        &mut self,
        h: HelperId,
        regs: &[u64; 16],
        prog: usize,
        pc: usize,
        depth: usize,
    ) -> Option<Result<u64>> {
        let name: &'static str = h.name().unwrap_or("unknown helper");
        let [_, a1, a2, a3, a4, a5, ..] = *regs;
        Some(match h {
            HelperId::DYNPTR_FROM_MEM => self.dynptr_from_mem(a1, a2 as u32, a3, a4, pc, name),
            HelperId::DYNPTR_READ => (|| {
                let src = self.dynptr_at(a3, pc, name)?;
                let (len, off) = (a2 as u32, a4 as u32);
                if src.data == 0 || a5 != 0 {
                    return Ok(EINVAL);
                }
                if !src.in_bounds(off, len) {
                    return Ok(E2BIG);
                }
                self.move_bytes(a1, src.at(off), len, pc, name)?;
                Ok(0)
            })(),
            HelperId::DYNPTR_WRITE => (|| {
                let dst = self.dynptr_at(a1, pc, name)?;
                let (off, len) = (a2 as u32, a4 as u32);
                if dst.data == 0 || dst.rdonly() {
                    return Ok(EINVAL);
                }
                if !dst.in_bounds(off, len) {
                    return Ok(E2BIG);
                }
                // Local and ring buffer dynptrs take no flags.
                if a5 != 0 {
                    return Ok(EINVAL);
                }
                self.move_bytes(dst.at(off), a3, len, pc, name)?;
                Ok(0)
            })(),
            HelperId::DYNPTR_DATA => (|| {
                let d = self.dynptr_at(a1, pc, name)?;
                let (off, len) = (a2 as u32, a3 as u32);
                Ok(if d.data == 0 || !d.in_bounds(off, len) || d.rdonly() {
                    0
                } else {
                    d.at(off)
                })
            })(),
            HelperId::RINGBUF_RESERVE_DYNPTR => {
                self.ringbuf_reserve_dynptr(a1, a2 as u32, a3, a4, pc, name)
            }
            HelperId::RINGBUF_SUBMIT_DYNPTR | HelperId::RINGBUF_DISCARD_DYNPTR => (|| {
                let d = self.dynptr_at(a1, pc, name)?;
                if d.data != 0 {
                    let submit = h == HelperId::RINGBUF_SUBMIT_DYNPTR;
                    self.ringbuf_commit_any(d.data, submit, pc, name)?;
                }
                self.set_dynptr(a1, Dynptr::NULL, pc, name)?;
                Ok(0)
            })(),
            HelperId::USER_RINGBUF_DRAIN => {
                self.user_ringbuf_drain(a1, a2, a3, a4, prog, pc, depth)
            }
            _ => return None,
        })
    }

    fn dynptr_from_mem(
        &mut self,
        data: u64,
        size: u32,
        flags: u64,
        out: u64,
        pc: usize,
        name: &'static str,
    ) -> Result<u64> {
        let (d, ret) = if size > MAX_SIZE {
            (Dynptr::NULL, E2BIG)
        } else if flags != 0 {
            (Dynptr::NULL, EINVAL)
        } else {
            // The verifier proved [data, data+size) is memory the program
            // may use; the run's checks stay on for every later access.
            (Dynptr::new(data, TYPE_LOCAL, size), 0)
        };
        self.set_dynptr(out, d, pc, name)?;
        Ok(ret)
    }

    fn ringbuf_reserve_dynptr(
        &mut self,
        map: u64,
        size: u32,
        flags: u64,
        out: u64,
        pc: usize,
        name: &'static str,
    ) -> Result<u64> {
        let m = self.ringbuf(map, pc, name)?;
        let rb = m
            .as_any()
            .downcast_ref::<RingBuf>()
            .expect("checked ring buffer");
        let (d, ret) = if flags != 0 {
            (Dynptr::NULL, EINVAL)
        } else if size > MAX_SIZE {
            (Dynptr::NULL, E2BIG)
        } else {
            match rb.reserve(size as u64, 0) {
                Some(p) => {
                    let addr = p.as_ptr() as u64;
                    self.add_region(addr, size as usize, true);
                    (Dynptr::new(addr, TYPE_RINGBUF, size), 0)
                }
                // A full ring is EINVAL here (not ENOMEM as for the plain
                // reserve's NULL).
                None => (Dynptr::NULL, EINVAL),
            }
        };
        self.set_dynptr(out, d, pc, name)?;
        Ok(ret)
    }

    /// bpf_user_ringbuf_drain: calls the callback with a local dynptr over
    /// each sample (on a 16-byte slot of our own, as the kernel's is on its
    /// stack) and the caller's context.
    #[allow(clippy::too_many_arguments)]
    fn user_ringbuf_drain(
        &mut self,
        map: u64,
        callback: u64,
        cb_ctx: u64,
        flags: u64,
        prog: usize,
        pc: usize,
        depth: usize,
    ) -> Result<u64> {
        let name = "bpf_user_ringbuf_drain";
        let m = self.map_arg(map, pc, name)?;
        let Some(rb) = m.as_any().downcast_ref::<UserRingBuf>() else {
            return Err(self.fault(pc, name, "map is not a USER_RINGBUF"));
        };
        let Some(cb) = self.callback(prog, callback) else {
            return Err(self.fault(pc, name, "callback is not a function of this program"));
        };
        let mut slot = [0u8; DYNPTR_SIZE as usize];
        let slot_ptr = slot.as_mut_ptr();
        let slot_addr = slot_ptr as u64;
        let mut failure = None;
        let base = self.regions.len();
        let n = rb.drain(flags, &mut |sample, len| {
            let addr = sample.as_ptr() as u64;
            // SAFETY: `slot` outlives the drain and is reached only through
            // this pointer (and the program's reads of slot_addr) meanwhile.
            Dynptr::new(addr, TYPE_LOCAL, len)
                .encode(unsafe { std::slice::from_raw_parts_mut(slot_ptr, DYNPTR_SIZE as usize) });
            self.add_region(slot_addr, DYNPTR_SIZE as usize, false);
            self.add_region(addr, len as usize, true);
            let r = execute(self, prog, cb, [slot_addr, cb_ctx, 0, 0, 0], depth + 1);
            self.regions.truncate(base);
            crate::interp::callback_continues(r, &mut failure)
        });
        match failure {
            Some(e) => Err(e),
            None => Ok(n as u64),
        }
    }
}
