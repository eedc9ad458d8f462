//! Loader conventions of libbpf, cilium/ebpf, iproute2 and samples/bpf on
//! the tests/progs/loader_* objects: what each object must open as, and
//! that no function of a program section ever goes missing silently.

use std::path::{Path, PathBuf};

use bpfvet_isa::opcode::BPF_PSEUDO_MAP_IDX_VALUE;
use bpfvet_isa::uapi::{MapType, ProgType};
use bpfvet_object::{LoadOptions, Loader, Object};
use object::{Object as _, ObjectSection as _, ObjectSymbol as _, SymbolKind};

fn progs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs")
}

fn load(name: &str) -> Object {
    load_with(name, &LoadOptions::offline())
}

fn load_with(name: &str, opts: &LoadOptions) -> Object {
    let p = progs_dir().join(name);
    Object::from_file(&p, opts).unwrap_or_else(|e| panic!("{e}"))
}

fn names(obj: &Object) -> Vec<&str> {
    obj.programs.iter().map(|p| p.name.as_str()).collect()
}

#[test]
fn pin_flags_warn_unless_the_loader_knows_them() {
    // Cilium's replace flag (16) names Cilium; iproute2's PIN_GLOBAL_NS (2)
    // then means nothing.
    let obj = load("loader_pin_flag.bpf.o");
    let pin = |m: &str| obj.maps.iter().find(|x| x.name == m).unwrap().pinning;
    assert_eq!((pin("calls"), pin("packets")), (16, 2));
    assert_eq!(obj.loader, Loader::Cilium);
    assert!(obj
        .loader_reason
        .as_deref()
        .is_some_and(|r| r.contains("'calls'")));
    assert_eq!(obj.warnings.len(), 1, "{:?}", obj.warnings);
    assert!(obj.warnings[0].contains("'packets'") && obj.warnings[0].contains("value 2"));
    assert_eq!(names(&obj), ["tc_count_and_tail_call"]);
    // libbpf knows neither.
    let libbpf = load_with(
        "loader_pin_flag.bpf.o",
        &LoadOptions {
            loader: Some(Loader::Libbpf),
            ..LoadOptions::offline()
        },
    );
    assert_eq!(libbpf.warnings.len(), 2, "{:?}", libbpf.warnings);
    assert_eq!(libbpf.loader_reason, None);
}

#[test]
fn iproute2_objects_type_their_tail_calls_like_their_entry() {
    let obj = load("loader_iproute2.bpf.o");
    assert_eq!(obj.loader, Loader::Iproute2);
    let jmp = obj.maps.iter().find(|m| m.name == "jmp_table").unwrap();
    assert_eq!(jmp.pinning, 2);
    let ty = |o: &Object, n: &str| o.programs.iter().find(|p| p.name == n).unwrap().prog_type;
    assert_eq!(ty(&obj, "entry"), ProgType::SCHED_CLS);
    assert_eq!(ty(&obj, "tail_mark"), ProgType::SCHED_CLS);
    // The typing is said; iproute2's pin value is not a warning.
    assert_eq!(obj.warnings.len(), 1, "{:?}", obj.warnings);
    assert!(obj.warnings[0].contains("'tail_mark'"));
    // libbpf leaves the numbered section untyped.
    let libbpf = load_with(
        "loader_iproute2.bpf.o",
        &LoadOptions {
            loader: Some(Loader::Libbpf),
            ..LoadOptions::offline()
        },
    );
    assert_eq!(ty(&libbpf, "tail_mark"), ProgType::UNSPEC);
    assert!(libbpf.warnings.iter().any(|w| w.contains("'jmp_table'")));
}

#[test]
fn an_extern_without_btf_refuses_only_its_program() {
    let obj = load("loader_extern_one_prog.bpf.o");
    assert_eq!(names(&obj), ["xdp_calls_memcpy", "xdp_plain"]);
    let why = obj.programs[0].refused.as_deref().expect("refused");
    assert!(why.contains("no BTF for extern 'memcpy'"), "{why}");
    assert!(obj.programs[0].insns.is_empty());
    assert_eq!(obj.programs[1].refused, None);
    assert!(!obj.programs[1].insns.is_empty());
}

#[test]
fn static_functions_of_program_sections_are_programs() {
    let obj = load("loader_static_prog.bpf.o");
    assert_eq!(
        names(&obj),
        ["xdp_global_entry", "xdp_static_entry", "tc_static_entry"]
    );
    assert_eq!(obj.programs[2].prog_type, ProgType::SCHED_CLS);
    // .text functions, static or global, are subprograms only.
    assert!(!names(&obj).contains(&"verdict_for"));
    assert!(!names(&obj).contains(&"text_global_unused"));
    let subprog = &obj.programs[1].func_info;
    assert!(
        subprog.iter().any(|f| f.name == "verdict_for"),
        "{subprog:?}"
    );
}

#[test]
fn text_functions_are_programs_only_on_request() {
    let obj = load("loader_text_only.bpf.o");
    assert!(obj.programs.is_empty());
    let opts = LoadOptions {
        text_programs: true,
        ..LoadOptions::offline()
    };
    let obj = load_with("loader_text_only.bpf.o", &opts);
    assert_eq!(names(&obj), ["text_only_func"]);
    assert_eq!(obj.programs[0].prog_type, ProgType::UNSPEC);
    // An object with program sections keeps .text as subprograms.
    let obj = load_with("loader_static_prog.bpf.o", &opts);
    assert!(!names(&obj).contains(&"text_global_unused"));
}

#[test]
fn legacy_map_in_map_names_its_template_by_index() {
    let obj = load("loader_legacy_map_in_map.bpf.o");
    for outer in ["outer_counts", "outer_by_hash"] {
        let m = obj.maps.iter().find(|m| m.name == outer).unwrap();
        let inner = m.inner.as_deref().unwrap_or_else(|| panic!("{outer}"));
        assert_eq!(inner.name, "inner_counts");
        assert_eq!((inner.map_type, inner.value_size), (MapType::ARRAY, 8));
        assert_eq!(m.value_size, 4);
    }
}

#[test]
fn arena_map_extra_and_arena_globals() {
    let obj = load("loader_arena.bpf.o");
    let (ai, arena) = obj
        .maps
        .iter()
        .enumerate()
        .find(|(_, m)| m.map_type == MapType::ARENA)
        .expect("arena map");
    assert_eq!(arena.map_extra, 1 << 44);
    let p = &obj.programs[0];
    assert_eq!(p.name, "syscall_bumps_arena_global");
    assert!(p
        .insns
        .iter()
        .any(|i| i.is_ld_imm64() && i.src == BPF_PSEUDO_MAP_IDX_VALUE && i.imm as usize == ai));
}

#[test]
fn unknown_sections_keep_their_programs_untyped() {
    let obj = load("loader_unknown_section.bpf.o");
    assert_eq!(
        names(&obj),
        ["prog_in_unknown_section", "xdp_known_section"]
    );
    assert_eq!(obj.programs[0].prog_type, ProgType::UNSPEC);
    assert_eq!(obj.programs[0].section, "mysec");
}

fn objects_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() && p.file_name().is_some_and(|n| n != "invalid") {
            objects_under(&p, out);
        } else if p.extension().is_some_and(|x| x == "o") {
            out.push(p);
        }
    }
}

/// Every function symbol of every executable section other than `.text`
/// is a program of that section (verified, or refused with a reason), in
/// tests/progs and, when present, the shared corpus.
#[test]
fn no_function_of_a_program_section_is_dropped() {
    let mut checked = 0;
    let mut entries = Vec::new();
    objects_under(&progs_dir(), &mut entries);
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/ebpf-samples");
    objects_under(&corpus, &mut entries);
    entries.sort();
    let n_objects = entries.len();
    for path in entries {
        let bytes = std::fs::read(&path).unwrap();
        let Ok(elf) = object::File::parse(&*bytes) else {
            continue;
        };
        let obj =
            Object::from_file(&path, &LoadOptions::offline()).unwrap_or_else(|e| panic!("{e}"));
        for sym in elf.symbols() {
            if sym.kind() != SymbolKind::Text {
                continue;
            }
            let Some(sec) = sym
                .section_index()
                .and_then(|i| elf.section_by_index(i).ok())
            else {
                continue;
            };
            let sec_name = sec.name().unwrap();
            if sec_name == ".text" {
                continue;
            }
            let name = sym.name().unwrap();
            assert!(
                obj.programs
                    .iter()
                    .any(|p| p.name == name && p.section == sec_name),
                "{}: function '{name}' of section '{sec_name}' is not a program",
                path.display()
            );
            checked += 1;
        }
    }
    println!("{checked} functions of program sections checked in {n_objects} objects");
    assert!(checked > 60, "only {checked} functions checked");
}
