//! `bpfvet conformance-plugin`: the plugin protocol of the bpf_conformance
//! suite. The program comes on stdin as hex bytes (or as an ELF object with
//! --elf, whose first program runs), the input memory as a hex argument;
//! r1 = the memory's address (0 without memory), r2 = its length. r0 is
//! printed in hex; an error goes to stderr with a non-zero exit.

use std::io::Read;
use std::process::ExitCode;

use anyhow::Context;

#[derive(clap::Args)]
pub struct Args {
    /// Input memory as hex bytes (spaces allowed).
    pub memory: Option<String>,
    /// Read an ELF object from stdin instead of hex instructions.
    #[arg(long)]
    pub elf: bool,
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
            u8::from_str_radix(&digits[i..i + 2], 16)
                .with_context(|| format!("bad hex byte {:?}", &digits[i..i + 2]))
        })
        .collect()
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut input = Vec::new();
    std::io::stdin()
        .read_to_end(&mut input)
        .context("reading stdin")?;
    let r0 = answer(&input, args.memory.as_deref(), args.elf)?;
    println!("{r0:x}");
    Ok(ExitCode::SUCCESS)
}

/// r0 of the program in `input` run on `memory` (both as the protocol
/// passes them).
fn answer(input: &[u8], memory: Option<&str>, elf: bool) -> anyhow::Result<u64> {
    let insns = if elf {
        let path = std::env::temp_dir().join(format!("bpfvet-conformance-{}", std::process::id()));
        std::fs::write(&path, input).context("writing the ELF to a temporary file")?;
        let obj = bpfvet_object::Object::from_file(&path, &Default::default());
        let _ = std::fs::remove_file(&path);
        let obj = obj.context("parsing the ELF object")?;
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
    Ok(bpfvet_vm::run_on_memory(&insns, &mut memory)?)
}

#[cfg(test)]
mod tests {
    use super::answer;

    #[test]
    fn sums_two_words_of_memory() {
        // r0 = *(u32 *)(r1 +0); r2 = *(u32 *)(r1 +4); r0 += r2; exit
        let prog = "61 10 00 00 00 00 00 00 61 12 04 00 00 00 00 00 0f 20 00 00 00 00 00 00 95 00 00 00 00 00 00 00";
        assert_eq!(
            answer(prog.as_bytes(), Some("05 00 00 00 0a 00 00 00"), false).unwrap(),
            15
        );
    }

    #[test]
    fn r2_is_the_memory_length() {
        // r0 = r2; exit
        let prog = "bf 20 00 00 00 00 00 00 95 00 00 00 00 00 00 00";
        assert_eq!(
            answer(prog.as_bytes(), Some("00 11 22 33 44 55"), false).unwrap(),
            6
        );
        assert_eq!(answer(prog.as_bytes(), None, false).unwrap(), 0);
    }

    #[test]
    fn division_by_zero_is_zero_and_lddw_is_64_bit() {
        // r0 = 0x1122334455667788 ll; r1 = 0; r0 /= r1; exit
        let prog = concat!(
            "18 00 00 00 88 77 66 55 00 00 00 00 44 33 22 11 ",
            "b7 01 00 00 00 00 00 00 3f 10 00 00 00 00 00 00 95 00 00 00 00 00 00 00"
        );
        assert_eq!(answer(prog.as_bytes(), None, false).unwrap(), 0);
        let lddw = "18 00 00 00 88 77 66 55 00 00 00 00 44 33 22 11 95 00 00 00 00 00 00 00";
        assert_eq!(
            answer(lddw.as_bytes(), None, false).unwrap(),
            0x1122_3344_5566_7788
        );
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        assert!(answer(b"zz", None, false).is_err());
        assert!(answer(b"95 00 00", None, false).is_err());
        // Reading past the memory stops the run with an error.
        let prog = "79 10 08 00 00 00 00 00 95 00 00 00 00 00 00 00";
        assert!(answer(prog.as_bytes(), Some("01 02"), false).is_err());
        // An ELF that is not one.
        assert!(answer(b"not an elf", None, true).is_err());
    }
}
