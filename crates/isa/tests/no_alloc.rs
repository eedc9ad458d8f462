//! The printer allocates nothing beyond the caller's output String.

use bpfvet_isa::asm::assemble_insns;
use bpfvet_isa::decode_program;
use bpfvet_isa::disasm::{write_log_line, NoSymbols};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; the only
// addition is a relaxed counter increment.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn printing_does_not_allocate() {
    let insns = assemble_insns(
        "r2 = map_value[3]+16
         r0 = atomic64_fetch_xor((u64 *)(r10 -8), r0)
         if w1 s>= 0xfffffffe goto pc+0
         call bpf_map_lookup_elem#1
         call kernel-function#77@2
         r1 = addr_space_cast(r2, 0, 1)
         exit",
    )
    .unwrap();
    let program = decode_program(&insns).unwrap();
    let mut out = String::with_capacity(256);
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for l in &program {
        out.clear();
        write_log_line(&mut out, l.pc, &l.insn, &NoSymbols).unwrap();
    }
    let after = ALLOCATIONS.load(Ordering::Relaxed);
    assert_eq!(after - before, 0);
    assert_eq!(out, "7: (95) exit");
}
