//! Throughput of decode, disassembly and assembly over a 12k-instruction
//! program mixing every instruction kind.

use bpfvet_isa::asm::assemble;
use bpfvet_isa::disasm::{write_log_line, NoSymbols};
use bpfvet_isa::{decode_program, encode_program};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;

const BLOCK: &str = "
    r1 = 1
    w2 = -7
    r1 s/= r3
    r2 = (s16)r3
    r1 = be32 r1
    r5 = 0x123456789abcdef0
    *(u64 *)(r10 -8) = r1
    r0 = *(s32 *)(r10 -12)
    lock *(u64 *)(r10 -8) += r1
    r0 = atomic64_cmpxchg((u64 *)(r10 -8), r0, r1)
    r0 = *(u32 *)skb[r2 + 4]
    if w1 s>= 0xfffffffe goto pc+0
    if r1 != r2 goto pc+0
    call bpf_map_lookup_elem#1
    r2 = map_value[3]+16
";

fn program_text() -> String {
    BLOCK.repeat(800) + "exit\n"
}

fn benches(c: &mut Criterion) {
    let text = program_text();
    let program = assemble(&text).unwrap();
    let insns = encode_program(&program);
    let decoded = decode_program(&insns).unwrap();

    let mut g = c.benchmark_group("isa");
    g.throughput(Throughput::Elements(decoded.len() as u64));
    g.bench_function("decode_program", |b| {
        b.iter(|| decode_program(black_box(&insns)).unwrap())
    });
    let mut out = String::with_capacity(64);
    g.bench_function("write_log_line", |b| {
        b.iter(|| {
            let mut total = 0;
            for l in &decoded {
                out.clear();
                write_log_line(&mut out, l.pc, &l.insn, &NoSymbols).unwrap();
                total += out.len();
            }
            total
        })
    });
    g.bench_function("assemble", |b| {
        b.iter(|| assemble(black_box(&text)).unwrap())
    });
    g.finish();
}

criterion_group!(isa, benches);
criterion_main!(isa);
