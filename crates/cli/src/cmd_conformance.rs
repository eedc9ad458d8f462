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
    let insns = if args.elf {
        let dir = std::env::temp_dir().join(format!("bpfvet-conformance-{}", std::process::id()));
        std::fs::write(&dir, &input).context("writing the ELF to a temporary file")?;
        let obj = bpfvet_object::Object::from_file(&dir, &Default::default());
        let _ = std::fs::remove_file(&dir);
        let obj = obj.context("parsing the ELF object")?;
        obj.programs
            .first()
            .context("the ELF object has no program")?
            .insns
            .clone()
    } else {
        let text = String::from_utf8(input).context("stdin is not text")?;
        let bytes = parse_hex(&text).context("program")?;
        bpfvet_isa::insns_from_bytes(&bytes)?
    };
    let mut memory = match &args.memory {
        Some(m) => parse_hex(m).context("memory argument")?,
        None => Vec::new(),
    };
    let r0 = bpfvet_vm::run_on_memory(&insns, &mut memory)?;
    println!("{r0:x}");
    Ok(ExitCode::SUCCESS)
}
