//! Differential test against the host kernel's BPF_PROG_TEST_RUN: every
//! packet-driven program of tests/progs on every frame of
//! tests/progs/packets, comparing the return value (or the EINVAL refusal),
//! the output frame, and the maps' contents after all frames, for the
//! interpreter and for the JIT (each on its own copy of the maps). Needs
//! root and the bpf() syscall; prints SKIP otherwise.

use std::path::{Path, PathBuf};

use bpfvet_isa::uapi::MapType;
use bpfvet_kernel::{Kernel, LoadOptions, TestRunInput as KInput};
use bpfvet_object::{LoadOptions as ObjectOptions, MapInit, Object};
use bpfvet_vm::{test_run, test_run_with, Jit, TestRunInput, Vm, VmError};

fn progs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs")
}

/// (object, program): the programs whose input is a packet and whose
/// result does not depend on the host (see tests/progs/run_packets.py).
const PROGRAMS: &[(&str, &str)] = &[
    ("xdp_parser.bpf.o", "xdp_parse_flows"),
    ("xdp_parser.bpf.o", "xdp_vlan_pop"),
    ("tc_classifier.bpf.o", "tc_classify"),
    ("socket_filter.bpf.o", "sock_count_ipproto"),
    ("socket_filter.bpf.o", "sock_ldabs_ssh"),
    ("flow_dissector.bpf.o", "dissect"),
    ("cgroup_skb.bpf.o", "cgroup_egress_filter"),
    ("tail_call.bpf.o", "xdp_dispatch"),
    ("helpers_net.bpf.o", "xdp_trim_padding"),
    ("calls.bpf.o", "xdp_calls"),
    ("global_data.bpf.o", "xdp_global_data"),
    ("loops.bpf.o", "xdp_for_loop"),
    ("loops.bpf.o", "xdp_tlv_walk"),
    ("loops.bpf.o", "xdp_collatz"),
    ("callbacks.bpf.o", "xdp_bpf_loop"),
    ("callbacks.bpf.o", "xdp_for_each"),
    ("kfunc_iter.bpf.o", "xdp_iter_num"),
    ("kfunc_iter.bpf.o", "xdp_may_goto"),
    ("kfunc_iter.bpf.o", "xdp_may_goto_sum"),
    ("v4_insns.bpf.o", "xdp_signed_ops"),
    ("v4_insns.bpf.o", "xdp_long_jump"),
    ("atomics.bpf.o", "xdp_atomics"),
    ("map_in_map.bpf.o", "xdp_map_in_map"),
    ("maps_misc.bpf.o", "xdp_map_types"),
    ("ringbuf.bpf.o", "xdp_ringbuf_sample"),
    ("ringbuf.bpf.o", "xdp_ringbuf_dynptr"),
    ("spin_lock.bpf.o", "tc_spin_lock"),
    ("stress_states.bpf.o", "state_stress"),
    ("dynptr.bpf.o", "xdp_dynptr_local"),
    ("dynptr.bpf.o", "xdp_dynptr_user_ringbuf"),
    ("dynptr.bpf.o", "xdp_dynptr_global"),
];

fn packets() -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(progs_dir().join("packets"))
        .expect("tests/progs/packets")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).expect("packet"))
        })
        .collect();
    v.sort();
    v
}

/// Per-CPU values summed over CPUs word by word, so a run on another CPU
/// compares equal.
fn fold_percpu(v: &[u8], value_size: usize, cpus: usize) -> Vec<u8> {
    let stride = value_size.div_ceil(8) * 8;
    let mut out = vec![0u64; stride / 8];
    for c in 0..cpus {
        for (i, w) in v[c * stride..(c + 1) * stride].chunks(8).enumerate() {
            out[i] = out[i].wrapping_add(u64::from_le_bytes(w.try_into().unwrap()));
        }
    }
    out.iter().flat_map(|w| w.to_le_bytes()).collect()
}

#[test]
fn programs_agree_with_kernel_test_run() {
    let kernel = match Kernel::open() {
        Ok(k) => k,
        Err(e) => {
            println!("SKIP: {e}");
            return;
        }
    };
    let frames = packets();
    assert!(frames.len() > 30, "packets/ has the crafted frames");
    let mut failures = Vec::new();
    let mut compared = 0;
    for &(file, prog_name) in PROGRAMS {
        let obj = Object::from_file(progs_dir().join(file), &ObjectOptions::default())
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let idx = obj
            .programs
            .iter()
            .position(|p| p.name == prog_name)
            .unwrap_or_else(|| panic!("{prog_name} in {file}"));
        let session = kernel.open_object(&obj);
        let report = session.load_program(idx, &LoadOptions::default()).unwrap();
        let Some(kprog) = report.loaded else {
            panic!("{prog_name}: kernel did not load it: {:?}", report.verdict);
        };
        // Prog-array slots, as libbpf fills them after loading.
        let mut keep = Vec::new();
        for (mi, def) in obj.maps.iter().enumerate() {
            if let MapInit::Programs(slots) = &def.init {
                for &(slot, p) in slots {
                    let r = session.load_program(p, &LoadOptions::default()).unwrap();
                    let lp = r.loaded.expect("tail-call target loads");
                    let m = session.map(mi).unwrap().as_ref().expect("prog array");
                    m.update(
                        &slot.to_le_bytes(),
                        &(lp.fd().raw() as u32).to_le_bytes(),
                        0,
                    )
                    .expect("prog array update");
                    keep.push(lp);
                }
            }
        }
        let (vm, jit_vm, mut proven_vm, mut proven_interp_vm) = match (
            Vm::load(&obj),
            Vm::load(&obj),
            Vm::load(&obj),
            Vm::load(&obj),
        ) {
            (Ok(vm), Ok(jit_vm), Ok(proven_vm), Ok(pi)) => (vm, jit_vm, proven_vm, pi),
            (Err(e), _, _, _) | (_, Err(e), _, _) | (_, _, Err(e), _) | (_, _, _, Err(e)) => {
                failures.push(format!("{prog_name}: load: {e}"));
                continue;
            }
        };
        // The third and fourth engines: the JIT and the interpreter with
        // the verifier's proof of the program and of its tail-call targets.
        let targets = obj.maps.iter().flat_map(|def| match &def.init {
            MapInit::Programs(slots) => slots.iter().map(|&(_, p)| p).collect(),
            _ => Vec::new(),
        });
        for p in std::iter::once(idx).chain(targets) {
            if let Err(e) = proven_vm.verify_program(&obj, p) {
                failures.push(format!("{prog_name}: bpfvet's verifier: {e}"));
            }
            if let Err(e) = proven_interp_vm.verify_program(&obj, p) {
                failures.push(format!("{prog_name}: bpfvet's verifier: {e}"));
            }
        }
        let (proven_vm, proven_interp_vm) = (proven_vm, proven_interp_vm);
        let jit = Jit::compile_checked(&jit_vm);
        let proven = Jit::compile(&proven_vm);
        if let Some(why) = jit.declined(idx) {
            println!("{prog_name}: JIT declines ({why}); the interpreter runs it");
        }
        for (name, data) in &frames {
            // The kernel's may_goto budget is a time limit on x86-64; these
            // frames run until it is spent (EXPECTED.md).
            if prog_name == "xdp_may_goto_sum"
                && (name == "raw_32_equal_bytes" || name == "raw_tlv_ok")
            {
                continue;
            }
            let k = kprog.test_run(&KInput {
                data,
                data_out_size: 4096,
                repeat: 1,
                ..Default::default()
            });
            let input = TestRunInput {
                data,
                ctx: None,
                repeat: 1,
                cpu: 0,
            };
            let v = test_run(&vm, idx, &input);
            let j = test_run_with(&jit, &jit_vm, idx, &input);
            let pj = test_run_with(&proven, &proven_vm, idx, &input);
            let pi = test_run(&proven_interp_vm, idx, &input);
            compared += 1;
            for (engine, j) in [
                ("jit", &j),
                ("proven jit", &pj),
                ("proven interpreter", &pi),
            ] {
                let same = match (&v, j) {
                    (Ok(v), Ok(j)) => v.retval == j.retval && v.data_out == j.data_out,
                    (Err(v), Err(j)) => v.to_string() == j.to_string(),
                    _ => false,
                };
                if !same {
                    failures.push(format!(
                        "{prog_name} {name}: interpreter {:?} {engine} {:?}",
                        v.as_ref().map(|o| o.retval),
                        j.as_ref().map(|o| o.retval)
                    ));
                }
            }
            match (k, v) {
                (Ok(k), Ok(v)) => {
                    if k.retval != v.retval {
                        failures.push(format!(
                            "{prog_name} {name}: retval kernel {} vm {}",
                            k.retval, v.retval
                        ));
                    } else if k.data_out != v.data_out {
                        failures.push(format!(
                            "{prog_name} {name}: data_out differs (kernel {} bytes, vm {})",
                            k.data_out.len(),
                            v.data_out.len()
                        ));
                    }
                }
                (Err(e), Err(VmError::Invalid(_))) if e.0 == 22 => {}
                (k, v) => failures.push(format!(
                    "{prog_name} {name}: kernel {k:?} vm {:?}",
                    v.map(|o| o.retval)
                )),
            }
        }
        // Map contents after all frames.
        for (mi, def) in obj.maps.iter().enumerate() {
            if matches!(
                def.map_type,
                MapType::PROG_ARRAY
                    | MapType::RINGBUF
                    | MapType::USER_RINGBUF
                    | MapType::ARRAY_OF_MAPS
                    | MapType::HASH_OF_MAPS
                    | MapType::PERF_EVENT_ARRAY
            ) {
                continue;
            }
            // Time stamps and random numbers differ by design.
            if prog_name == "xdp_trim_padding" && def.name.ends_with(".bss") {
                continue;
            }
            let Some(Ok(km)) = session.map(mi) else {
                continue;
            };
            for (engine, ours) in [
                ("vm", &vm.maps[mi]),
                ("jit", &jit_vm.maps[mi]),
                ("proven jit", &proven_vm.maps[mi]),
                ("proven interpreter", &proven_interp_vm.maps[mi]),
            ] {
                let percpu = ours.attr().is_percpu();
                let cpus = ours.attr().nr_cpus as usize;
                let mut key: Option<Vec<u8>> = None;
                let mut n = 0;
                while let Ok(Some(next)) = km.next_key(key.as_deref()) {
                    n += 1;
                    let kv = km.lookup(&next).unwrap().unwrap_or_default();
                    let mut ov = vec![0u8; ours.attr().syscall_value_size()];
                    match ours.lookup(&next, &mut ov, 0) {
                        Ok(()) => {
                            let (kv, ov) = if percpu {
                                let vs = def.value_size as usize;
                                (
                                    fold_percpu(&kv, vs, km_cpus(&kv, vs).min(cpus)),
                                    fold_percpu(&ov, vs, cpus),
                                )
                            } else {
                                (kv[..ov.len().min(kv.len())].to_vec(), ov)
                            };
                            if kv != ov {
                                failures.push(format!("{prog_name}: map {} key {next:02x?}: kernel {kv:02x?} {engine} {ov:02x?}", def.name));
                            }
                        }
                        Err(e) => failures.push(format!(
                            "{prog_name}: map {} key {next:02x?} missing in the {engine}: {e}",
                            def.name
                        )),
                    }
                    key = Some(next);
                }
                // The vm holds no keys the kernel lacks.
                let mut ours_n = 0;
                let mut k2: Option<Vec<u8>> = None;
                let mut buf = vec![0u8; def.key_size as usize];
                while ours.get_next_key(k2.as_deref(), &mut buf).is_ok() {
                    ours_n += 1;
                    k2 = Some(buf.clone());
                }
                if ours_n != n {
                    failures.push(format!(
                        "{prog_name}: map {} has {n} keys in the kernel, {ours_n} in the {engine}",
                        def.name
                    ));
                }
            }
        }
        drop(keep);
    }
    println!("compared {compared} runs");
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The kernel's per-CPU value count from the buffer it returned.
fn km_cpus(v: &[u8], value_size: usize) -> usize {
    v.len() / value_size.div_ceil(8) / 8
}
