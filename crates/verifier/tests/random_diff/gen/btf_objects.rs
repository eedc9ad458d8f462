//! Program BTF for the kernel's BTF-described objects: map values holding
//! a bpf_spin_lock, graph roots (bpf_list_head / bpf_rb_root with
//! `contains:` decl tags), referenced, untrusted and per-CPU kptrs (to
//! vmlinux's task_struct, found by name, and to local types); local types
//! for bpf_obj_new / bpf_percpu_obj_new (graph nodes with a bpf_refcount, a
//! list node alone, scalars only, too big, a pointer member). Appended to
//! the generator's func_info BTF (types 1..=5), so the ids below are fixed;
//! the maps using them follow the generator's four maps.

use bpfvet_isa::uapi::MapType;
use bpfvet_object::MapDef;

/// `long` (8 bytes, signed).
pub const T_LONG: i32 = 6;
/// `struct task_struct` (empty here: the kernel finds it in vmlinux by name).
pub const T_TASK: i32 = 12;
/// `struct fz_node { long key; long data; struct bpf_list_node l;
/// struct bpf_rb_node r; struct bpf_refcount ref; }` (local names carry a
/// prefix: a kptr to a name vmlinux also has, such as `node`, is taken for
/// the kernel's type)
pub const T_NODE: i32 = 17;
pub const NODE_LIST_OFF: i32 = 16;
pub const NODE_RB_OFF: i32 = 40;
pub const NODE_SIZE: i32 = 80;
/// `struct fz_plain { long a; long b; }`: scalars only (percpu objects).
pub const T_PLAIN: i32 = 18;
/// `struct fz_lonely { long key; struct bpf_list_node l; }`: no refcount.
pub const T_LONELY: i32 = 19;
pub const LONELY_LIST_OFF: i32 = 8;
/// The value of [`OBJS_MAP`]: `{ bpf_spin_lock lock; bpf_list_head head
/// (contains node.l); bpf_rb_root root (contains node.r); bpf_list_head
/// head2 (contains lonely.l); task_struct __kptr *task; task_struct
/// __kptr_untrusted *ut; node __kptr *local; plain __percpu_kptr *pc; }`
pub const T_OBJS: i32 = 24;
pub const OBJS_HEAD_OFF: i32 = 8;
pub const OBJS_ROOT_OFF: i32 = 24;
pub const OBJS_HEAD2_OFF: i32 = 40;
pub const OBJS_KPTR_OFF: i32 = 56;
pub const OBJS_SIZE: i32 = 88;
/// The value of [`KPTRS_MAP`]: the four kptrs at 0, 8, 16, 24 then a long.
pub const T_KPTRS: i32 = 28;
pub const KPTRS_SIZE: i32 = 40;
/// The value of [`LOCK2_MAP`]: `{ bpf_spin_lock lock; long x; }`.
pub const T_VALUE2: i32 = 29;
pub const VALUE2_SIZE: i32 = 16;
/// `struct fz_big { long a[80]; }`: over the per-CPU allocation limit.
pub const T_BIG: i32 = 31;
/// `struct fz_withptr { long *p; }`: not scalars only.
pub const T_WITHPTR: i32 = 33;
/// The generator's lock map's value: a bpf_spin_lock at 0 (diff.rs).
pub const T_LOCK_VALUE: i32 = 5;

/// Map indexes after the generator's thirteen (`diff::object`).
pub const OBJS_MAP: i32 = 13;
pub const KPTRS_MAP: i32 = 14;
pub const LOCK2_MAP: i32 = 15;
/// The wq map's value: a struct holding a bpf_wq (after the types above).
pub const T_WQ_VALUE: i32 = 35;
/// Maps of the `regions` blocks: a value holding a bpf_res_spin_lock, one
/// holding a bpf_timer (types after the functions of `append_funcs`).
pub const RES_LOCK_MAP: i32 = 16;
pub const TIMER_MAP: i32 = 17;
pub const RES_VALUE_SIZE: i32 = 8;
pub const TIMER_VALUE_SIZE: i32 = 16;
pub const T_RES_VALUE: i32 = 54;
pub const T_TIMER_VALUE: i32 = 56;

/// Kptr slots of a kptr-holding value, by kind: (offset in OBJS value,
/// offset in KPTRS value, pointee).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum KptrSlot {
    /// `struct task_struct __kptr *`
    Task,
    /// `struct task_struct __kptr_untrusted *`
    Untrusted,
    /// `struct node __kptr *`
    Local,
    /// `struct plain __percpu_kptr *`
    Percpu,
}

impl KptrSlot {
    pub const ALL: [KptrSlot; 4] = [
        KptrSlot::Task,
        KptrSlot::Untrusted,
        KptrSlot::Local,
        KptrSlot::Percpu,
    ];
    /// Offset of the slot in the value of `map` (OBJS_MAP or KPTRS_MAP).
    pub fn off(self, map: i32) -> i32 {
        let base = if map == OBJS_MAP { OBJS_KPTR_OFF } else { 0 };
        base + 8 * self as i32
    }
}

/// The generator's lock map's value size.
pub const LOCK_VALUE_SIZE: i32 = 48;

/// The whole object BTF: `int`, a prototype `int (void)` and one static
/// FUNC `f` of it (type 3): enough func_info for the kernel to take
/// callbacks (`missing btf func_info` otherwise) and to check the
/// subprogram layout; `struct bpf_spin_lock` (4) and the lock map's value
/// (5), a struct of its size with the lock at 0; then the types above.
pub fn object_btf() -> Vec<u8> {
    let mut types: Vec<u32> = Vec::new();
    let mut strings = b"\0int\0f\0bpf_spin_lock\0val\0value\0lock\0".to_vec();
    let name = |n: &[u8]| {
        strings
            .windows(n.len() + 2)
            .position(|w| w[0] == 0 && &w[1..=n.len()] == n && w[n.len() + 1] == 0)
            .map_or(0, |p| p as u32 + 1)
    };
    types.extend([name(b"int"), 1 << 24, 4, (1 << 24) | 32]); // [1] INT int
    types.extend([0, 13 << 24, 1]); // [2] FUNC_PROTO int (void)
    types.extend([name(b"f"), 12 << 24, 2]); // [3] FUNC f, static
                                             // [4] STRUCT bpf_spin_lock { int val; }
    types.extend([name(b"bpf_spin_lock"), (4 << 24) | 1, 4, name(b"val"), 1, 0]);
    // [5] STRUCT value { struct bpf_spin_lock lock; } of the value's size
    types.extend([
        name(b"value"),
        (4 << 24) | 1,
        LOCK_VALUE_SIZE as u32,
        name(b"lock"),
        4,
        0,
    ]);
    append(&mut types, &mut strings);
    // [34] STRUCT bpf_wq, 16 opaque bytes; [35] STRUCT value { struct bpf_wq wq; }
    let (n_bpf_wq, n_wq_value, n_wq) = (
        push_name(&mut strings, "bpf_wq"),
        push_name(&mut strings, "fz_wq_value"),
        push_name(&mut strings, "wq"),
    );
    types.extend([n_bpf_wq, 4 << 24, 16]);
    types.extend([
        n_wq_value,
        (4 << 24) | 1,
        16,
        n_wq,
        T_WQ_VALUE as u32 - 1,
        0,
    ]);
    append_funcs(&mut types, &mut strings);
    // After the functions: [53] STRUCT bpf_res_spin_lock { int val; };
    // [54] STRUCT fz_res_value { struct bpf_res_spin_lock lock; }; [55]
    // STRUCT bpf_timer, 16 opaque bytes; [56] STRUCT fz_timer_value
    // { struct bpf_timer timer; }
    let (n_res, n_val, n_res_value, n_lock) = (
        push_name(&mut strings, "bpf_res_spin_lock"),
        push_name(&mut strings, "val"),
        push_name(&mut strings, "fz_res_value"),
        push_name(&mut strings, "lock"),
    );
    types.extend([n_res, (4 << 24) | 1, 4, n_val, 1, 0]);
    types.extend([
        n_res_value,
        (4 << 24) | 1,
        RES_VALUE_SIZE as u32,
        n_lock,
        T_RES_VALUE as u32 - 1,
        0,
    ]);
    let (n_timer, n_timer_value, n_timer_member) = (
        push_name(&mut strings, "bpf_timer"),
        push_name(&mut strings, "fz_timer_value"),
        push_name(&mut strings, "timer"),
    );
    types.extend([n_timer, 4 << 24, 16]);
    types.extend([
        n_timer_value,
        (4 << 24) | 1,
        TIMER_VALUE_SIZE as u32,
        n_timer_member,
        T_TIMER_VALUE as u32 - 1,
        0,
    ]);
    append_graph_shapes(&mut types, &mut strings);
    append_struct_ops_types(&mut types, &mut strings);
    let bytes: Vec<u8> = types.iter().flat_map(|t| t.to_le_bytes()).collect();
    bpfvet_object::btf::encode(&bytes, &strings)
}

/// Functions for func_info beyond `f` (`gen/prog_blocks.rs`): an exception
/// callback `int fz_exc(long)` (global) and a static one of the same
/// prototype; main functions whose `exception_callback:` decl tag names
/// that callback, a missing function, the static one, two callbacks, or
/// itself; a `void` function and a global `int (void)` one.
pub const T_EXC: u32 = 37;
pub const T_EXC_STATIC: u32 = 38;
pub const T_MAIN_EXC: u32 = 39;
pub const T_MAIN_MISSING: u32 = 41;
pub const T_MAIN_STATIC: u32 = 43;
pub const T_MAIN_TWO: u32 = 45;
pub const T_SELF: u32 = 48;
pub const T_VOID: u32 = 51;
pub const T_GLOBAL: u32 = 52;

/// Appends `n` to the string section; its offset.
fn push_name(strings: &mut Vec<u8>, n: &str) -> u32 {
    let off = strings.len() as u32;
    strings.extend_from_slice(n.as_bytes());
    strings.push(0);
    off
}

fn append_funcs(types: &mut Vec<u32>, strings: &mut Vec<u8>) {
    const FUNC: u32 = 12 << 24;
    const GLOBAL: u32 = 1;
    const PROTO: u32 = 13 << 24;
    const DECL_TAG: u32 = 17 << 24;
    const NO_MEMBER: u32 = u32::MAX;
    const INT_VOID: u32 = 2;
    let cookie = push_name(strings, "cookie");
    types.extend([0, PROTO | 1, 1, cookie, T_LONG as u32]); // [36] int (long cookie)
    let (exc, exc_static) = (
        push_name(strings, "fz_exc"),
        push_name(strings, "fz_exc_static"),
    );
    types.extend([exc, FUNC | GLOBAL, 36]); // [37]
    types.extend([exc_static, FUNC, 36]); // [38]
    for (main, tag) in [
        ("fz_main", "exception_callback:fz_exc"), // [39], [40]
        ("fz_main_missing", "exception_callback:fz_nowhere"), // [41], [42]
        ("fz_main_static", "exception_callback:fz_exc_static"), // [43], [44]
    ] {
        let (m, t) = (push_name(strings, main), push_name(strings, tag));
        let id = types_count(types) + 1;
        types.extend([m, FUNC, INT_VOID]);
        types.extend([t, DECL_TAG, id, NO_MEMBER]);
    }
    let (two, t1, t2) = (
        push_name(strings, "fz_main_two"),
        push_name(strings, "exception_callback:fz_exc"),
        push_name(strings, "exception_callback:fz_exc_static"),
    );
    types.extend([two, FUNC, INT_VOID]); // [45]
    types.extend([t1, DECL_TAG, T_MAIN_TWO, NO_MEMBER]); // [46]
    types.extend([t2, DECL_TAG, T_MAIN_TWO, NO_MEMBER]); // [47]
    let (me, tag) = (
        push_name(strings, "fz_self"),
        push_name(strings, "exception_callback:fz_self"),
    );
    types.extend([me, FUNC | GLOBAL, 36]); // [48]
    types.extend([tag, DECL_TAG, T_SELF, NO_MEMBER]); // [49]
    types.extend([0, PROTO, 0]); // [50] void (void)
    let (void_fn, global_fn) = (
        push_name(strings, "fz_void"),
        push_name(strings, "fz_global"),
    );
    types.extend([void_fn, FUNC, 50]); // [51]
    types.extend([global_fn, FUNC | GLOBAL, INT_VOID]); // [52]
}

/// Types in a type section of `u32` words (each type's length read from
/// its kind).
fn types_count(types: &[u32]) -> u32 {
    let (mut i, mut n) = (0, 0);
    while i < types.len() {
        let info = types[i + 1];
        let vlen = (info & 0xffff) as usize;
        let extra = match (info >> 24) & 0x1f {
            1 | 14 | 17 => 1,       // INT, VAR, DECL_TAG
            3 => 3,                 // ARRAY
            4 | 5 | 15 => 3 * vlen, // STRUCT, UNION, DATASEC
            6 | 13 => 2 * vlen,     // ENUM, FUNC_PROTO
            _ => 0,
        };
        i += 3 + extra;
        n += 1;
    }
    n
}

/// Appends the types above (ids from 6 on) and their names.
fn append(types: &mut Vec<u32>, strings: &mut Vec<u8>) {
    const INT: u32 = 1 << 24;
    const PTR: u32 = 2 << 24;
    const ARRAY: u32 = 3 << 24;
    const STRUCT: u32 = 4 << 24;
    const DECL_TAG: u32 = 17 << 24;
    const TYPE_TAG: u32 = 18 << 24;
    let n_long = push_name(strings, "long");
    types.extend([n_long, INT, 8, (1 << 24) | 64]); // [6] long, signed
    for (n, size) in [
        ("bpf_list_head", 16),
        ("bpf_list_node", 24),
        ("bpf_rb_root", 16),
        ("bpf_rb_node", 32),
        ("bpf_refcount", 4),
        ("task_struct", 0),
    ] {
        let n = push_name(strings, n);
        types.extend([n, STRUCT, size]); // [7..=12]
    }
    let kptr = push_name(strings, "kptr");
    let untrusted = push_name(strings, "kptr_untrusted");
    let percpu = push_name(strings, "percpu_kptr");
    types.extend([kptr, TYPE_TAG, T_TASK as u32]); // [13]
    types.extend([0, PTR, 13]); // [14] task_struct __kptr *
    types.extend([untrusted, TYPE_TAG, T_TASK as u32]); // [15]
    types.extend([0, PTR, 15]); // [16] task_struct __kptr_untrusted *
    let member = |n: u32, t: u32, off: i32| [n, t, (off * 8) as u32];
    let struct_of = |types: &mut Vec<u32>, n: u32, size: i32, members: &[[u32; 3]]| {
        types.extend([n, STRUCT | members.len() as u32, size as u32]);
        for m in members {
            types.extend(m);
        }
    };
    let (key, data, l, r, rc) = (
        push_name(strings, "key"),
        push_name(strings, "data"),
        push_name(strings, "l"),
        push_name(strings, "r"),
        push_name(strings, "ref"),
    );
    let n_node = push_name(strings, "fz_node");
    struct_of(
        types,
        n_node,
        NODE_SIZE,
        &[
            member(key, 6, 0),
            member(data, 6, 8),
            member(l, 8, NODE_LIST_OFF),
            member(r, 10, NODE_RB_OFF),
            member(rc, 11, 72),
        ],
    ); // [17]
    let (n_plain, a, b) = (
        push_name(strings, "fz_plain"),
        push_name(strings, "a"),
        push_name(strings, "b"),
    );
    struct_of(types, n_plain, 16, &[member(a, 6, 0), member(b, 6, 8)]); // [18]
    let n_lonely = push_name(strings, "fz_lonely");
    struct_of(
        types,
        n_lonely,
        32,
        &[member(key, 6, 0), member(l, 8, LONELY_LIST_OFF)],
    ); // [19]
    types.extend([kptr, TYPE_TAG, T_NODE as u32]); // [20]
    types.extend([0, PTR, 20]); // [21] node __kptr *
    types.extend([percpu, TYPE_TAG, T_PLAIN as u32]); // [22]
    types.extend([0, PTR, 22]); // [23] plain __percpu_kptr *
    let (lock, head, root, head2) = (
        push_name(strings, "lock"),
        push_name(strings, "head"),
        push_name(strings, "root"),
        push_name(strings, "head2"),
    );
    let (task, ut, local, pc) = (
        push_name(strings, "task"),
        push_name(strings, "ut"),
        push_name(strings, "local"),
        push_name(strings, "pc"),
    );
    let n_objs = push_name(strings, "fz_objs");
    struct_of(
        types,
        n_objs,
        OBJS_SIZE,
        &[
            member(lock, 4, 0),
            member(head, 7, OBJS_HEAD_OFF),
            member(root, 9, OBJS_ROOT_OFF),
            member(head2, 7, OBJS_HEAD2_OFF),
            member(task, 14, OBJS_KPTR_OFF),
            member(ut, 16, OBJS_KPTR_OFF + 8),
            member(local, 21, OBJS_KPTR_OFF + 16),
            member(pc, 23, OBJS_KPTR_OFF + 24),
        ],
    ); // [24]
    for (tag, comp) in [
        ("contains:fz_node:l", 1),
        ("contains:fz_node:r", 2),
        ("contains:fz_lonely:l", 3),
    ] {
        let t = push_name(strings, tag);
        types.extend([t, DECL_TAG, T_OBJS as u32, comp]); // [25..=27]
    }
    let (n_kptrs, x) = (push_name(strings, "fz_kptrs"), push_name(strings, "x"));
    struct_of(
        types,
        n_kptrs,
        KPTRS_SIZE,
        &[
            member(task, 14, 0),
            member(ut, 16, 8),
            member(local, 21, 16),
            member(pc, 23, 24),
            member(x, 6, 32),
        ],
    ); // [28]
    let n_value2 = push_name(strings, "fz_value2");
    struct_of(
        types,
        n_value2,
        VALUE2_SIZE,
        &[member(lock, 4, 0), member(x, 6, 8)],
    ); // [29]
    types.extend([0, ARRAY, 0, 6, 1, 80]); // [30] long[80]
    let n_big = push_name(strings, "fz_big");
    struct_of(types, n_big, 640, &[member(a, 30, 0)]); // [31]
    types.extend([0, PTR, 6]); // [32] long *
    let (n_withptr, p) = (push_name(strings, "fz_withptr"), push_name(strings, "p"));
    struct_of(types, n_withptr, 8, &[member(p, 32, 0)]); // [33]
}

fn btf_map(name: &str, value_size: i32, value_type: i32) -> MapDef {
    let mut m = MapDef::new(name, MapType::ARRAY, 4, value_size as u32, 16);
    m.btf_key_type_id = 1;
    m.btf_value_type_id = value_type as u32;
    m
}

/// The maps whose values hold these objects, in index order from
/// `OBJS_MAP`, when some program of `progs` names one of them. Creating them costs
/// the kernel several times a plain program's load, so objects whose
/// programs cannot reach them go without (a program that does not name a
/// map is not affected by it).
pub fn maps<'a>(mut progs: impl Iterator<Item = &'a [bpfvet_isa::Insn]>) -> Vec<MapDef> {
    let names_one = progs.any(|insns| {
        insns.windows(2).any(|w| {
            w[0].is_ld_imm64()
                && matches!(w[0].src, 1 | 2 | 5 | 6)
                && (OBJS_MAP..=TIMER_MAP).contains(&w[0].imm)
        })
    });
    if !names_one {
        return Vec::new();
    }
    vec![
        btf_map("objs", OBJS_SIZE, T_OBJS),
        btf_map("kptrs", KPTRS_SIZE, T_KPTRS),
        btf_map("locked2", VALUE2_SIZE, T_VALUE2),
        btf_map("res_locked", RES_VALUE_SIZE, T_RES_VALUE),
        btf_map("timers", TIMER_VALUE_SIZE, T_TIMER_VALUE),
    ]
}

/// `# map:` lines of a `.case` (with `# btf: fuzz`) for the maps above.
pub fn case_maps() -> Vec<String> {
    [
        (OBJS_SIZE, T_OBJS),
        (KPTRS_SIZE, T_KPTRS),
        (VALUE2_SIZE, T_VALUE2),
        (RES_VALUE_SIZE, T_RES_VALUE),
        (TIMER_VALUE_SIZE, T_TIMER_VALUE),
    ]
    .iter()
    .map(|(size, id)| format!("array 4 {size} 16 btf={id}"))
    .collect()
}

/// The `graph_shapes` shapes' types, ids 65..=80 (`gen/graph_shape_blocks.rs`).
const GRAPH_SHAPES_FIRST_TYPE: u32 = 65;
const GRAPH_SHAPES_LAST_TYPE: u32 = 80;
/// `struct fz_uptr_value { struct fz_plain __uptr *p; long x; }`: a task
/// storage value with a user pointer.
pub const T_UPTR_VALUE: u32 = 67;
pub const UPTR_VALUE_SIZE: u32 = 16;
/// `struct fz_tw_value { struct bpf_task_work tw; }`.
pub const T_TW_VALUE: u32 = 69;
pub const TW_VALUE_SIZE: u32 = 8;

/// Appends the `graph_shapes` types as ids 65..=80, after filler from the last
/// id so far up to 64 (where the types of the range before are not
/// there): `[65]` TYPE_TAG `uptr` of `fz_plain`, `[66]` a pointer to it,
/// `[67]` [`T_UPTR_VALUE`], `[68]` `bpf_task_work`, `[69]` [`T_TW_VALUE`],
/// then filler to 80.
fn append_graph_shapes(types: &mut Vec<u32>, strings: &mut Vec<u8>) {
    const INT: u32 = 1 << 24;
    const PTR: u32 = 2 << 24;
    const STRUCT: u32 = 4 << 24;
    const TYPE_TAG: u32 = 18 << 24;
    let filler = push_name(strings, "fz_graph_pad");
    let mut count = types_count(types);
    while count + 1 < GRAPH_SHAPES_FIRST_TYPE {
        types.extend([filler, INT, 4, 32]);
        count += 1;
    }
    let uptr = push_name(strings, "uptr");
    types.extend([uptr, TYPE_TAG, T_PLAIN as u32]); // [65]
    types.extend([0, PTR, GRAPH_SHAPES_FIRST_TYPE]); // [66]
    let (n_value, p, x) = (
        push_name(strings, "fz_uptr_value"),
        push_name(strings, "p"),
        push_name(strings, "x"),
    );
    types.extend([n_value, STRUCT | 2, UPTR_VALUE_SIZE]); // [67]
    types.extend([p, GRAPH_SHAPES_FIRST_TYPE + 1, 0]);
    types.extend([x, T_LONG as u32, 64]);
    // [68] STRUCT bpf_task_work, 8 opaque bytes; [69] STRUCT fz_tw_value
    // { struct bpf_task_work tw; }
    let (n_tw, n_tw_value, n_tw_member) = (
        push_name(strings, "bpf_task_work"),
        push_name(strings, "fz_tw_value"),
        push_name(strings, "tw"),
    );
    types.extend([n_tw, STRUCT, TW_VALUE_SIZE]);
    types.extend([
        n_tw_value,
        STRUCT | 1,
        TW_VALUE_SIZE,
        n_tw_member,
        T_TW_VALUE - 1,
        0,
    ]);
    for _ in T_TW_VALUE..GRAPH_SHAPES_LAST_TYPE {
        types.extend([filler, INT, 4, 32]);
    }
}

/// The struct_ops helper's range, ids 81-90 (`gen/structops_blocks.rs`):
/// the value types of the struct_ops maps, named as the kernel types they
/// implement (the kernel backend finds the vmlinux wrapper by that name, as
/// libbpf does), then `int` fillers. Ids below 81 that no other block has
/// appended yet are filled with `int` first, so these ids stay fixed.
pub const T_STRUCT_OPS_FIRST: u32 = 81;
pub const T_DUMMY_OPS: u32 = 81;
pub const T_TCP_CA_OPS: u32 = 82;
pub const T_STRUCT_OPS_LAST: u32 = 90;

fn append_struct_ops_types(types: &mut Vec<u32>, strings: &mut Vec<u8>) {
    const INT: u32 = 1 << 24;
    const STRUCT: u32 = 4 << 24;
    let int = push_name(strings, "int");
    while types_count(types) + 1 < T_STRUCT_OPS_FIRST {
        types.extend([int, INT, 4, (1 << 24) | 32]);
    }
    let dummy = push_name(strings, "bpf_dummy_ops");
    types.extend([dummy, STRUCT, 0]); // T_DUMMY_OPS
    let tcp_ca = push_name(strings, "tcp_congestion_ops");
    types.extend([tcp_ca, STRUCT, 0]); // T_TCP_CA_OPS
    while types_count(types) < T_STRUCT_OPS_LAST {
        types.extend([int, INT, 4, (1 << 24) | 32]);
    }
}
