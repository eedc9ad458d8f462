//! Soundness of scalar tracking: for random abstract scalars and random
//! concrete values they contain, every operation's concrete result is
//! contained in the abstract result, refinement never drops a pair that
//! takes the edge, and branch prediction is never wrong.

use bpfvet_verifier::scalar::{
    is_branch_taken, set_min_max, set_min_max_same, AluOp, EndianOp, JmpOp, Scalar,
};
use bpfvet_verifier::tnum::Tnum;
use proptest::prelude::*;

/// Values near the edges the bounds logic cares about.
fn interesting_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..=300,
        any::<u64>(),
        (0u64..=64).prop_map(|d| (1u64 << 31).wrapping_sub(32).wrapping_add(d)),
        (0u64..=64).prop_map(|d| (1u64 << 32).wrapping_sub(32).wrapping_add(d)),
        (0u64..=64).prop_map(|d| (1u64 << 63).wrapping_sub(32).wrapping_add(d)),
        (0u64..=64).prop_map(|d| 0u64.wrapping_sub(32).wrapping_add(d)),
        (0u64..=64).prop_map(|d| 0xffff_ffff_8000_0000u64.wrapping_sub(32).wrapping_add(d)),
        any::<u32>().prop_map(u64::from),
        any::<i32>().prop_map(|v| v as i64 as u64),
    ]
}

/// A random non-negative distance: 0, small, or any number of bits.
fn distance() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        0u64..16,
        (0u32..=64, any::<u64>()).prop_map(|(bits, r)| if bits == 64 {
            r
        } else {
            r & ((1u64 << bits) - 1)
        }),
        Just(u64::MAX),
    ]
}

/// A mask of unknown bits: none, a low field, random bits, or all.
fn unknown_bits() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        (0u32..=64).prop_map(|b| if b == 64 { u64::MAX } else { (1u64 << b) - 1 }),
        any::<u64>(),
        (0u32..=64, any::<u64>()).prop_map(|(b, r)| r & if b == 64 {
            u64::MAX
        } else {
            (1u64 << b) - 1
        }),
        Just(u64::MAX),
    ]
}

/// An abstract scalar built around `x`, so `x` is a member, then synced.
fn build(x: u64, m: u64, d: [u64; 8], sync: bool) -> Scalar {
    let x32 = x as u32;
    let s = Scalar {
        var_off: Tnum::new(x & !m, m),
        umin: x.saturating_sub(d[0]),
        umax: x.saturating_add(d[1]),
        smin: (x as i64).saturating_sub(d[2].min(i64::MAX as u64) as i64),
        smax: (x as i64).saturating_add(d[3].min(i64::MAX as u64) as i64),
        u32_min: x32.saturating_sub(d[4] as u32),
        u32_max: x32.saturating_add(d[5] as u32),
        s32_min: (x32 as i32).saturating_sub((d[6] as u32).min(i32::MAX as u32) as i32),
        s32_max: (x32 as i32).saturating_add((d[7] as u32).min(i32::MAX as u32) as i32),
    };
    let mut s = s;
    if sync {
        s.sync();
    }
    s
}

fn member() -> impl Strategy<Value = (Scalar, u64)> {
    (
        interesting_u64(),
        unknown_bits(),
        proptest::array::uniform8(distance()),
    )
        .prop_map(|(x, m, d)| (build(x, m, d, true), x))
}

/// Constants are common sources (every BPF_K operand is one).
fn member_or_const() -> impl Strategy<Value = (Scalar, u64)> {
    prop_oneof![
        3 => member(),
        1 => interesting_u64().prop_map(|x| (Scalar::constant(x), x)),
        1 => (0u64..70).prop_map(|x| (Scalar::constant(x), x)),
    ]
}

const ALU_OPS: [AluOp; 13] = [
    AluOp::Add,
    AluOp::Sub,
    AluOp::Mul,
    AluOp::Div,
    AluOp::Sdiv,
    AluOp::Mod,
    AluOp::Smod,
    AluOp::Or,
    AluOp::And,
    AluOp::Xor,
    AluOp::Lsh,
    AluOp::Rsh,
    AluOp::Arsh,
];

const JMP_OPS: [JmpOp; 12] = [
    JmpOp::Eq,
    JmpOp::Ne,
    JmpOp::Gt,
    JmpOp::Ge,
    JmpOp::Lt,
    JmpOp::Le,
    JmpOp::Sgt,
    JmpOp::Sge,
    JmpOp::Slt,
    JmpOp::Sle,
    JmpOp::Set,
    JmpOp::NotSet,
];

/// The BPF semantics of a binary ALU operation (as the interpreter runs
/// it: shift amounts masked, x / 0 == 0, x % 0 == x).
fn eval_alu(op: AluOp, x: u64, y: u64, alu32: bool) -> u64 {
    if alu32 {
        let (a, b) = (x as u32, y as u32);
        let r: u32 = match op {
            AluOp::Add => a.wrapping_add(b),
            AluOp::Sub => a.wrapping_sub(b),
            AluOp::Mul => a.wrapping_mul(b),
            AluOp::Div => a.checked_div(b).unwrap_or(0),
            AluOp::Mod => a.checked_rem(b).unwrap_or(a),
            AluOp::Sdiv => {
                if b == 0 {
                    0
                } else {
                    (a as i32).wrapping_div(b as i32) as u32
                }
            }
            AluOp::Smod => {
                if b == 0 {
                    a
                } else {
                    (a as i32).wrapping_rem(b as i32) as u32
                }
            }
            AluOp::Or => a | b,
            AluOp::And => a & b,
            AluOp::Xor => a ^ b,
            AluOp::Lsh => a << (b & 31),
            AluOp::Rsh => a >> (b & 31),
            AluOp::Arsh => ((a as i32) >> (b & 31)) as u32,
        };
        u64::from(r)
    } else {
        match op {
            AluOp::Add => x.wrapping_add(y),
            AluOp::Sub => x.wrapping_sub(y),
            AluOp::Mul => x.wrapping_mul(y),
            AluOp::Div => x.checked_div(y).unwrap_or(0),
            AluOp::Mod => x.checked_rem(y).unwrap_or(x),
            AluOp::Sdiv => {
                if y == 0 {
                    0
                } else {
                    (x as i64).wrapping_div(y as i64) as u64
                }
            }
            AluOp::Smod => {
                if y == 0 {
                    x
                } else {
                    (x as i64).wrapping_rem(y as i64) as u64
                }
            }
            AluOp::Or => x | y,
            AluOp::And => x & y,
            AluOp::Xor => x ^ y,
            AluOp::Lsh => x << (y & 63),
            AluOp::Rsh => x >> (y & 63),
            AluOp::Arsh => ((x as i64) >> (y & 63)) as u64,
        }
    }
}

fn sext(v: u64, bytes: u8) -> u64 {
    match bytes {
        1 => v as i8 as i64 as u64,
        2 => v as i16 as i64 as u64,
        _ => v as i32 as i64 as u64,
    }
}

/// 2000 cases per property unless PROPTEST_CASES says otherwise.
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn sync_keeps_members((s, x) in member()) {
        prop_assert!(s.contains(x), "{s:?} lost {x:#x}");
        prop_assert!(s.check_invariants().is_ok(), "{s:?}");
    }

    #[test]
    fn unsynced_inputs_sync_soundly(x in interesting_u64(), m in unknown_bits(),
                                    d in proptest::array::uniform8(distance())) {
        let mut s = build(x, m, d, false);
        prop_assert!(s.contains(x));
        s.sync();
        prop_assert!(s.contains(x), "{s:?} lost {x:#x}");
    }

    #[test]
    fn alu_is_sound((dst, x) in member(), (src, y) in member_or_const(),
                    op in proptest::sample::select(&ALU_OPS[..]), alu32 in any::<bool>()) {
        let want = eval_alu(op, x, y, alu32);
        let mut d = dst;
        match d.alu(op, &src, alu32) {
            Some(mut other) if other.contains(x) => {
                prop_assert!(d.contains(eval_alu(op, u64::MAX, y, alu32)) || !dst.contains(u64::MAX));
                prop_assert!(other.alu(op, &src, alu32).is_none());
                prop_assert!(other.contains(want), "fork {op:?} {other:?} misses {want:#x}");
            }
            _ => prop_assert!(d.contains(want),
                "{op:?} alu32={alu32}\n dst={dst:?} x={x:#x}\n src={src:?} y={y:#x}\n got={d:?}\n want={want:#x}"),
        }
    }

    #[test]
    fn alu_const_operands_fold_exactly(x in interesting_u64(), y in 0u64..64,
                                       op in proptest::sample::select(&[AluOp::Add, AluOp::Sub, AluOp::Mul,
                                           AluOp::And, AluOp::Or, AluOp::Xor, AluOp::Lsh, AluOp::Rsh, AluOp::Arsh][..]),
                                       alu32 in any::<bool>()) {
        // Shift immediates at or above the width are rejected by the kernel.
        let y = if alu32 { y % 32 } else { y };
        let mut d = Scalar::constant(x);
        d.alu(op, &Scalar::constant(y), alu32);
        prop_assert_eq!(d, Scalar::constant(eval_alu(op, x, y, alu32)));
    }

    #[test]
    fn neg_is_sound((dst, x) in member(), alu32 in any::<bool>()) {
        let mut d = dst;
        d.neg(alu32);
        let want = if alu32 { u64::from((x as u32).wrapping_neg()) } else { x.wrapping_neg() };
        prop_assert!(d.contains(want), "{dst:?} -> {d:?} misses {want:#x}");
    }

    #[test]
    fn byte_swap_is_sound((dst, x) in member(),
                          how in proptest::sample::select(&[EndianOp::ToLe, EndianOp::ToBe, EndianOp::Bswap][..]),
                          bits in proptest::sample::select(&[16u32, 32, 64][..])) {
        let mut d = dst;
        d.byte_swap(how, bits);
        let want = match (how, bits) {
            (EndianOp::ToLe, 16) => x & 0xffff,
            (EndianOp::ToLe, 32) => x & 0xffff_ffff,
            (EndianOp::ToLe, _) => x,
            (_, 16) => u64::from((x as u16).swap_bytes()),
            (_, 32) => u64::from((x as u32).swap_bytes()),
            _ => x.swap_bytes(),
        };
        prop_assert!(d.contains(want), "{how:?}{bits} {dst:?} -> {d:?} misses {want:#x}");
    }

    #[test]
    fn narrowing_and_sign_extension_are_sound((src, x) in member(),
                                              size in proptest::sample::select(&[1u8, 2, 4][..])) {
        let mut t = src;
        t.coerce_to_size(size);
        let mask = if size == 4 { 0xffff_ffff } else { (1u64 << (size * 8)) - 1 };
        prop_assert!(t.contains(x & mask), "trunc{size} {src:?} -> {t:?}");

        let mut s = src;
        s.coerce_to_size_sx(size);
        prop_assert!(s.contains(sext(x, size)), "sx{size} {src:?} -> {s:?}");
        prop_assert_eq!(Scalar::movsx64(&src, size * 8), s);

        if size < 4 {
            let w = Scalar::movsx32(&src, size * 8);
            let want = u64::from(sext(x, size) as u32);
            prop_assert!(w.contains(want), "movsx32/{size} {src:?} -> {w:?} misses {want:#x}");
        }
        let m = Scalar::mov32(&src);
        prop_assert!(m.contains(x & 0xffff_ffff));
        if Scalar::movsx_keeps_value(&src, size * 8) {
            prop_assert_eq!(sext(x, size), x);
        }
    }

    #[test]
    fn branch_prediction_and_refinement_are_sound((a, x) in member(), (b, y) in member_or_const(),
                                                 op in proptest::sample::select(&JMP_OPS[..]),
                                                 jmp32 in any::<bool>()) {
        let taken = op.eval(x, y, jmp32);
        if let Some(p) = is_branch_taken(&a, &b, op, jmp32) {
            prop_assert_eq!(p, taken, "{:?} a={:?} x={:#x} b={:?} y={:#x}", op, a, x, b, y);
        }
        let r = set_min_max(&a, &b, op, jmp32);
        let edge = if taken { r.taken } else { r.fall };
        prop_assert!(edge[0].contains(x) && edge[1].contains(y),
            "{op:?} jmp32={jmp32} taken={taken}\n a={a:?} x={x:#x}\n b={b:?} y={y:#x}\n edge={edge:?}");
        // Sanitizing only forgets bounds: still sound.
        let mut r2 = r;
        r2.sanitize();
        let edge = if taken { r2.taken } else { r2.fall };
        prop_assert!(edge[0].contains(x) && edge[1].contains(y));
    }

    #[test]
    fn same_register_comparisons_are_sound((a, x) in member(),
                                           op in proptest::sample::select(&JMP_OPS[..]),
                                           jmp32 in any::<bool>()) {
        let taken = op.eval(x, x, jmp32);
        if let Some(p) = is_branch_taken(&a, &a, op, jmp32) {
            prop_assert_eq!(p, taken);
        }
        let mut r = set_min_max_same(&a, op, jmp32);
        let edge = if taken { r.taken } else { r.fall };
        prop_assert!(edge[0].contains(x) && edge[1] == edge[0], "{op:?} {a:?} x={x:#x} -> {edge:?}");
        r.sanitize();
        let edge = if taken { r.taken } else { r.fall };
        prop_assert!(edge[0].contains(x) && edge[1] == edge[0]);
    }

    #[test]
    fn pointer_offset_arithmetic_is_sound((p, x) in member(), (o, y) in member_or_const()) {
        let mut a = p.ptr_add_var(&o);
        a.sync();
        prop_assert!(a.contains(x.wrapping_add(y)), "{p:?} + {o:?} -> {a:?}");
        let mut s = p.ptr_sub_var(&o);
        s.sync();
        prop_assert!(s.contains(x.wrapping_sub(y)), "{p:?} - {o:?} -> {s:?}");
        let mut k = p.ptr_keep_var();
        k.sync();
        prop_assert!(k.contains(x));
    }

    #[test]
    fn linked_registers_follow_the_known_one((k, x) in member(), delta in any::<i32>()) {
        let r = Scalar::linked_add(&k, i64::from(delta), false);
        prop_assert!(r.contains(x.wrapping_add(delta as i64 as u64)), "{k:?} + {delta} -> {r:?}");
        let r = Scalar::linked_add(&k, i64::from(delta), true);
        let want = u64::from((x as u32).wrapping_add(delta as u32));
        prop_assert!(r.contains(want), "w: {k:?} + {delta} -> {r:?}");
    }

    /// Inconsistent inputs (as a buggy caller or a dead branch may produce)
    /// must not panic, even with overflow checks on.
    #[test]
    fn arbitrary_states_never_panic(v in any::<u64>(), m in any::<u64>(), b in proptest::array::uniform4(any::<u64>()),
                                    c in proptest::array::uniform4(any::<u32>()), imm in any::<u64>(),
                                    op in proptest::sample::select(&ALU_OPS[..]),
                                    jop in proptest::sample::select(&JMP_OPS[..]), flag in any::<bool>()) {
        let s = Scalar {
            var_off: Tnum::new(v & !m, m),
            smin: b[0] as i64,
            smax: b[1] as i64,
            umin: b[2],
            umax: b[3],
            s32_min: c[0] as i32,
            s32_max: c[1] as i32,
            u32_min: c[2],
            u32_max: c[3],
        };
        let k = Scalar::constant(imm);
        for src in [&s, &k] {
            let mut d = s;
            let _ = d.alu(op, src, flag);
            let mut d = k;
            let _ = d.alu(op, &s, flag);
            let _ = is_branch_taken(&s, src, jop, flag);
            let mut r = set_min_max(&s, src, jop, flag);
            let _ = r.sanitize();
            let _ = s.ptr_add_var(src);
            let _ = s.ptr_sub_var(src);
        }
        let mut r = set_min_max_same(&s, jop, flag);
        let _ = r.sanitize();
        let mut d = s;
        d.neg(flag);
        let mut d = s;
        d.byte_swap(if flag { EndianOp::Bswap } else { EndianOp::ToBe }, 16 << (imm % 3));
        for size in [1u8, 2, 4] {
            let mut d = s;
            d.coerce_to_size(size);
            let mut d = s;
            d.coerce_to_size_sx(size);
            let _ = Scalar::movsx32(&s, size * 8);
        }
        let _ = Scalar::linked_add(&s, imm as i64, flag);
        let _ = s.log_string(Default::default());
        let mut d = s;
        d.sync();
        let _ = d.sanitize();
        let _ = s.is_superset_of(&k);
        let _ = s.var_off.step(imm);
    }

    #[test]
    fn pruning_superset_covers_members((old, _x) in member(), (cur, y) in member()) {
        if old.is_superset_of(&cur) {
            prop_assert!(old.contains(y));
            prop_assert!(cur.is_subset_of(&old));
            prop_assert!(old.range_within(&cur));
        }
        prop_assert!(cur.is_superset_of(&cur));
    }

    #[test]
    fn tnum_ops_are_sound(x in interesting_u64(), mx in unknown_bits(),
                          y in interesting_u64(), my in unknown_bits(), sh in 0u8..64) {
        let a = Tnum::new(x & !mx, mx);
        let b = Tnum::new(y & !my, my);
        prop_assert!((a + b).contains_value(x.wrapping_add(y)));
        prop_assert!((a - b).contains_value(x.wrapping_sub(y)));
        prop_assert!((a * b).contains_value(x.wrapping_mul(y)));
        prop_assert!((-a).contains_value(x.wrapping_neg()));
        prop_assert!(a.and(b).contains_value(x & y));
        prop_assert!(a.or(b).contains_value(x | y));
        prop_assert!(a.xor(b).contains_value(x ^ y));
        prop_assert!(a.lshift(sh).contains_value(x << sh));
        prop_assert!(a.rshift(sh).contains_value(x >> sh));
        prop_assert!(a.arshift(sh, 64).contains_value(((x as i64) >> sh) as u64));
        prop_assert!(a.arshift(sh % 32, 32).contains_value(u64::from(((x as u32 as i32) >> (sh % 32)) as u32)));
        let u = a.union(b);
        prop_assert!(u.contains_value(x) && u.contains_value(y) && u.contains(a) && u.contains(b));
        prop_assert!(a.overlaps(b) || !a.contains_value(y));
        let both = a.intersect(Tnum::new(x & !my, my));
        prop_assert!(both.contains_value(x));
        let lo = x.min(y);
        let hi = x.max(y);
        prop_assert!(Tnum::range(lo, hi).contains_value(lo) && Tnum::range(lo, hi).contains_value(hi));
        prop_assert!(a.bswap64().contains_value(x.swap_bytes()));
        // step: the least member strictly above z.
        let z = y;
        let tmax = a.value | a.mask;
        let s = a.step(z);
        if a.value <= z && z < tmax {
            prop_assert!(a.contains_value(s) && s > z);
            // Nothing of a lies strictly between z and s: check the member
            // just below s (if any member precedes it).
            if s > 0 {
                let below = s - 1;
                prop_assert!(!(a.contains_value(below) && below > z));
            }
        }
    }
}
