//! The registers and spilled stack slots a conditional jump refines
//! together (same scalar id), as 6.18 collects them (collect_linked_regs):
//! registers live before the jump (or before the call a caller waits at)
//! and spilled scalars, innermost frame first, at most six. The set goes
//! into the jump history so that precision backtracking marks all of them
//! when one must be precise, and only its members learn the jump's facts.

use crate::prune::{ADD_CONST, ADD_CONST32, ADD_CONST64};
use crate::regs::{Reg, RegType};
use crate::scalar::{Link, LinkKind};
use crate::state::State;

impl Reg {
    /// The scalar's link, from the id's ADD_CONST marks and `off`.
    pub fn link(&self) -> Link {
        let kind = match self.id & ADD_CONST {
            0 => LinkKind::Copy,
            ADD_CONST32 => LinkKind::Add32,
            _ => LinkKind::Add64,
        };
        Link {
            id: self.id & !ADD_CONST,
            kind,
            off: if kind == LinkKind::Copy { 0 } else { self.off },
        }
    }

    /// Stores `l` as the id's marks and `off`.
    pub fn set_link(&mut self, l: Link) {
        let mark = match l.kind {
            LinkKind::Copy => 0,
            LinkKind::Add32 => ADD_CONST32,
            LinkKind::Add64 => ADD_CONST64,
        };
        self.id = if l.id == 0 { 0 } else { l.id | mark };
        self.off = if l.id == 0 { 0 } else { l.off };
    }
}

const MAX: usize = 6;

#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Member {
    pub frame: u8,
    /// Register number, or stack slot index when `!is_reg`.
    pub idx: u8,
    pub is_reg: bool,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct LinkedRegs {
    n: usize,
    m: [Member; MAX],
}

impl LinkedRegs {
    pub fn len(&self) -> usize {
        self.n
    }

    pub fn members(&self) -> &[Member] {
        &self.m[..self.n]
    }

    /// Adds the scalars of `st` with base id `id`; a scalar that no longer
    /// fits loses its id in `st` and in `twin` (the other branch, a copy).
    pub fn collect(
        &mut self,
        st: &mut State,
        twin: &mut State,
        id: u32,
        live_before: &[u16],
        idx: usize,
    ) {
        let id = id & !ADD_CONST;
        let cur = st.curframe();
        for f in (0..=cur).rev() {
            let at = if f == cur {
                idx
            } else {
                st.frames[f + 1].callsite as usize
            };
            let live = live_before.get(at).copied().unwrap_or(0xffff);
            for r in 0..10 {
                if live & (1 << r) != 0 {
                    let m = Member {
                        frame: f as u8,
                        idx: r as u8,
                        is_reg: true,
                    };
                    self.add(st, twin, m, id);
                }
            }
            for spi in 0..st.frames[f].stack.len().min(64) {
                if st.frames[f].stack[spi].is_spill() {
                    let m = Member {
                        frame: f as u8,
                        idx: spi as u8,
                        is_reg: false,
                    };
                    self.add(st, twin, m, id);
                }
            }
        }
    }

    fn add(&mut self, st: &mut State, twin: &mut State, m: Member, id: u32) {
        let r = member(st, m);
        if r.ty != RegType::Scalar || r.id & !ADD_CONST != id {
            return;
        }
        if self.n < MAX {
            self.m[self.n] = m;
            self.n += 1;
        } else {
            r.id = 0;
            member(twin, m).id = 0;
        }
    }

    /// Packed for a history entry: the count, then 10 bits per member
    /// (frame 3, register or slot 6, is-register 1).
    pub fn pack(&self) -> u64 {
        let mut v = self.n as u64;
        for (i, m) in self.members().iter().enumerate() {
            let e = (m.frame as u64 & 7) | ((m.idx as u64 & 63) << 3) | ((m.is_reg as u64) << 9);
            v |= e << (3 + 10 * i);
        }
        v
    }

    pub fn unpack(v: u64) -> LinkedRegs {
        let mut l = LinkedRegs {
            n: ((v & 7) as usize).min(MAX),
            ..Default::default()
        };
        for i in 0..l.n {
            let e = v >> (3 + 10 * i);
            l.m[i] = Member {
                frame: (e & 7) as u8,
                idx: ((e >> 3) & 63) as u8,
                is_reg: (e >> 9) & 1 == 1,
            };
        }
        l
    }
}

/// The register a member names in `st`.
pub fn member(st: &mut State, m: Member) -> &mut Reg {
    let f = &mut st.frames[m.frame as usize];
    if m.is_reg {
        &mut f.regs[m.idx as usize]
    } else {
        &mut f.stack[m.idx as usize].spilled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_round_trips_six_members() {
        let mut l = LinkedRegs::default();
        for i in 0..6u8 {
            l.m[i as usize] = Member {
                frame: i % 8,
                idx: 63 - i,
                is_reg: i % 2 == 0,
            };
        }
        l.n = 6;
        let u = LinkedRegs::unpack(l.pack());
        assert_eq!(u.members(), l.members());
        assert_eq!(LinkedRegs::unpack(0).len(), 0);
    }
}
