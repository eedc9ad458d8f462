//! `bpfvet conformance-plugin`: the plugin protocol of the bpf_conformance
//! suite. The program comes on stdin as hex bytes (or, with --elf, as an
//! ELF object, hex-encoded as the suite's runner sends it or raw, whose
//! first program runs), the input memory as a hex argument; r1 = the
//! memory's address (0 without memory), r2 = its length. r0 is printed in
//! hex; an error goes to stderr with a non-zero exit.
//!
//! The runner starts the plugin as `PLUGIN [MEMORY] PLUGIN_OPTIONS... [--elf]`
//! with PLUGIN_OPTIONS split on single spaces, so with
//! `--plugin_path bpfvet --plugin_options "conformance-plugin --jit"` the
//! subcommand comes after the memory: [`subcommand_first`] moves it to the
//! front, and options may come before or after the memory.

use std::ffi::OsString;
use std::io::Read;
use std::process::ExitCode;

use anyhow::Context;

pub const NAME: &str = "conformance-plugin";

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Input memory as hex bytes (spaces allowed). Empty arguments (the
    /// runner makes one from a doubled space in its plugin options) are
    /// ignored.
    pub memory: Vec<String>,
    /// Read an ELF object from stdin (hex-encoded or raw) instead of hex
    /// instructions.
    #[arg(long, overrides_with = "elf")]
    pub elf: bool,
    /// Run on bpfvet's JIT; a program it declines runs on the interpreter
    /// (said on stderr).
    #[arg(long, overrides_with = "jit")]
    pub jit: bool,
    /// With --jit: fail on a program the JIT declines instead of running
    /// it on the interpreter (to measure the JIT alone).
    #[arg(long, overrides_with = "jit_only", requires = "jit")]
    pub jit_only: bool,
}

/// `argv` with `conformance-plugin` moved right after the program name
/// when the runner put it after the memory argument. Nothing changes when
/// argv[1] is already a subcommand (`subcommands`) or an option.
pub fn subcommand_first(mut argv: Vec<OsString>, subcommands: &[&str]) -> Vec<OsString> {
    let first_is_command = argv.get(1).is_none_or(|a| {
        let a = a.to_string_lossy();
        a.starts_with('-') || subcommands.contains(&a.as_ref())
    });
    if first_is_command {
        return argv;
    }
    if let Some(i) = argv.iter().position(|a| a == NAME) {
        let sub = argv.remove(i);
        argv.insert(1, sub);
    }
    argv
}

/// Hex bytes, ignoring whitespace and an optional 0x per byte group.
fn parse_hex(s: &str) -> anyhow::Result<Vec<u8>> {
    let digits: String = s
        .split_whitespace()
        .map(|w| w.trim_start_matches("0x"))
        .collect();
    if !digits.len().is_multiple_of(2) {
        anyhow::bail!("odd number of hex digits");
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            let pair = digits.get(i..i + 2).context("non-ASCII input")?;
            u8::from_str_radix(pair, 16).with_context(|| format!("bad hex byte {pair:?}"))
        })
        .collect()
}

/// The one non-blank memory argument, if any.
fn memory_arg(memory: &[String]) -> anyhow::Result<Option<&str>> {
    let mut given = memory.iter().filter(|m| !m.trim().is_empty());
    let first = given.next();
    if let Some(extra) = given.next() {
        anyhow::bail!("more than one memory argument (also {extra:?})");
    }
    Ok(first.map(String::as_str))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut input = Vec::new();
    std::io::stdin()
        .read_to_end(&mut input)
        .context("reading stdin")?;
    let memory = memory_arg(&args.memory)?;
    let engine = if args.jit {
        Engine::Jit
    } else {
        Engine::Interpreter
    };
    let (r0, declined) = answer(&input, memory, args.elf, engine)?;
    if let Some(why) = declined {
        if args.jit_only {
            anyhow::bail!("the JIT declined the program: {why}");
        }
        eprintln!("bpfvet: the JIT declined the program ({why}); it ran on the interpreter");
    }
    println!("{r0:x}");
    Ok(ExitCode::SUCCESS)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Engine {
    Interpreter,
    Jit,
}

const ELF_MAGIC: &[u8] = b"\x7fELF";

/// The bytes of an ELF object as the protocol passes it: raw, or hex text.
fn elf_bytes(input: &[u8]) -> anyhow::Result<Vec<u8>> {
    if input.starts_with(ELF_MAGIC) {
        return Ok(input.to_vec());
    }
    let text = std::str::from_utf8(input).context("stdin is neither an ELF object nor hex text")?;
    let bytes = parse_hex(text).context("hex-encoded ELF object")?;
    if !bytes.starts_with(ELF_MAGIC) {
        anyhow::bail!("stdin is not an ELF object: no ELF magic, raw or hex-encoded");
    }
    Ok(bytes)
}

/// r0 of the program in `input` run on `memory` (both as the protocol
/// passes them), and why the JIT declined it, when it did.
fn answer(
    input: &[u8],
    memory: Option<&str>,
    elf: bool,
    engine: Engine,
) -> anyhow::Result<(u64, Option<bpfvet_vm::Decline>)> {
    let insns = if elf {
        let bytes = elf_bytes(input)?;
        // The suite's objects hold one global function in `.text` and no
        // SEC(): list it as a program; nothing on the host is consulted.
        let opts = bpfvet_object::LoadOptions {
            target_btf: bpfvet_object::TargetBtf::None,
            kallsyms: None,
            kconfig: None,
            text_programs: true,
            ..Default::default()
        };
        let obj = bpfvet_object::Object::parse(&bytes, "stdin.o", &opts)
            .context("parsing the ELF object")?;
        obj.programs
            .first()
            .context("the ELF object has no program")?
            .insns
            .clone()
    } else {
        let text = std::str::from_utf8(input).context("stdin is not text")?;
        let bytes = parse_hex(text).context("program")?;
        bpfvet_isa::insns_from_bytes(&bytes)?
    };
    let mut memory = match memory {
        Some(m) => parse_hex(m).context("memory argument")?,
        None => Vec::new(),
    };
    Ok(match engine {
        Engine::Interpreter => (bpfvet_vm::run_on_memory(&insns, &mut memory)?, None),
        Engine::Jit => bpfvet_vm::run_on_memory_jit(&insns, &mut memory)?,
    })
}

#[cfg(test)]
mod tests {
    use super::{answer, elf_bytes, memory_arg, subcommand_first, Engine};

    fn interp(prog: &str, memory: Option<&str>) -> anyhow::Result<u64> {
        answer(prog.as_bytes(), memory, false, Engine::Interpreter).map(|(r0, _)| r0)
    }

    /// r0 from both engines, which must agree; the JIT must not decline.
    fn both(prog: &str, memory: Option<&str>) -> u64 {
        let i = interp(prog, memory).unwrap();
        let (j, declined) = answer(prog.as_bytes(), memory, false, Engine::Jit).unwrap();
        assert_eq!(declined, None, "the JIT declined {prog}");
        assert_eq!(i, j, "interpreter and JIT differ on {prog}");
        i
    }

    #[test]
    fn sums_two_words_of_memory() {
        // r0 = *(u32 *)(r1 +0); r2 = *(u32 *)(r1 +4); r0 += r2; exit
        let prog = "61 10 00 00 00 00 00 00 61 12 04 00 00 00 00 00 0f 20 00 00 00 00 00 00 95 00 00 00 00 00 00 00";
        assert_eq!(both(prog, Some("05 00 00 00 0a 00 00 00")), 15);
    }

    #[test]
    fn r2_is_the_memory_length() {
        // r0 = r2; exit
        let prog = "bf 20 00 00 00 00 00 00 95 00 00 00 00 00 00 00";
        assert_eq!(both(prog, Some("00 11 22 33 44 55")), 6);
        assert_eq!(both(prog, None), 0);
    }

    #[test]
    fn division_by_zero_is_zero_and_lddw_is_64_bit() {
        // r0 = 0x1122334455667788 ll; r1 = 0; r0 /= r1; exit
        let prog = concat!(
            "18 00 00 00 88 77 66 55 00 00 00 00 44 33 22 11 ",
            "b7 01 00 00 00 00 00 00 3f 10 00 00 00 00 00 00 95 00 00 00 00 00 00 00"
        );
        assert_eq!(both(prog, None), 0);
        let lddw = "18 00 00 00 88 77 66 55 00 00 00 00 44 33 22 11 95 00 00 00 00 00 00 00";
        assert_eq!(both(lddw, None), 0x1122_3344_5566_7788);
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        assert!(interp("zz", None).is_err());
        assert!(interp("95 00 00", None).is_err());
        // Reading past the memory stops the run with an error.
        let prog = "79 10 08 00 00 00 00 00 95 00 00 00 00 00 00 00";
        assert!(interp(prog, Some("01 02")).is_err());
        assert!(answer(prog.as_bytes(), Some("01 02"), false, Engine::Jit).is_err());
        // An ELF that is not one, raw or as hex.
        for input in [&b"not an elf"[..], b"00 01 02 03", "é".as_bytes()] {
            assert!(answer(input, None, true, Engine::Interpreter).is_err());
        }
    }

    /// `call %r2` with r2 = 5, a helper ID (bpf_ktime_get_ns): the helper
    /// runs, then r0 = 2 (the suite's callx test).
    #[test]
    fn callx_of_a_helper_id() {
        // r1 = -1; r2 = 5; call %r2; r0 = 2; exit
        let prog = concat!(
            "b7 01 00 00 ff ff ff ff b7 02 00 00 05 00 00 00 8d 02 00 00 00 00 00 00 ",
            "b7 00 00 00 02 00 00 00 95 00 00 00 00 00 00 00"
        );
        assert_eq!(both(prog, None), 2);
        // The helper's result lands in r0: bpf_get_smp_processor_id (8)
        // gives CPU 0, while an unrun call would leave r0 = 77.
        let smp_id = concat!(
            "b7 00 00 00 4d 00 00 00 b7 03 00 00 08 00 00 00 8d 03 00 00 00 00 00 00 ",
            "95 00 00 00 00 00 00 00"
        );
        assert_eq!(both(smp_id, None), 0);
    }

    /// `call %r3` with r3 = the address of a function (LD_IMM64 of a
    /// function): the function runs with r1..r5 and its own frame, and
    /// r6..r9 survive the call.
    #[test]
    fn callx_of_a_function_address() {
        let prog = concat!(
            // 0: r3 = &fn (at 8) ll
            "18 43 00 00 07 00 00 00 00 00 00 00 00 00 00 00 ",
            // 2: r1 = 40; 3: r6 = 7; 4: call %r3; 5: r0 += r6; 6: exit
            "b7 01 00 00 28 00 00 00 b7 06 00 00 07 00 00 00 8d 03 00 00 00 00 00 00 ",
            "0f 60 00 00 00 00 00 00 95 00 00 00 00 00 00 00 ",
            // 7: unreachable filler
            "b7 00 00 00 63 00 00 00 ",
            // 8: fn: r6 = 1000; r0 = r1; r0 += 2; exit
            "b7 06 00 00 e8 03 00 00 bf 10 00 00 00 00 00 00 07 00 00 00 02 00 00 00 ",
            "95 00 00 00 00 00 00 00"
        );
        assert_eq!(both(prog, None), 49);
    }

    #[test]
    fn callx_of_something_else_fails_by_name() {
        // r2 = -1; call %r2; exit
        let prog = concat!(
            "b7 02 00 00 ff ff ff ff 8d 02 00 00 00 00 00 00 ",
            "95 00 00 00 00 00 00 00"
        );
        let e = interp(prog, None).unwrap_err();
        assert!(format!("{e:#}").contains("neither a function"), "{e:#}");
        let e = answer(prog.as_bytes(), None, false, Engine::Jit).unwrap_err();
        assert!(format!("{e:#}").contains("neither a function"), "{e:#}");
    }

    #[test]
    fn elf_input_is_hex_as_the_runner_sends_it_or_raw() {
        let raw = b"\x7fELF\x02\x01rest".to_vec();
        assert_eq!(elf_bytes(&raw).unwrap(), raw);
        // The runner's encoding: two spaces after each byte, a newline.
        let hex: String = raw.iter().map(|b| format!("{b:02x}  ")).collect::<String>() + "\n";
        assert_eq!(elf_bytes(hex.as_bytes()).unwrap(), raw);
        assert!(elf_bytes(b"7f 45 4c 00").is_err());
    }

    #[test]
    fn memory_argument_ignores_blank_ones() {
        let m = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(memory_arg(&m(&[])).unwrap(), None);
        assert_eq!(memory_arg(&m(&["", "01  02  "])).unwrap(), Some("01  02  "));
        assert!(memory_arg(&m(&["01", "02"])).is_err());
    }

    #[test]
    fn subcommand_moves_to_the_front_only_when_the_runner_put_it_later() {
        let v = |a: &[&str]| {
            a.iter()
                .map(Into::into)
                .collect::<Vec<std::ffi::OsString>>()
        };
        let subs = ["verify", "conformance-plugin"];
        assert_eq!(
            subcommand_first(
                v(&["bpfvet", "01  02  ", "conformance-plugin", "--jit", "--elf"]),
                &subs
            ),
            v(&["bpfvet", "conformance-plugin", "01  02  ", "--jit", "--elf"])
        );
        let untouched = v(&["bpfvet", "verify", "conformance-plugin"]);
        assert_eq!(subcommand_first(untouched.clone(), &subs), untouched);
        let untouched = v(&["bpfvet", "--help", "conformance-plugin"]);
        assert_eq!(subcommand_first(untouched.clone(), &subs), untouched);
    }
}
