//! Kptr fields of map values: small programs over an array map whose value
//! type (in the object's BTF) holds a referenced and an unreferenced kptr
//! to task_struct. Each expectation is checked against bpfvet and, when
//! the host kernel can load programs, against the kernel.

use bpfvet_isa::uapi::{MapType, ProgType};
use bpfvet_object::btf::Btf;
use bpfvet_object::{MapDef, Object};
use bpfvet_verifier::{verify, Options, Verdict};

/// Raw BTF records, as the kernel's UAPI lays them out.
struct Builder {
    types: Vec<u8>,
    strings: Vec<u8>,
}

impl Builder {
    fn new() -> Self {
        Builder {
            types: Vec::new(),
            strings: vec![0],
        }
    }
    fn s(&mut self, name: &str) -> u32 {
        if name.is_empty() {
            return 0;
        }
        let off = self.strings.len() as u32;
        self.strings.extend_from_slice(name.as_bytes());
        self.strings.push(0);
        off
    }
    fn rec(&mut self, name: &str, kind: u32, vlen: u32, sz: u32, extra: &[u32]) {
        let n = self.s(name);
        for w in [n, (kind << 24) | vlen, sz].iter().chain(extra) {
            self.types.extend_from_slice(&w.to_le_bytes());
        }
    }
    fn build(&self) -> Vec<u8> {
        bpfvet_object::btf::encode(&self.types, &self.strings)
    }
}

/// `struct val { long buf; struct task_struct __kptr *ref;
/// struct task_struct __kptr_untrusted *unref; }` in an array map.
fn object(prog_type: ProgType, text: &str) -> Object {
    with_value(prog_type, text, kptr_value)
}

fn kptr_value(b: &mut Builder) -> (u32, u32, u32) {
    b.rec("long", 1, 0, 8, &[(1 << 24) | 64]); // [1]
    b.rec("task_struct", 4, 0, 0, &[]); // [2]
    b.rec("kptr", 18, 0, 2, &[]); // [3]
    b.rec("", 2, 0, 3, &[]); // [4] ptr -> kptr tag
    b.rec("kptr_untrusted", 18, 0, 2, &[]); // [5]
    b.rec("", 2, 0, 5, &[]); // [6]
    let (buf, r, u) = (b.s("buf"), b.s("ref"), b.s("unref"));
    b.rec("val", 4, 3, 24, &[buf, 1, 0, r, 4, 64, u, 6, 128]); // [7]
    b.rec("int", 1, 0, 4, &[32]); // [8]
    (8, 7, 24)
}

/// `struct val { struct bpf_spin_lock lock; int x; }`.
fn lock_value(b: &mut Builder) -> (u32, u32, u32) {
    b.rec("int", 1, 0, 4, &[32]); // [1]
    let v = b.s("val");
    b.rec("bpf_spin_lock", 4, 1, 4, &[v, 1, 0]); // [2]
    let (l, x) = (b.s("lock"), b.s("x"));
    b.rec("val", 4, 2, 8, &[l, 2, 0, x, 1, 32]); // [3]
    (1, 3, 8)
}

/// An object with one program and an array map whose value type `value`
/// adds to the BTF (it returns key id, value id, value size).
fn with_value(
    prog_type: ProgType,
    text: &str,
    value: fn(&mut Builder) -> (u32, u32, u32),
) -> Object {
    let mut b = Builder::new();
    let (key_id, value_id, value_size) = value(&mut b);
    let raw = b.build();
    let insns = bpfvet_isa::asm::assemble_insns(text).expect("assembles");
    let mut obj = Object::single_program("kptr", prog_type, insns);
    let mut m = MapDef::new("kptr_map", MapType::ARRAY, 4, value_size, 1);
    m.btf_key_type_id = key_id;
    m.btf_value_type_id = value_id;
    obj.maps = vec![m];
    obj.btf = Some(Btf::from_bytes(&raw).expect("valid BTF"));
    obj.btf_raw = Some(raw);
    obj
}

const LOOKUP: &str = "*(u32 *)(r10 -4) = 0
r2 = r10
r2 += -4
r1 = map_idx[0]
call bpf_map_lookup_elem#1
if r0 == 0x0 goto pc+100
r6 = r0
";

/// The program: LOOKUP, `body`, `r0 = 0; exit` (the null branch jumps
/// past the end, patched to land on the exit).
fn program(body: &str) -> String {
    let n = bpfvet_isa::asm::assemble_insns(body).expect("body").len();
    let lookup = LOOKUP.replace("pc+100", &format!("pc+{}", n + 1));
    format!("{lookup}{body}r0 = 0\nexit\n")
}

fn check(name: &str, body: &str, want: Option<&str>) -> Vec<String> {
    check_obj(name, &object(ProgType::SCHED_CLS, &program(body)), want)
}

fn check_obj(name: &str, obj: &Object, want: Option<&str>) -> Vec<String> {
    let obj = obj.clone();
    let mut failures = Vec::new();
    let out = verify(&obj, 0, &Options::default());
    match (&out.verdict, want) {
        (Verdict::Accepted, None) => {}
        (Verdict::Rejected { error, .. }, Some(w)) if error == w => {}
        (v, _) => failures.push(format!("{name}: bpfvet {v:?}, expected {want:?}")),
    }
    if let Ok(kernel) = bpfvet_kernel::Kernel::open() {
        let session = kernel.open_object(&obj);
        let opts = bpfvet_kernel::LoadOptions {
            log_level: 1,
            ..Default::default()
        };
        if let Some(report) = session.load_program(0, &opts) {
            if !matches!(report.verdict, bpfvet_kernel::Verdict::Refused(_)) {
                let last = bpfvet_kernel::report::last_error_line(&report.log).unwrap_or("");
                let ok = report.verdict.is_accepted();
                if ok != want.is_none() || want.is_some_and(|w| w != last) {
                    failures.push(format!(
                        "{name}: KERNEL accepted={ok} ({last}), expected {want:?}"
                    ));
                }
            }
        }
    }
    failures
}

#[test]
fn kptr_field_rules() {
    let cases: &[(&str, &str, Option<&str>)] = &[
        (
            "misaligned load",
            "r1 = *(u64 *)(r6 +9)\n",
            Some("kptr access misaligned expected=8 off=9"),
        ),
        (
            "narrow store",
            "*(u32 *)(r6 +16) = 0\n",
            Some("kptr access size must be BPF_DW"),
        ),
        (
            "store into a referenced kptr",
            "r1 = *(u64 *)(r6 +8)\nif r1 == 0x0 goto pc+1\n*(u64 *)(r6 +8) = r1\n",
            Some("store to referenced kptr disallowed"),
        ),
        (
            "helper reads over a kptr",
            "r1 = map_idx[0]\nr2 = r10\nr2 += -4\nr3 = r6\nr4 = 0\ncall bpf_map_update_elem#2\n",
            Some("kptr cannot be accessed indirectly by helper"),
        ),
        (
            "unreferenced kptr stored back",
            "r1 = *(u64 *)(r6 +16)\nif r1 == 0x0 goto pc+1\n*(u64 *)(r6 +16) = r1\n*(u64 *)(r6 +16) = 0\n",
            None,
        ),
        (
            "store of a pointer into the middle of the struct",
            "r1 = *(u64 *)(r6 +16)\nif r1 == 0x0 goto pc+2\nr1 += 4\n*(u64 *)(r6 +16) = r1\n",
            Some("invalid kptr access, R1 type=untrusted_ptr_task_struct expected=ptr_task_struct or untrusted_ptr_task_struct"),
        ),
        (
            "xchg on a plain field",
            "r1 = r6\nr2 = 0\ncall bpf_kptr_xchg#194\n",
            Some("off=0 doesn't point to kptr"),
        ),
        (
            "xchg on an unreferenced kptr",
            "r1 = r6\nr1 += 16\nr2 = 0\ncall bpf_kptr_xchg#194\n",
            Some("off=16 kptr isn't referenced kptr"),
        ),
        (
            "loaded referenced kptr is untrusted",
            "r1 = *(u64 *)(r6 +8)\nif r1 == 0x0 goto pc+1\n*(u64 *)(r1 +0) = 0\n",
            Some("only read is supported"),
        ),
    ];
    let mut failures = Vec::new();
    for (name, body, want) in cases {
        failures.extend(check(name, body, *want));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn spin_lock_field_rules() {
    let mut failures = Vec::new();
    let load = with_value(
        ProgType::SCHED_CLS,
        &program("r1 = *(u32 *)(r6 +0)\n"),
        lock_value,
    );
    failures.extend(check_obj(
        "load of the lock",
        &load,
        Some("bpf_spin_lock cannot be accessed directly by load/store"),
    ));
    let other = with_value(
        ProgType::SCHED_CLS,
        &program("r1 = *(u32 *)(r6 +4)\n"),
        lock_value,
    );
    failures.extend(check_obj("load next to the lock", &other, None));
    let tracing = with_value(ProgType::KPROBE, &program(""), lock_value);
    failures.extend(check_obj(
        "lock map in a kprobe",
        &tracing,
        Some("tracing progs cannot use bpf_spin_lock yet"),
    ));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `struct udata { long a; long b; }` and a task storage value
/// `struct val { struct udata __uptr *u; }`.
fn uptr_value(b: &mut Builder) -> (u32, u32, u32) {
    b.rec("long", 1, 0, 8, &[(1 << 24) | 64]); // [1]
    let (a, bb) = (b.s("a"), b.s("b"));
    b.rec("udata", 4, 2, 16, &[a, 1, 0, bb, 1, 64]); // [2]
    b.rec("uptr", 18, 0, 2, &[]); // [3]
    b.rec("", 2, 0, 3, &[]); // [4] ptr -> uptr tag
    let u = b.s("u");
    b.rec("val", 4, 1, 8, &[u, 4, 0]); // [5]
    b.rec("int", 1, 0, 4, &[32]); // [6]
    (6, 5, 8)
}

/// A sched_cls program over a task storage map whose value holds a uptr:
/// it looks up the (NULL) task's storage, then runs `body` with the value
/// in r6.
fn uptr_object(body: &str) -> Object {
    let n = bpfvet_isa::asm::assemble_insns(body).expect("body").len();
    let text = format!(
        "r1 = map_idx[0]\nr2 = 0\nr3 = 0\nr4 = 0\ncall bpf_task_storage_get#156\n\
         if r0 == 0x0 goto pc+{}\nr6 = r0\n{body}r0 = 0\nexit\n",
        n + 1
    );
    let mut obj = with_value(ProgType::SCHED_CLS, &text, uptr_value);
    let m = &mut obj.maps[0];
    m.map_type = MapType::TASK_STORAGE;
    m.max_entries = 0;
    m.map_flags = bpfvet_isa::uapi::BPF_F_NO_PREALLOC;
    obj
}

#[test]
fn uptr_field_rules() {
    let cases: &[(&str, &str, Option<&str>)] = &[
        (
            "uptr read after its null check",
            "r1 = *(u64 *)(r6 +0)\nif r1 == 0x0 goto pc+1\nr2 = *(u64 *)(r1 +8)\n",
            None,
        ),
        (
            "uptr may be NULL",
            "r1 = *(u64 *)(r6 +0)\nr2 = *(u64 *)(r1 +0)\n",
            Some("R1 invalid mem access 'mem_or_null'"),
        ),
        (
            "uptr memory is as big as its struct",
            "r1 = *(u64 *)(r6 +0)\nif r1 == 0x0 goto pc+1\nr2 = *(u64 *)(r1 +16)\n",
            Some("R1 min value is outside of the allowed memory range"),
        ),
        (
            "uptr memory is writable",
            "r1 = *(u64 *)(r6 +0)\nif r1 == 0x0 goto pc+1\n*(u64 *)(r1 +0) = 0\n",
            None,
        ),
        (
            "store to the uptr",
            "*(u64 *)(r6 +0) = 0\n",
            Some("store to uptr disallowed"),
        ),
    ];
    let mut failures = Vec::new();
    for (name, body, want) in cases {
        failures.extend(check_obj(name, &uptr_object(body), *want));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
