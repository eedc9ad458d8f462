//! The verifier state of one path: frames (registers and stack), references,
//! locks, and the bookkeeping that links it to its checkpoint parent.

use crate::regs::{Reg, RegType};

pub const MAX_CALL_FRAMES: usize = 8;
pub const MAX_BPF_STACK: i32 = 512;
pub const REG_SIZE: usize = 8;

/// What one byte of a stack slot holds (`enum bpf_stack_slot_type`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
#[repr(u8)]
pub enum SlotType {
    #[default]
    Invalid,
    Spill,
    Misc,
    Zero,
    /// Part of an open-coded iterator's state (STACK_ITER); the iterator
    /// itself is described by the slot's `spilled` register (see iter.rs).
    Iter,
    /// Part of a `struct bpf_dynptr` (two whole slots, see `dynptr.rs`).
    Dynptr,
    /// Interrupt flags saved by bpf_local_irq_save (one slot, see irq.rs).
    IrqFlag,
}

impl SlotType {
    pub fn ch(self) -> char {
        match self {
            SlotType::Invalid => '?',
            SlotType::Spill => 'r',
            SlotType::Misc => 'm',
            SlotType::Zero => '0',
            SlotType::Iter => 'i',
            SlotType::Dynptr => 'd',
            SlotType::IrqFlag => 'f',
        }
    }
}

/// An 8-byte stack slot; slot `spi` covers fp-(spi+1)*8 .. fp-spi*8.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    pub spilled: Reg,
    /// Byte i is fp-(spi*8) + i - 8 ... stored as the kernel does: index
    /// `(off + 8*(spi+1)) % 8` from the slot's lowest address.
    pub types: [SlotType; REG_SIZE],
}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            spilled: Reg::not_init(),
            types: [SlotType::Invalid; REG_SIZE],
        }
    }
}

impl Slot {
    pub fn is_spill(&self) -> bool {
        self.types[REG_SIZE - 1] == SlotType::Spill
    }
    pub fn is_iter(&self) -> bool {
        self.types[REG_SIZE - 1] == SlotType::Iter
    }
    /// A write of data into the slot (scrub_special_slot): the spilled
    /// register is forgotten, and a slot that held a spill, dynptr,
    /// iterator or irq flag (read from its last byte, as the kernel does)
    /// turns every initialised byte into data.
    pub fn scrub_special(&mut self) {
        self.spilled = Reg::not_init();
        if matches!(
            self.types[REG_SIZE - 1],
            SlotType::Spill | SlotType::Dynptr | SlotType::Iter | SlotType::IrqFlag
        ) {
            for t in &mut self.types {
                if *t != SlotType::Invalid {
                    *t = SlotType::Misc;
                }
            }
        }
    }
    pub fn is_full_spill(&self) -> bool {
        self.type_word() == u64::from_ne_bytes([SlotType::Spill as u8; REG_SIZE])
    }
    /// Every byte uninitialised or unknown (STACK_INVALID or STACK_MISC):
    /// a slot that holds nothing a comparison must look at.
    pub fn all_invalid_or_misc(&self) -> bool {
        // Invalid is 0 and Misc a single bit, so a byte is one of the two
        // exactly when no other bit is set.
        const _: () =
            assert!(SlotType::Invalid as u8 == 0 && (SlotType::Misc as u8).count_ones() == 1);
        self.type_word() & !u64::from_ne_bytes([SlotType::Misc as u8; REG_SIZE]) == 0
    }
    /// The eight byte types as one word, for whole-slot tests.
    pub fn type_word(&self) -> u64 {
        u64::from_ne_bytes(self.types.map(|t| t as u8))
    }
}

#[derive(Debug)]
pub struct Frame {
    pub regs: [Reg; 11],
    pub stack: Vec<Slot>,
    /// Instruction index of the call that created this frame (-1 for main).
    pub callsite: i32,
    pub subprogno: u32,
    /// For callbacks: the range r0 must be in at exit.
    pub callback_ret: Option<(i64, i64)>,
    pub in_callback_fn: bool,
    pub in_async_callback_fn: bool,
    /// Number of times the callback of a sync-callback helper was entered.
    pub callback_depth: u32,
    /// How many async callbacks deep this frame runs (0 for the program):
    /// a timer callback that arms a timer starts one level deeper.
    pub async_entry_cnt: u32,
}

impl Clone for Frame {
    fn clone(&self) -> Self {
        Frame {
            stack: self.stack.clone(),
            ..*self
        }
    }

    /// Keeps this frame's stack buffer (states are copied at every branch
    /// and checkpoint; reusing buffers spares an allocation each time).
    /// Field by field: rebuilding the frame from parts copied its
    /// registers twice.
    fn clone_from(&mut self, src: &Self) {
        // Exhaustive: a new field must be copied here too.
        let Frame {
            regs,
            stack,
            callsite,
            subprogno,
            callback_ret,
            in_callback_fn,
            in_async_callback_fn,
            callback_depth,
            async_entry_cnt,
        } = src;
        self.stack.clone_from(stack);
        self.regs = *regs;
        self.callsite = *callsite;
        self.subprogno = *subprogno;
        self.callback_ret = *callback_ret;
        self.in_callback_fn = *in_callback_fn;
        self.in_async_callback_fn = *in_async_callback_fn;
        self.callback_depth = *callback_depth;
        self.async_entry_cnt = *async_entry_cnt;
    }
}

impl Frame {
    pub fn new(callsite: i32, frameno: u32, subprogno: u32) -> Frame {
        let mut regs = [Reg::not_init(); 11];
        regs[10] = Reg::pointer(RegType::Stack);
        regs[10].frameno = frameno as u8;
        Frame {
            regs,
            stack: Vec::new(),
            callsite,
            subprogno,
            callback_ret: None,
            in_callback_fn: false,
            in_async_callback_fn: false,
            callback_depth: 0,
            async_entry_cnt: 0,
        }
    }

    pub fn grow_stack(&mut self, bytes: usize) {
        let slots = bytes.div_ceil(REG_SIZE);
        if slots > self.stack.len() {
            self.stack.resize(slots, Slot::default());
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RefKind {
    Ptr,
    /// A saved irq region (REF_TYPE_IRQ): not a leak, but the region must
    /// be closed before the program exits.
    Irq,
    /// A held bpf_spin_lock (REF_TYPE_LOCK).
    Lock,
    /// A held bpf_res_spin_lock (REF_TYPE_RES_LOCK).
    ResLock,
    /// A bpf_res_spin_lock held with interrupts saved
    /// (REF_TYPE_RES_LOCK_IRQ).
    ResLockIrq,
}

impl RefKind {
    /// One of the lock kinds (REF_TYPE_LOCK_MASK).
    pub fn is_lock(self) -> bool {
        matches!(self, RefKind::Lock | RefKind::ResLock | RefKind::ResLockIrq)
    }
}

#[derive(Clone, Copy, Debug)]
pub struct RefState {
    pub kind: RefKind,
    pub id: u32,
    /// Instruction that acquired it.
    pub insn_idx: usize,
    /// For a lock: what the lock lives in (a map index, or
    /// `graph::ALLOC_LOCK` for the program's allocated objects); with `id`
    /// (the register id of the value or object) it names the lock.
    pub lock_ptr: u32,
}

/// One entry of the jump/instruction history used by precision backtracking.
#[derive(Clone, Copy, Debug)]
pub struct HistEntry {
    pub idx: u32,
    pub prev_idx: u32,
    /// Stack access: (frame << 8 | spi) + 1, 0 if none.
    pub stack: u16,
    /// Registers and slots refined together at a jump (linked_regs.rs
    /// packing), 0 if none.
    pub linked: u64,
    /// A conditional jump's operands that were stack pointers
    /// (`JMP_SRC_STACK`, `JMP_DST_STACK`): precision is not asked of them.
    pub jmp_stack: u8,
}

/// `HistEntry::jmp_stack`: the jump's source register was a stack pointer.
pub const JMP_SRC_STACK: u8 = 1;
/// `HistEntry::jmp_stack`: the jump's destination register was a stack pointer.
pub const JMP_DST_STACK: u8 = 2;

#[derive(Debug)]
pub struct State {
    pub frames: Vec<Frame>,
    pub refs: Vec<RefState>,
    /// Locks held (references of a lock kind).
    pub active_locks: u32,
    /// The innermost lock held, (lock_ptr, id) of its reference; (0, 0)
    /// when none.
    pub lock: (u32, u32),
    pub active_rcu_lock: bool,
    pub active_preempt_locks: u32,
    /// Reference id of the innermost irq-disabled region, 0 if none.
    pub active_irq_id: u32,
    pub speculative: bool,
    /// Pool index of the checkpoint this state continues from.
    pub parent: Option<u32>,
    /// Unfinished paths that continue from this state (for checkpoints).
    pub branches: u32,
    pub insn_idx: usize,
    pub first_insn_idx: usize,
    pub last_insn_idx: usize,
    pub jmp_history: Vec<HistEntry>,
    pub may_goto_depth: u32,
    pub dfs_depth: u32,
    pub callback_unroll_depth: u32,
    pub in_sleepable: bool,
}

impl Clone for State {
    fn clone(&self) -> Self {
        State {
            frames: self.frames.clone(),
            refs: self.refs.clone(),
            jmp_history: self.jmp_history.clone(),
            ..*self
        }
    }

    /// Keeps this state's buffers (frames, their stacks, references and
    /// history) and copies `src` into them; see `Pool::copy_state`.
    fn clone_from(&mut self, src: &Self) {
        let mut frames = std::mem::take(&mut self.frames);
        let mut refs = std::mem::take(&mut self.refs);
        let mut jmp_history = std::mem::take(&mut self.jmp_history);
        frames.clone_from(&src.frames);
        refs.clone_from(&src.refs);
        jmp_history.clone_from(&src.jmp_history);
        *self = State {
            frames,
            refs,
            jmp_history,
            ..*src
        };
    }
}

impl State {
    pub fn new() -> State {
        State {
            frames: vec![Frame::new(-1, 0, 0)],
            refs: Vec::new(),
            active_locks: 0,
            lock: (0, 0),
            active_rcu_lock: false,
            active_preempt_locks: 0,
            active_irq_id: 0,
            speculative: false,
            parent: None,
            branches: 1,
            insn_idx: 0,
            first_insn_idx: 0,
            last_insn_idx: 0,
            jmp_history: Vec::new(),
            may_goto_depth: 0,
            dfs_depth: 0,
            callback_unroll_depth: 0,
            in_sleepable: false,
        }
    }

    // The accessors below run for nearly every instruction: inline them.
    #[inline]
    pub fn curframe(&self) -> usize {
        self.frames.len() - 1
    }
    #[inline]
    pub fn frame(&self) -> &Frame {
        self.frames.last().expect("a state has a frame")
    }
    #[inline]
    pub fn frame_mut(&mut self) -> &mut Frame {
        self.frames.last_mut().expect("a state has a frame")
    }
    #[inline]
    pub fn reg(&self, r: u8) -> &Reg {
        &self.frame().regs[r as usize]
    }
    #[inline]
    pub fn reg_mut(&mut self, r: u8) -> &mut Reg {
        &mut self.frame_mut().regs[r as usize]
    }

    /// Approximate bytes held, for the memory statistics and limit.
    pub fn bytes(&self) -> usize {
        std::mem::size_of::<State>()
            + self
                .frames
                .iter()
                .map(|f| std::mem::size_of::<Frame>() + f.stack.len() * std::mem::size_of::<Slot>())
                .sum::<usize>()
            + self.refs.len() * std::mem::size_of::<RefState>()
            + self.jmp_history.len() * std::mem::size_of::<HistEntry>()
    }

    /// Every register in every frame and every spilled register, mutably.
    pub fn for_each_reg_mut(&mut self, mut f: impl FnMut(&mut Reg)) {
        for fr in &mut self.frames {
            for r in &mut fr.regs {
                f(r);
            }
            for s in &mut fr.stack {
                if s.is_spill() {
                    f(&mut s.spilled);
                }
            }
        }
    }
}

impl Default for State {
    fn default() -> Self {
        State::new()
    }
}
