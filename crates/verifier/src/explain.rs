//! `bpfvet explain`: where the verifier spends its work and why pruning
//! fails. A [`Collector`] rides along in [`Env`] only when asked for; the
//! verifier's hooks test `Env::explain` once per event, so verification
//! without it does no extra work beyond that test.

use crate::explore::Env;
use crate::log_state::{write_reg, MapInfo};
use crate::prune::{refsafe, regsafe, stacksafe, Exact, IdMap};
use crate::regs::RegType;
use crate::state::{Frame, Slot, SlotType, State, REG_SIZE};
use bpfvet_isa::Insn;
use std::collections::HashMap;

/// The verifier's work at one instruction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InsnCost {
    /// Times a path processed the instruction (their sum is the program's
    /// "processed N insns").
    pub processed: u64,
    /// Checkpoints saved here.
    pub states: u64,
    /// Paths pruned here against a saved checkpoint.
    pub prune_hits: u64,
    /// Comparisons with a saved checkpoint here that did not prune.
    pub prune_misses: u64,
    /// Precision-backtracking walks started here.
    pub precision_walks: u64,
}

impl InsnCost {
    pub fn add(&mut self, o: &InsnCost) {
        self.processed += o.processed;
        self.states += o.states;
        self.prune_hits += o.prune_hits;
        self.prune_misses += o.prune_misses;
        self.precision_walks += o.precision_walks;
    }
}

/// Why a comparison with a checkpoint failed, aggregated by `what`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissReason {
    /// The checkpoint's instruction.
    pub insn: usize,
    /// The first difference, e.g. `R3 scalar range (precise)`, `fp-16`.
    pub what: String,
    pub count: u64,
    /// Whether the old value was precise: without precision an imprecise
    /// scalar would have matched.
    pub precise: bool,
    /// The first occurrence's old and current values, as the log prints them.
    pub old: String,
    pub cur: String,
}

/// Gathers costs during one verification.
pub struct Collector {
    insns: Vec<InsnCost>,
    misses: HashMap<(usize, String), MissReason>,
    idmap: IdMap,
    maps: Vec<MapInfo>,
}

impl Collector {
    pub fn new(obj: &bpfvet_object::Object, insn_cnt: usize) -> Collector {
        Collector {
            insns: vec![InsnCost::default(); insn_cnt],
            misses: HashMap::new(),
            idmap: IdMap::new(false),
            maps: crate::log_state::map_infos(obj),
        }
    }

    #[inline]
    pub(crate) fn processed(&mut self, idx: usize) {
        if let Some(c) = self.insns.get_mut(idx) {
            c.processed += 1;
        }
    }

    #[inline]
    pub(crate) fn state_saved(&mut self, idx: usize) {
        if let Some(c) = self.insns.get_mut(idx) {
            c.states += 1;
        }
    }

    #[inline]
    pub(crate) fn prune_hit(&mut self, idx: usize) {
        if let Some(c) = self.insns.get_mut(idx) {
            c.prune_hits += 1;
        }
    }

    #[inline]
    pub(crate) fn precision_walk(&mut self, idx: usize) {
        if let Some(c) = self.insns.get_mut(idx) {
            c.precision_walks += 1;
        }
    }

    fn miss(&mut self, idx: usize, diff: Difference) {
        if let Some(c) = self.insns.get_mut(idx) {
            c.prune_misses += 1;
        }
        self.misses
            .entry((idx, diff.what.clone()))
            .and_modify(|m| m.count += 1)
            .or_insert(MissReason {
                insn: idx,
                what: diff.what,
                count: 1,
                precise: diff.precise,
                old: diff.old,
                cur: diff.cur,
            });
    }

    /// The collected figures; `cfg` adds what the program's shape says.
    pub(crate) fn finish(self, cfg: Option<&crate::cfg::Cfg>, insns: &[Insn]) -> Profile {
        let n = self.insns.len();
        let loop_of = cfg.map_or_else(|| vec![0; n], |c| c.scc.clone());
        // A loop's entries: its instructions reached from outside it.
        let mut loop_entry = vec![false; n];
        if loop_of.len() == n && insns.len() == n {
            let mut succ = [0usize; 2];
            for i in 0..n {
                let k = crate::cfg::successors(insns, i, &mut succ);
                for &w in &succ[..k] {
                    if loop_of[w] != 0 && loop_of[w] != loop_of[i] {
                        loop_entry[w] = true;
                    }
                }
            }
        }
        let mut misses: Vec<MissReason> = self.misses.into_values().collect();
        misses.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then(a.insn.cmp(&b.insn))
                .then(a.what.cmp(&b.what))
        });
        Profile {
            insns: self.insns,
            prune_point: (0..n)
                .map(|i| cfg.is_some_and(|c| c.is(i, crate::cfg::mark::PRUNE_POINT)))
                .collect(),
            loop_of,
            loop_entry,
            misses,
        }
    }
}

/// What one verification cost, per instruction.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    pub insns: Vec<InsnCost>,
    /// Instructions where paths are compared with checkpoints.
    pub prune_point: Vec<bool>,
    /// Loop (strongly connected component) of each instruction; 0 outside
    /// loops.
    pub loop_of: Vec<u32>,
    /// Instructions of a loop that paths enter it by (its headers).
    pub loop_entry: Vec<bool>,
    /// Prune-miss reasons, most frequent first.
    pub misses: Vec<MissReason>,
}

impl Profile {
    pub fn total(&self) -> InsnCost {
        let mut t = InsnCost::default();
        for c in &self.insns {
            t.add(c);
        }
        t
    }
}

/// A first difference between a checkpoint and the current state.
struct Difference {
    what: String,
    precise: bool,
    old: String,
    cur: String,
}

impl Difference {
    fn plain(what: &str) -> Difference {
        Difference {
            what: what.to_string(),
            precise: false,
            old: String::new(),
            cur: String::new(),
        }
    }
}

impl Env<'_> {
    /// A comparison with checkpoint `node` at `idx` failed; `range_compared`
    /// says an unfinished checkpoint was compared range-within (iterator,
    /// may_goto and callback loops) rather than only checked for a loop.
    pub(crate) fn explain_miss(&mut self, idx: usize, node: u32, range_compared: bool) {
        let old = &self.pool.get(node).state;
        let exact = if old.branches == 0 {
            Some(if self.incomplete_marks(node) {
                Exact::RangeWithin
            } else {
                Exact::Loose
            })
        } else if range_compared {
            Some(Exact::RangeWithin)
        } else {
            None
        };
        let Some(c) = self.explain.as_deref_mut() else {
            return;
        };
        let diff = match exact {
            // A checkpoint on the current path is only checked for an
            // infinite loop: what changed since it is what keeps the loop
            // going.
            None => {
                let mut d = first_difference(
                    old,
                    &self.cur,
                    &mut c.idmap,
                    &self.cfg.live_regs_before,
                    self.id_gen,
                    Exact::Identical,
                    &c.maps,
                );
                d.what = format!("loop iteration in progress, changed: {}", d.what);
                d
            }
            Some(exact) => first_difference(
                old,
                &self.cur,
                &mut c.idmap,
                &self.cfg.live_regs_before,
                self.id_gen,
                exact,
                &c.maps,
            ),
        };
        c.miss(idx, diff);
    }
}

/// The first check of states_equal that fails, in its order.
fn first_difference(
    old: &State,
    cur: &State,
    m: &mut IdMap,
    live_regs: &[u16],
    id_gen: u32,
    exact: Exact,
    maps: &[MapInfo],
) -> Difference {
    if old.frames.len() != cur.frames.len() {
        return Difference::plain("call depth");
    }
    m.reset(id_gen);
    if old.speculative && !cur.speculative {
        return Difference::plain("speculative path");
    }
    if old.active_locks != cur.active_locks
        || old.active_rcu_lock != cur.active_rcu_lock
        || old.active_preempt_locks != cur.active_preempt_locks
        || old.in_sleepable != cur.in_sleepable
    {
        return Difference::plain("lock, RCU or preemption state");
    }
    if !refsafe(old, cur, m) {
        return Difference::plain("acquired references");
    }
    if old.active_locks > 0 && (old.lock.0 != cur.lock.0 || !m.check(old.lock.1, cur.lock.1)) {
        return Difference::plain("lock held");
    }
    let range = match exact {
        Exact::Loose | Exact::Identical => "",
        Exact::RangeWithin => " (loop: range-within)",
    };
    let last = old.frames.len() - 1;
    for (i, (o, c)) in old.frames.iter().zip(&cur.frames).enumerate() {
        if o.callsite != c.callsite || o.callback_depth > c.callback_depth {
            return Difference::plain("call sites");
        }
        let frame = if last > 0 {
            format!("frame{i} ")
        } else {
            String::new()
        };
        let at = if i < last {
            old.frames[i + 1].callsite.max(0) as usize
        } else {
            old.insn_idx
        };
        let live = live_regs.get(at).copied().unwrap_or(u16::MAX);
        for r in 0..11 {
            let (ro, rc) = (&o.regs[r], &c.regs[r]);
            if live & (1 << r) != 0 && !regsafe(ro, rc, m, exact) {
                let kind = if ro.ty != rc.ty {
                    "type".to_string()
                } else if ro.ty == RegType::Scalar {
                    if ro.precise && exact != Exact::Identical {
                        "precise scalar".to_string()
                    } else {
                        "scalar".to_string()
                    }
                } else {
                    ro.type_str().to_string()
                };
                return Difference {
                    what: format!("{frame}R{r} {kind}{range}"),
                    precise: ro.precise && exact != Exact::Identical,
                    old: reg_text(ro, i, maps),
                    cur: reg_text(rc, i, maps),
                };
            }
        }
        if !stacksafe(o, c, m, exact) {
            let spi = first_unsafe_slot(o, c, m, exact);
            let (so, sc) = (&o.stack[spi], c.stack.get(spi));
            // A partial spill is compared byte by byte: precision plays
            // no part.
            let precise = so.is_full_spill() && so.spilled.precise && exact != Exact::Identical;
            return Difference {
                what: format!(
                    "{frame}fp-{} {}{range}",
                    (spi + 1) * REG_SIZE,
                    slot_kind(so, precise)
                ),
                precise,
                old: slot_text(Some(so), i, maps),
                cur: slot_text(sc, i, maps),
            };
        }
    }
    Difference::plain("other")
}

/// The first stack slot of `old` whose comparison fails: the shortest
/// prefix of the old stack that stacksafe rejects, found by bisection.
/// Each trial starts from the id map as it was before the stack.
fn first_unsafe_slot(old: &Frame, cur: &Frame, m: &IdMap, exact: Exact) -> usize {
    let (mut lo, mut hi) = (0usize, old.stack.len());
    // Invariant: the prefix of `lo` slots passes, that of `hi` fails.
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        let mut prefix = old.clone();
        prefix.stack.truncate(mid);
        let mut trial = m.clone();
        if stacksafe(&prefix, cur, &mut trial, exact) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi.saturating_sub(1)
}

/// What the checkpoint's slot held: `spilled precise scalar`,
/// `spilled pkt`, `zero`, `misc`, `dynptr`, `iter`, or `mixed bytes`.
fn slot_kind(s: &Slot, precise: bool) -> String {
    if s.is_spill() {
        let ty = if s.spilled.ty == RegType::Scalar {
            if precise {
                "precise scalar".to_string()
            } else {
                "scalar".to_string()
            }
        } else {
            s.spilled.type_str()
        };
        return if s.is_full_spill() {
            format!("spilled {ty}")
        } else {
            format!("partly spilled {}", s.spilled.type_str())
        };
    }
    let first = s.types[0];
    if s.types.iter().all(|&t| t == first) {
        return match first {
            SlotType::Zero => "zero",
            SlotType::Misc => "misc",
            SlotType::Dynptr => "dynptr",
            SlotType::Iter => "iter",
            SlotType::IrqFlag => "irq flag",
            SlotType::Invalid => "uninitialised",
            SlotType::Spill => "partial spill",
        }
        .to_string();
    }
    "mixed bytes".to_string()
}

fn reg_text(r: &crate::regs::Reg, frame: usize, maps: &[MapInfo]) -> String {
    if r.ty == RegType::NotInit {
        return "not initialised".into();
    }
    let mut s = String::new();
    write_reg(&mut s, r, frame, maps);
    s
}

fn slot_text(s: Option<&Slot>, frame: usize, maps: &[MapInfo]) -> String {
    let Some(s) = s else {
        return "not allocated".into();
    };
    let types: String = s.types.iter().rev().map(|t| t.ch()).collect();
    if s.is_full_spill() {
        reg_text(&s.spilled, frame, maps)
    } else if s.is_spill() {
        format!("{types} {}", reg_text(&s.spilled, frame, maps))
    } else {
        types
    }
}
