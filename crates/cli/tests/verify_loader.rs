//! `bpfvet verify` on objects of other loaders' conventions
//! (tests/progs/loader_*): program refusals by name, pin-flag warnings,
//! and program types given per section with --prog-type / --prog-types.

use std::path::PathBuf;
use std::process::{Command, Output};

fn prog(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/progs")
        .join(name)
        .display()
        .to_string()
}

fn verify(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bpfvet"))
        .args(["verify", "-o", "csv", "-e", "file,prog,verdict"])
        .args(args)
        .output()
        .expect("run bpfvet")
}

fn out(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_program_the_loader_refuses_is_a_row_with_its_reason() {
    let (stdout, stderr) = out(&verify(&[&prog("loader_extern_one_prog.bpf.o")]));
    assert!(
        stdout.contains("loader_extern_one_prog.bpf.o,xdp_calls_memcpy,failure\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("loader_extern_one_prog.bpf.o,xdp_plain,success\n"),
        "{stdout}"
    );
    assert!(
        stderr.contains(
            "xdp_calls_memcpy (bpfvet): refused: the object loader refused this program: \
             section 'xdp': bad extern: no BTF for extern 'memcpy'"
        ),
        "{stderr}"
    );
}

#[test]
fn other_loaders_pin_flags_are_warnings() {
    let o = verify(&[&prog("loader_pin_flag.bpf.o")]);
    let (stdout, stderr) = out(&o);
    assert!(
        stdout.contains(",tc_count_and_tail_call,success\n"),
        "{stdout}"
    );
    // Cilium's flag names the loader; the value it does not know warns.
    assert!(stderr.contains("read as cilium reads it"), "{stderr}");
    assert!(
        stderr.contains("warning: map 'packets': pinning value 2 means nothing to cilium"),
        "{stderr}"
    );
    assert!(!stderr.contains("warning: map 'calls'"), "{stderr}");
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let (_, stderr) = out(&verify(&[
        "--loader",
        "libbpf",
        &prog("loader_pin_flag.bpf.o"),
    ]));
    assert!(
        stderr.contains("warning: map 'calls': pinning value 16 means nothing to libbpf"),
        "{stderr}"
    );
    assert!(!stderr.contains("read as"), "{stderr}");
}

#[test]
fn iproute2_tail_call_sections_take_the_entry_type() {
    let obj = prog("loader_iproute2.bpf.o");
    let (stdout, stderr) = out(&verify(&[&obj]));
    assert!(stdout.contains(",tail_mark,success\n"), "{stdout}");
    assert!(stderr.contains("read as iproute2 reads it"), "{stderr}");
    // As libbpf reads it, the numbered section has no type.
    let (stdout, stderr) = out(&verify(&["--loader", "libbpf", &obj]));
    assert!(stdout.contains(",tail_mark,failure\n"), "{stdout}");
    assert!(
        stderr.contains("no program type: section '1/0'"),
        "{stderr}"
    );
    let o = verify(&["--loader", "nonsense", &obj]);
    assert_eq!(o.status.code(), Some(2));
    assert!(out(&o).1.contains("unknown loader 'nonsense'"));
}

#[test]
fn unknown_sections_are_refused_until_typed() {
    let obj = prog("loader_unknown_section.bpf.o");
    let (stdout, stderr) = out(&verify(&[&obj]));
    assert!(
        stdout.contains(",prog_in_unknown_section,failure\n"),
        "{stdout}"
    );
    assert!(
        stderr.contains("prog_in_unknown_section (bpfvet): refused: not modelled by bpfvet: no program type: section 'mysec'"),
        "{stderr}"
    );
    // A section rule, the plain form, and a rules file all type it.
    let rules = std::env::temp_dir().join(format!("bpfvet-prog-types-{}", std::process::id()));
    std::fs::write(&rules, "# section rules\n\nmy*=xdp:xdp\n").unwrap();
    let rules_arg = rules.display().to_string();
    for args in [
        vec!["--prog-type", "mysec=xdp"],
        vec!["--prog-type", "xdp"],
        vec!["--prog-types", rules_arg.as_str()],
    ] {
        let mut all = args.clone();
        all.push(&obj);
        let (stdout, stderr) = out(&verify(&all));
        assert!(
            stdout.contains(",prog_in_unknown_section,success\n")
                && stdout.contains(",xdp_known_section,success\n"),
            "{args:?}: {stdout}{stderr}"
        );
    }
    let _ = std::fs::remove_file(&rules);
    // A rule for another section leaves it untyped.
    let (stdout, _) = out(&verify(&["--prog-type", "other=xdp", &obj]));
    assert!(
        stdout.contains(",prog_in_unknown_section,failure\n"),
        "{stdout}"
    );
}

#[test]
fn bad_rules_are_errors() {
    for rule in ["mysec=nonsense", "=xdp", "mysec=xdp:nonsense"] {
        let o = verify(&["--prog-type", rule, &prog("loader_unknown_section.bpf.o")]);
        assert_eq!(o.status.code(), Some(2), "{rule}");
    }
}

#[test]
fn text_functions_are_programs_only_when_typed() {
    let obj = prog("loader_text_only.bpf.o");
    let (stdout, stderr) = out(&verify(&[&obj]));
    assert!(!stdout.contains("text_only_func"), "{stdout}");
    assert!(stderr.contains("no programs"), "{stderr}");
    let (stdout, stderr) = out(&verify(&["--prog-type", ".text=xdp", &obj]));
    assert!(
        stdout.contains("loader_text_only.bpf.o,text_only_func,success\n"),
        "{stdout}{stderr}"
    );
}
