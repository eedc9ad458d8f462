//! The project's own test programs (tests/progs/*.o): facts stated in their
//! C sources must come out of the loader.

use std::path::{Path, PathBuf};

use bpfvet_isa::opcode::{BPF_CALL, BPF_JMP, BPF_PSEUDO_CALL, BPF_PSEUDO_MAP_IDX_VALUE};
use bpfvet_isa::uapi::{AttachType, MapType, ProgType};
use bpfvet_object::btf::{Btf, Kind};
use bpfvet_object::{LoadOptions, MapInit, MapOrigin, Object, TargetBtf};

fn progs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs")
}

fn load(name: &str) -> Option<Object> {
    let p = progs_dir().join(name);
    if !p.exists() {
        println!("SKIP: {} not built yet", p.display());
        return None;
    }
    Some(Object::from_file(&p, &LoadOptions::offline()).unwrap())
}

#[test]
fn every_project_object_loads_with_consistent_streams() {
    let Ok(dir) = std::fs::read_dir(progs_dir()) else {
        println!("SKIP: tests/progs missing");
        return;
    };
    let mut n = 0;
    for e in dir.flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "o") {
            continue;
        }
        let obj = Object::from_file(&p, &LoadOptions::offline()).unwrap_or_else(|e| panic!("{e}"));
        n += 1;
        for prog in obj.programs.iter().filter(|p| p.refused.is_none()) {
            // The final stream decodes, and every bpf-to-bpf call lands on
            // the start of a function listed in func_info.
            let decoded = bpfvet_isa::decode_program(&prog.insns)
                .unwrap_or_else(|e| panic!("{}: {}: {e}", p.display(), prog.name));
            assert!(!decoded.is_empty());
            if !prog.func_info.is_empty() {
                assert_eq!(prog.func_info[0].insn_off, 0);
                assert_eq!(prog.func_info[0].name, prog.name);
            }
            for (pc, i) in prog.insns.iter().enumerate() {
                if i.code == BPF_JMP | BPF_CALL && i.src == BPF_PSEUDO_CALL {
                    let target = (pc as i64 + i.imm as i64 + 1) as u32;
                    assert!(
                        prog.func_info.iter().any(|f| f.insn_off == target),
                        "{}: call at {pc} to {target} is not a function start",
                        prog.name
                    );
                }
                if i.is_ld_imm64() && i.src == BPF_PSEUDO_MAP_IDX_VALUE {
                    let m = &obj.maps[i.imm as usize];
                    let off = prog.insns[pc + 1].imm as u32;
                    // An arena's globals are offsets into its pages.
                    let size = if m.map_type == MapType::ARENA {
                        m.max_entries.saturating_mul(4096)
                    } else {
                        m.value_size
                    };
                    assert!(
                        off < size,
                        "{}: value offset {off} outside {}",
                        prog.name,
                        m.name
                    );
                }
            }
            assert!(prog
                .line_info
                .windows(2)
                .all(|w| w[0].insn_off <= w[1].insn_off));
        }
    }
    assert!(n >= 10, "only {n} objects in tests/progs");
}

#[test]
fn static_and_global_subprograms_are_appended() {
    let Some(obj) = load("calls.bpf.o") else {
        return;
    };
    let prog = &obj.programs[0];
    let names: Vec<&str> = prog.func_info.iter().map(|f| f.name.as_str()).collect();
    // calls.bpf.c: xdp_calls calls packet_ethertype (global) and summarise
    // (static), which calls weigh.
    for f in ["xdp_calls", "packet_ethertype", "summarise", "weigh"] {
        assert!(names.contains(&f), "{f} missing from {names:?}");
    }
    let rodata = obj.maps.iter().find(|m| m.name == "calls.rodata").unwrap();
    assert_eq!(rodata.origin, MapOrigin::GlobalData);
    assert!(rodata.frozen);
    assert_eq!(rodata.value_size, 12); // three __u32 weights
}

#[test]
fn map_in_map_and_prog_array_values() {
    if let Some(obj) = load("map_in_map.bpf.o") {
        let idx = |n: &str| obj.maps.iter().position(|m| m.name == n).unwrap();
        let outer = &obj.maps[idx("by_parity")];
        assert_eq!(outer.map_type, MapType::ARRAY_OF_MAPS);
        assert_eq!(outer.inner.as_ref().unwrap().map_type, MapType::ARRAY);
        assert_eq!(
            outer.init,
            MapInit::InnerMaps(vec![(0, idx("even_counts")), (1, idx("odd_counts"))])
        );
        let by_id = &obj.maps[idx("by_id")];
        assert_eq!(by_id.init, MapInit::InnerMaps(vec![(7, idx("lens_seen"))]));
    }
    if let Some(obj) = load("tail_call.bpf.o") {
        let jt = obj.maps.iter().find(|m| m.name == "jump_table").unwrap();
        assert_eq!(jt.map_type, MapType::PROG_ARRAY);
        let MapInit::Programs(slots) = &jt.init else {
            panic!("no prog slots: {:?}", jt.init)
        };
        let named: Vec<(u32, &str)> = slots
            .iter()
            .map(|(k, p)| (*k, obj.programs[*p].name.as_str()))
            .collect();
        assert!(named.iter().any(|(_, n)| *n == "handle_ipv4"), "{named:?}");
        assert!(named.iter().any(|(_, n)| *n == "handle_ipv6"), "{named:?}");
    }
}

#[test]
fn section_names_give_types() {
    let Some(obj) = load("tracing.bpf.o") else {
        return;
    };
    let by = |n: &str| obj.programs.iter().find(|p| p.name == n).unwrap();
    assert_eq!(by("kprobe_openat2").prog_type, ProgType::KPROBE);
    assert_eq!(by("tp_sys_enter").prog_type, ProgType::TRACEPOINT);
    let btf = by("tp_btf_sched_switch");
    assert_eq!(btf.prog_type, ProgType::TRACING);
    assert_eq!(btf.expected_attach_type, Some(AttachType::TRACE_RAW_TP));
    assert_eq!(btf.attach_target.as_deref(), Some("sched_switch"));
    // Offline: CO-RE relocations are listed and poisoned.
    assert!(!by("kprobe_openat2").core_unresolved.is_empty());
}

#[test]
fn core_offsets_match_host_btf() {
    let Ok(bytes) = std::fs::read("/sys/kernel/btf/vmlinux") else {
        println!("SKIP: /sys/kernel/btf/vmlinux not readable");
        return;
    };
    let p = progs_dir().join("tracing.bpf.o");
    if !p.exists() {
        println!("SKIP: tracing.bpf.o not built");
        return;
    }
    let vmlinux = Btf::from_bytes(&bytes).unwrap();
    // task_struct::tgid looked up by name, independently of the access path.
    let ts = vmlinux
        .find_by_name_kind("task_struct", Kind::Struct)
        .unwrap();
    let t = vmlinux.type_by_id(ts).unwrap();
    let tgid = vmlinux
        .members(t)
        .iter()
        .find(|m| vmlinux.str_at(m.name_off) == Some("tgid"))
        .unwrap()
        .bit_offset
        / 8;
    let opts = LoadOptions {
        target_btf: TargetBtf::Loaded(std::sync::Arc::new(vmlinux)),
        ..LoadOptions::offline()
    };
    let obj = Object::from_file(&p, &opts).unwrap();
    let prog = obj
        .programs
        .iter()
        .find(|p| p.name == "kprobe_openat2")
        .unwrap();
    assert!(
        prog.core_unresolved.is_empty(),
        "{:?}",
        prog.core_unresolved
    );
    // BPF_CORE_READ(task, tgid) adds the field offset as an ALU immediate.
    assert!(
        prog.insns
            .iter()
            .any(|i| i.code == 0xb7 && i.imm as u32 == tgid),
        "no `r = {tgid}` in kprobe_openat2"
    );
}

#[test]
fn exception_callback_is_appended_last_and_optional_sections_classify() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/exception_cb.bpf.o");
    let obj = Object::from_file(&p, &LoadOptions::offline()).unwrap();
    let main = obj
        .programs
        .iter()
        .find(|p| p.name == "with_callback")
        .unwrap();
    let funcs: Vec<&str> = main.func_info.iter().map(|f| f.name.as_str()).collect();
    // add_one is reached by a call; on_exception only through the tag.
    assert_eq!(funcs, ["with_callback", "add_one", "on_exception"]);
    let cb = &main.func_info[2];
    assert!(cb.insn_off as usize > main.func_info[1].insn_off as usize);
    assert_eq!(main.insns.len(), 8);
    let opt = obj.programs.iter().find(|p| p.name == "optional").unwrap();
    assert_eq!(opt.section, "?tc");
    assert_eq!(opt.prog_type, ProgType::SCHED_CLS);
    // The callback is not dragged into programs that do not name it.
    assert!(!opt.func_info.iter().any(|f| f.name == "on_exception"));
}

/// Slot -> constant stored by `*(u64 *)(rX +8*slot) = rY` after `rY = imm`.
fn stored_constants(insns: &[bpfvet_isa::Insn]) -> std::collections::BTreeMap<i16, u64> {
    let mut regs = [None::<u64>; 11];
    let mut out = std::collections::BTreeMap::new();
    let mut pc = 0;
    while pc < insns.len() {
        let i = insns[pc];
        if i.code == 0xb7 {
            regs[i.dst as usize] = Some(i.imm as i64 as u64);
        } else if i.is_ld_imm64() && i.src == 0 {
            regs[i.dst as usize] =
                Some((i.imm as u32 as u64) | ((insns[pc + 1].imm as u32 as u64) << 32));
        } else if i.code == 0x7b {
            if let Some(v) = regs[i.src as usize] {
                out.insert(i.off / 8, v);
            }
        }
        pc += if i.is_ld_imm64() { 2 } else { 1 };
    }
    out
}

#[test]
fn core_relocation_kinds_against_host_btf() {
    let Ok(bytes) = std::fs::read("/sys/kernel/btf/vmlinux") else {
        println!("SKIP: /sys/kernel/btf/vmlinux not readable");
        return;
    };
    let vm = Btf::from_bytes(&bytes).unwrap();
    // Expected values looked up by name in vmlinux BTF, not by access path.
    let strukt = |n: &str| vm.find_by_name_kind(n, Kind::Struct).unwrap();
    let member = |s: &str, m: &str| {
        let t = vm.type_by_id(strukt(s)).unwrap();
        *vm.members(t)
            .iter()
            .find(|x| vm.str_at(x.name_off) == Some(m))
            .unwrap()
    };
    let task = vm.type_by_id(strukt("task_struct")).unwrap();
    let arena = {
        let e = vm.find_by_name_kind("bpf_map_type", Kind::Enum).unwrap();
        let t = vm.type_by_id(e).unwrap();
        vm.enum_values(t)
            .iter()
            .find(|v| vm.str_at(v.name_off) == Some("BPF_MAP_TYPE_ARENA"))
            .unwrap()
            .value as u64
    };
    let fclone = member("sk_buff", "fclone");
    let (bit_off, bits) = (fclone.bit_offset as u64, fclone.bitfield_size as u64);
    let byte_off = bit_off / 8; // a u8 bitfield that fits its byte
    let expected: Vec<u64> = vec![
        member("task_struct", "tgid").bit_offset as u64 / 8,
        16,
        1,
        0,
        0,
        task.size_or_type as u64,
        arena,
        64 - bits,
        64 - (bit_off + bits - byte_off * 8),
    ];
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/core_kinds.bpf.o");
    let opts = LoadOptions {
        target_btf: TargetBtf::Loaded(std::sync::Arc::new(vm.clone())),
        ..LoadOptions::offline()
    };
    let obj = Object::from_file(&p, &opts).unwrap();
    let prog = &obj.programs[0];
    assert!(
        prog.core_unresolved.is_empty(),
        "{:?}",
        prog.core_unresolved
    );
    let got: Vec<u64> = stored_constants(&prog.insns).values().copied().collect();
    assert_eq!(got, expected);
    // Without a target every non-local relocation is poisoned and listed.
    let offline = Object::from_file(&p, &LoadOptions::offline()).unwrap();
    assert_eq!(offline.programs[0].core_unresolved.len(), 9);
    assert!(offline.programs[0]
        .insns
        .iter()
        .any(|i| i.code == 0x85 && i.imm == 195896080));
}

#[test]
fn kconfig_externs_are_laid_out_and_filled_like_libbpf() {
    let dir = std::env::temp_dir().join(format!("bpfvet-kconfig-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("config");
    std::fs::write(&cfg, "CONFIG_HZ=1000\nCONFIG_BPF_SYSCALL=y\nCONFIG_BPF_JIT=m\n# CONFIG_BPFVET_NOT_SET is not set\n").unwrap();
    let opts = LoadOptions {
        kconfig: Some(cfg),
        kernel_version: (6 << 16) | (18 << 8),
        ..LoadOptions::offline()
    };
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kconfig.bpf.o");
    let obj = Object::from_file(&p, &opts).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let km = obj
        .maps
        .iter()
        .find(|m| m.origin == MapOrigin::Kconfig)
        .unwrap();
    assert_eq!(km.name, "kconfig.kconfig");
    // libbpf's order: alignment descending, then size, then name:
    // CONFIG_BPF_JIT (tristate m = 2), CONFIG_HZ, LINUX_KERNEL_VERSION,
    // CONFIG_BPFVET_NOT_SET (weak, unset), CONFIG_BPF_SYSCALL (bool).
    let mut want = Vec::new();
    want.extend_from_slice(&2u32.to_le_bytes());
    want.extend_from_slice(&1000i32.to_le_bytes());
    want.extend_from_slice(&0x0006_1200u32.to_le_bytes());
    want.extend_from_slice(&[0, 1]);
    assert_eq!(km.init, MapInit::Data(want));
    assert!(
        obj.unresolved_externs.is_empty(),
        "{:?}",
        obj.unresolved_externs
    );
    // Without a config the strong CONFIG_* externs are reported.
    let bare = Object::from_file(&p, &LoadOptions::offline()).unwrap();
    assert_eq!(
        bare.unresolved_externs.len(),
        3,
        "{:?}",
        bare.unresolved_externs
    );
}

#[test]
fn iproute2_outer_map_gets_the_template_its_inner_id_names() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/iproute2_map_in_map.bpf.o");
    let obj = Object::from_file(&p, &LoadOptions::offline()).unwrap();
    let map = |name: &str| {
        obj.maps
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("no map {name}"))
    };
    let outer = map("slots_by_tenant");
    assert_eq!(outer.map_type, MapType::HASH_OF_MAPS);
    let inner = outer.inner.as_deref().expect("template linked by inner_id");
    // The template's own definition (id 7): ARRAY, 4-byte keys, u64 values.
    assert_eq!(
        (
            inner.map_type,
            inner.key_size,
            inner.value_size,
            inner.max_entries
        ),
        (MapType::ARRAY, 4, 8, 8)
    );
    // inner_id 99 names no map; a template is never its own outer.
    assert!(map("orphan_outer").inner.is_none());
    assert!(map("slots_template").inner.is_none());
}

/// The line a line-info list gives instruction `i`: (file base name, line).
fn line_of(lines: &[bpfvet_object::LineInfo], i: usize) -> Option<(String, u32)> {
    let k = lines
        .partition_point(|l| l.insn_off as usize <= i)
        .checked_sub(1)?;
    let l = &lines[k];
    let base = l.file_name.rsplit('/').next().unwrap_or(&l.file_name);
    Some((base.to_string(), l.line))
}

/// The objects are built with -g: DWARF's line table and BTF's line_info
/// come from the same compilation, so the DWARF fallback (for objects
/// without BTF.ext) must name the lines BTF names, across subprograms too.
#[test]
fn dwarf_line_table_agrees_with_btf_line_info() {
    let Ok(dir) = std::fs::read_dir(progs_dir()) else {
        println!("SKIP: tests/progs missing");
        return;
    };
    let (mut compared, mut same, mut with_subprogs) = (0usize, 0usize, 0usize);
    for e in dir.flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "o") {
            continue;
        }
        let bytes = std::fs::read(&p).expect("read object");
        let obj = Object::from_file(&p, &LoadOptions::offline()).unwrap_or_else(|e| panic!("{e}"));
        for prog in obj.programs.iter().filter(|p| p.refused.is_none()) {
            let dwarf = bpfvet_object::dwarf_lines::dwarf_line_info(&bytes, prog);
            assert!(
                dwarf.windows(2).all(|w| w[0].insn_off < w[1].insn_off),
                "{}: sorted",
                prog.name
            );
            with_subprogs += (prog.placement.len() > 1) as usize;
            // BTF names a line where DWARF has a row; instructions between
            // BTF's entries inherit the previous entry, so compare at them.
            for l in &prog.line_info {
                let i = l.insn_off as usize;
                let btf = line_of(&prog.line_info, i);
                let dw = line_of(&dwarf, i);
                compared += 1;
                same += (btf == dw) as usize;
            }
        }
    }
    println!("dwarf vs btf: {same}/{compared} line_info entries agree");
    assert!(compared > 1000, "{compared}");
    assert!(with_subprogs > 0);
    // Clang's BTF line_info takes DWARF's rows (is_stmt ones, without
    // line 0), so nearly every entry agrees.
    assert!(same * 100 >= compared * 95, "{same}/{compared}");
}
