//! Known-precise results of the Linux 6.18 verifier, each expected string
//! taken from the host kernel's log (log level 2) for the same operation.

use bpfvet_verifier::scalar::{
    is_branch_taken, set_min_max, set_min_max_same, AluOp, EndianOp, JmpOp, Scalar, ScalarLogInfo,
};
use bpfvet_verifier::tnum::Tnum;

fn log(s: &Scalar) -> String {
    s.log_string(ScalarLogInfo::default())
}

fn k(v: i64) -> Scalar {
    Scalar::constant(v as u64)
}

/// `r = unknown; r &= mask` and so on, as a starting point.
fn masked(mask: i64) -> Scalar {
    let mut s = Scalar::unknown();
    s.alu(AluOp::And, &k(mask), false);
    s
}

#[test]
fn and_with_mask_gives_byte_range() {
    // 2: (57) r6 &= 255 ; R6=scalar(smin=smin32=0,smax=umax=smax32=umax32=255,var_off=(0x0; 0xff))
    assert_eq!(
        log(&masked(0xff)),
        "scalar(smin=smin32=0,smax=umax=smax32=umax32=255,var_off=(0x0; 0xff))"
    );
}

#[test]
fn byte_then_below_256_is_always_taken() {
    let x = masked(0xff);
    assert_eq!(is_branch_taken(&x, &k(256), JmpOp::Lt, false), Some(true));
    assert_eq!(is_branch_taken(&x, &k(255), JmpOp::Gt, false), Some(false));
    assert_eq!(is_branch_taken(&x, &k(100), JmpOp::Gt, false), None);
    assert_eq!(
        is_branch_taken(&x, &k(0x100), JmpOp::Set, false),
        Some(false)
    );
}

#[test]
fn multiplication() {
    // 4: (27) r7 *= 3 ; R7=scalar(smin=smin32=0,smax=umax=smax32=umax32=765,var_off=(0x0; 0x3ff))
    let mut x = masked(0xff);
    x.alu(AluOp::Mul, &k(3), false);
    assert_eq!(
        log(&x),
        "scalar(smin=smin32=0,smax=umax=smax32=umax32=765,var_off=(0x0; 0x3ff))"
    );
    // (r6 & 129 | 16) *= (r7 & 67 | 16): the 6.18 tnum multiplication keeps
    // bit 12 known.
    let mut a = masked(129);
    a.alu(AluOp::Or, &k(16), false);
    let mut b = masked(67);
    b.alu(AluOp::Or, &k(16), false);
    a.alu(AluOp::Mul, &b, false);
    assert_eq!(
        log(&a),
        "scalar(smin=umin=smin32=umin32=256,smax=umax=smax32=umax32=12035,var_off=(0x0; 0x2ff3))"
    );
}

#[test]
fn division_and_modulo_are_not_tracked() {
    // 6: (37) r8 /= 3 ; R8=scalar()    10: (97) r1 %= 10 ; R1=scalar()
    for op in [AluOp::Div, AluOp::Mod, AluOp::Sdiv, AluOp::Smod] {
        let mut x = masked(0xff);
        x.alu(op, &k(3), false);
        assert_eq!(log(&x), "scalar()");
    }
}

#[test]
fn negation() {
    // 8: (87) r9 = -r9 ; R9=scalar(smin=smin32=-255,smax=smax32=0)
    let mut x = masked(0xff);
    x.neg(false);
    assert_eq!(log(&x), "scalar(smin=smin32=-255,smax=smax32=0)");
    // 13: (84) w5 = -w5 on (0x10000000; 0x7f00)
    let mut y = masked(0x7f00);
    y.alu(AluOp::Or, &k(0x1000_0000), false);
    y.neg(true);
    assert_eq!(
        log(&y),
        "scalar(smin=umin=smin32=umin32=0xefff8100,smax=umax=smax32=umax32=0xf0000000,var_off=(0xe0000000; 0x1fffff00))"
    );
}

#[test]
fn byte_swaps() {
    // 12: (d7) r2 = bswap16 r2 ; R2=scalar(smin=smin32=0,smax=umax=smax32=umax32=0xff00,var_off=(0x0; 0xff00))
    let mut x = masked(0xff);
    assert!(x.byte_swap(EndianOp::Bswap, 16));
    assert_eq!(
        log(&x),
        "scalar(smin=smin32=0,smax=umax=smax32=umax32=0xff00,var_off=(0x0; 0xff00))"
    );
    let mut base = masked(0x7f00);
    base.alu(AluOp::Or, &k(0x1000_0000), false);
    // 5: (dc) r1 = be64 r1
    let mut be = base;
    be.byte_swap(EndianOp::ToBe, 64);
    assert_eq!(
        log(&be),
        "scalar(smin=umin=0x1000000000,smax=umax=0x7f001000000000,smin32=0,smax32=umax32=0,var_off=(0x1000000000; 0x7f000000000000))"
    );
    // 7: (d4) r2 = le64 r2 leaves the value (and its id) alone.
    let mut le = base;
    assert!(!le.byte_swap(EndianOp::ToLe, 64));
    assert_eq!(le, base);
    // 11: (d4) r4 = le16 r4 truncates.
    let mut le16 = base;
    assert!(le16.byte_swap(EndianOp::ToLe, 16));
    assert_eq!(
        log(&le16),
        "scalar(smin=smin32=0,smax=umax=smax32=umax32=32512,var_off=(0x0; 0x7f00))"
    );
    // 18: (d7) r8 = bswap32 r8
    let mut b32 = base;
    b32.byte_swap(EndianOp::Bswap, 32);
    assert_eq!(
        log(&b32),
        "scalar(smin=umin=smin32=umin32=16,smax=umax=smax32=umax32=0x7f0010,var_off=(0x10; 0x7f0000))"
    );
}

#[test]
fn subtraction_keeps_range_when_nothing_wraps() {
    // 15: (17) r7 -= 28672 on (0x10000000; 0x7f00)
    let mut x = masked(0x7f00);
    x.alu(AluOp::Or, &k(0x1000_0000), false);
    x.alu(AluOp::Sub, &k(28672), false);
    let info = ScalarLogInfo {
        id: 2,
        linked_off: Some(-28672),
        precise: false,
    };
    assert_eq!(
        x.log_string(info),
        "scalar(id=2-28672,smin=umin=smin32=umin32=0xfff9000,smax=umax=smax32=umax32=0x10000f00,var_off=(0x0; 0x1fffff00))"
    );
    // 16: (27) r7 *= 3
    x.alu(AluOp::Mul, &k(3), false);
    assert_eq!(
        log(&x),
        "scalar(smin=umin=smin32=umin32=0x2ffeb000,smax=umax=smax32=umax32=0x30002d00,var_off=(0x20000000; 0x1fffff00))"
    );
}

#[test]
fn branch_refinement_down_to_a_constant() {
    // r6 &= 0xf0; if r6 == 0 goto ...; if r6 > 0xf goto ...
    let x = masked(0xf0);
    let r = set_min_max(&x, &k(0), JmpOp::Eq, false);
    assert_eq!(
        log(&r.fall[0]),
        "scalar(smin=umin=smin32=umin32=1,smax=umax=smax32=umax32=240,var_off=(0x0; 0xf0))"
    );
    let x = r.fall[0];
    assert_eq!(is_branch_taken(&x, &k(15), JmpOp::Gt, false), None);
    let r = set_min_max(&x, &k(15), JmpOp::Gt, false);
    // The kernel prints R6=0 on the fall-through: no member of the tnum
    // lies in [1, 15] and the tnum collapses to 0.
    assert_eq!(log(&r.fall[0]), "0");
    assert_eq!(
        log(&r.taken[0]),
        "scalar(smin=umin=smin32=umin32=16,smax=umax=smax32=umax32=240,var_off=(0x0; 0xf0))"
    );
}

#[test]
fn comparing_a_register_with_itself_refines_both_aliases() {
    // 7: (2d) if r6 > r6 goto pc+0, taken edge:
    // R6=scalar(smin=umin=smin32=umin32=17,smax=umax=smax32=umax32=239,var_off=(0x0; 0xf0))
    let mut x = masked(0xf0);
    x.alu(AluOp::Or, &k(0), false);
    let x = set_min_max(&x, &k(15), JmpOp::Gt, false).taken[0];
    assert_eq!(is_branch_taken(&x, &x, JmpOp::Gt, false), None);
    let r = set_min_max_same(&x, JmpOp::Gt, false);
    assert_eq!(
        log(&r.taken[0]),
        "scalar(smin=umin=smin32=umin32=17,smax=umax=smax32=umax32=239,var_off=(0x0; 0xf0))"
    );
    assert_eq!(r.fall[0], x);
}

#[test]
fn printing_rules() {
    assert_eq!(log(&Scalar::constant(1)), "1");
    assert_eq!(log(&k(-1)), "-1");
    assert_eq!(log(&k(i64::from(i32::MIN))), "0xffffffff80000000");
    assert_eq!(log(&Scalar::unknown()), "scalar()");
    let p = ScalarLogInfo {
        precise: true,
        ..Default::default()
    };
    assert_eq!(Scalar::constant(0).log_string(p), "P0");
    assert_eq!(
        Scalar::unknown().log_string(ScalarLogInfo {
            id: 1,
            ..Default::default()
        }),
        "scalar(id=1)"
    );
    // A u32 helper result: 3: (85) call bpf_get_prandom_u32 -> R0=scalar(smin=0,smax=umax=0xffffffff,var_off=(0x0; 0xffffffff))
    assert_eq!(
        log(&Scalar::unknown_u32()),
        "scalar(smin=0,smax=umax=0xffffffff,var_off=(0x0; 0xffffffff))"
    );
    // (s16) sign extension: 8: (bf) r7 = (s16)r7 ; R7=scalar(smin=smin32=-32768,smax=smax32=32767)
    assert_eq!(
        log(&Scalar::movsx64(&Scalar::unknown(), 16)),
        "scalar(smin=smin32=-32768,smax=smax32=32767)"
    );
}

#[test]
fn pruning_helpers() {
    let wide = masked(0xff);
    let narrow = masked(0x0f);
    assert!(wide.range_within(&narrow));
    assert!(wide.is_superset_of(&narrow));
    assert!(narrow.is_subset_of(&wide));
    assert!(!narrow.is_superset_of(&wide));
    // Same ranges but a tnum that is not contained: not a subset.
    let mut odd = Scalar::from_urange(0, 255);
    odd.var_off = Tnum::new(1, 0xfe);
    odd.sync();
    assert!(!wide.var_off.contains(Tnum::new(0, 0x1ff)));
    assert!(wide.is_superset_of(&odd));
    assert!(!odd.is_superset_of(&wide));
}

#[test]
fn invariant_violation_text() {
    // A register whose u64 range is empty (kernel text for false_reg1).
    let mut s = Scalar::constant(0xffff_ffe6);
    s.var_off = Tnum::new(0xffff_ffe6, 1);
    s.umax = 0xffff_ffe7;
    s.smin = 0xffff_ffe7;
    s.smax = 0xffff_ffe6;
    s.u32_max = 0xffff_ffe7;
    s.s32_max = 0xffff_ffe7_u32 as i32;
    let v = s.sanitize().unwrap_err();
    assert_eq!(
        v.message("false_reg1"),
        "verifier bug: REG INVARIANTS VIOLATION (false_reg1): range bounds violation \
         u64=[0xffffffe6, 0xffffffe7] s64=[0xffffffe7, 0xffffffe6] u32=[0xffffffe6, 0xffffffe7] \
         s32=[0xffffffe6, 0xffffffe7] var_off=(0xffffffe6, 0x1)"
    );
    // Bounds forgotten, tnum kept.
    assert_eq!(s.umin, 0);
    assert_eq!(s.smax, i64::MAX);
    assert_eq!(s.var_off, Tnum::new(0xffff_ffe6, 1));
}

#[test]
fn pointer_offsets() {
    // ptr (var_off 0) + (x & 0xff): a variable offset [0, 255].
    let p = Scalar::constant(0);
    let mut v = p.ptr_add_var(&masked(0xff));
    v.sync();
    assert_eq!(v, masked(0xff));
    let mut s = Scalar::from_urange(16, 32).ptr_sub_var(&masked(0xf));
    s.sync();
    assert_eq!((s.umin, s.umax), (1, 32));
}

#[test]
fn minus_one_or_zero_forks_on_and_or() {
    // 2: (c7) r6 s>>= 63 ; R6=scalar(smin=smin32=-1,smax=smax32=0)
    // 3: (57) r6 &= 5    ; R6=5      ... from 3 to 3: R6=0 -> 3: (57) r6 &= 5 ; R6=0
    let mut x = Scalar::unknown();
    x.alu(AluOp::Arsh, &k(63), false);
    assert_eq!(log(&x), "scalar(smin=smin32=-1,smax=smax32=0)");
    let mut other = x.alu(AluOp::And, &k(5), false).expect("fork");
    assert_eq!(log(&x), "5");
    assert_eq!(log(&other), "0");
    assert_eq!(other.alu(AluOp::And, &k(5), false), None);
    assert_eq!(log(&other), "0");

    // 7: (c4) w8 s>>= 31 ; R8=scalar(smin=0,smax=umax=0xffffffff,smin32=-1,smax32=0,var_off=(0x0; 0xffffffff))
    // 8: (44) w8 |= 16   ; R8=0xffffffff ... from 8 to 8: R8=0 -> R8=16
    let mut w = Scalar::unknown();
    w.alu(AluOp::Arsh, &k(31), true);
    assert_eq!(
        log(&w),
        "scalar(smin=0,smax=umax=0xffffffff,smin32=-1,smax32=0,var_off=(0x0; 0xffffffff))"
    );
    let mut other = w.alu(AluOp::Or, &k(16), true).expect("fork");
    assert_eq!(log(&w), "0xffffffff");
    assert_eq!(log(&other), "0");
    other.alu(AluOp::Or, &k(16), true);
    assert_eq!(log(&other), "16");
}

#[test]
fn linked_registers_after_a_branch() {
    // r7 = r6; r7 += 1; r8 = r6; w8 += 1; r9 = r6; r9 -= 3; if r6 > 7 (fall):
    // R7=scalar(smin=umin=smin32=umin32=1,smax=umax=smax32=umax32=8,var_off=(0x0; 0xf))
    // R8 the same, R9=scalar(smin=smin32=-3,smax=smax32=4)
    let r6 = set_min_max(&masked(0xff), &k(7), JmpOp::Gt, false).fall[0];
    let want = "scalar(smin=umin=smin32=umin32=1,smax=umax=smax32=umax32=8,var_off=(0x0; 0xf))";
    assert_eq!(log(&Scalar::linked_add(&r6, 1, false)), want);
    assert_eq!(log(&Scalar::linked_add(&r6, 1, true)), want);
    assert_eq!(
        log(&Scalar::linked_add(&r6, -3, false)),
        "scalar(smin=smin32=-3,smax=smax32=4)"
    );
}

#[test]
fn link_rules_seen_in_the_kernel_log() {
    use bpfvet_verifier::scalar::{sync_linked, Link, LinkKind};
    let plain = Link {
        id: 2,
        ..Link::NONE
    };
    let unknown = Scalar::unknown();
    // 4: (07) r7 += 1 ; R7=scalar(id=2+1,...)  and  r7 += 0 -> id=1+0
    let add1 = plain.after_alu(AluOp::Add, &k(1), false, false, u64::MAX);
    assert_eq!(
        (add1.kind, add1.off, add1.log_off()),
        (LinkKind::Add64, 1, Some(1))
    );
    assert_eq!(
        plain
            .after_alu(AluOp::Add, &k(0), false, false, u64::MAX)
            .log_off(),
        Some(0)
    );
    // 60: (14) w8 -= 240 on a value below 2^32 ; R8=scalar(id=2-240,...)
    let sub = plain.after_alu(AluOp::Sub, &k(240), false, true, u64::from(u32::MAX));
    assert_eq!((sub.kind, sub.off), (LinkKind::Add32, -240));
    // ... but not when the value may exceed 32 bits, nor a second offset.
    assert_eq!(
        plain.after_alu(AluOp::Sub, &k(240), false, true, u64::MAX),
        Link::NONE
    );
    assert_eq!(
        add1.after_alu(AluOp::Add, &k(1), false, false, 0),
        Link::NONE
    );
    // Other operations drop the link (r7 *= 3 prints no id).
    assert_eq!(
        plain.after_alu(AluOp::Mul, &k(3), false, false, 0),
        Link::NONE
    );
    // A copy of an offset link starts a new one.
    assert_eq!(add1.before_mov(&unknown, || 9).id, 9);
    assert_eq!(plain.before_mov(&unknown, || 9), plain);
    // Mixed widths are not synchronised.
    let w = Link {
        kind: LinkKind::Add32,
        off: 1,
        ..plain
    };
    assert_eq!(sync_linked(&unknown, add1, w), None);
    // if r6 <= 0x80 (taken): r8 = r6 + 14 -> [14, 142]
    let r6 = set_min_max(&unknown, &k(0x80), JmpOp::Le, false).taken[0];
    let r8 = Link { off: 14, ..add1 };
    let (v, l) = sync_linked(&r6, plain, r8).expect("same width");
    assert_eq!(
        log(&v),
        "scalar(smin=umin=smin32=umin32=14,smax=umax=smax32=umax32=142,var_off=(0x0; 0xff))"
    );
    assert_eq!(l.off, 14);
}
