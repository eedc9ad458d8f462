//! The `bpfvet` binary. Each subcommand lives in its own module with its
//! clap arguments and a `run` that returns the process exit code.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod cmd_bench;
mod cmd_conformance;
mod cmd_dump;
mod cmd_explain;
mod cmd_run;
mod cmd_test;
mod cmd_verify;
mod loader_arg;

#[derive(Parser)]
#[command(
    name = "bpfvet",
    version,
    about = "Verify, run and measure Linux BPF programs in user space"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The exit status of every subcommand, for CI.
const EXIT_CODES: &str = "Exit status:
  0  every program verified (run: the program ran; dump: every object read)
  1  a verdict failed: a program was rejected, refused (not verified) or hit
     a limit; a test failed; with -C, a verdict differs
  2  usage or load error: a named path that is missing, is not a BPF object
     (empty, truncated, not ELF, built for another machine), or yields no
     program; an unreadable file; an internal error
-q hides only the table footer, progress and notes, never an error.";

#[derive(Subcommand)]
enum Command {
    /// List the maps and programs of .bpf.o files, optionally disassembled.
    #[command(after_help = EXIT_CODES)]
    Dump(cmd_dump::Args),
    /// Verify programs (veristat-compatible output, A/B comparison).
    #[command(after_help = EXIT_CODES)]
    Verify(cmd_verify::Args),
    /// Where the verifier spends its work on a program (per C line, per
    /// instruction, per loop), why checkpoints fail to prune, and the path
    /// to a rejection: text, JSON or a self-contained HTML report.
    #[command(after_help = EXIT_CODES)]
    Explain(cmd_explain::Args),
    /// Check the kernel selftests' annotated tests (__success, __failure,
    /// __msg, __retval, ...) as their test_loader does.
    #[command(after_help = EXIT_CODES)]
    Test(cmd_test::Args),
    /// Run a program with BPF_PROG_TEST_RUN semantics.
    #[command(after_help = EXIT_CODES)]
    Run(cmd_run::Args),
    /// Benchmarks (maps, runtime).
    Bench(cmd_bench::Args),
    /// The bpf_conformance plugin protocol: program on stdin, r0 on stdout.
    ConformancePlugin(cmd_conformance::Args),
    /// Init of a guest kernel booted by `verify --backend kernel=VERSION`.
    #[command(hide = true)]
    GuestAgent(cmd_verify::guest::AgentArgs),
}

/// The command line with `conformance-plugin` first, wherever the
/// bpf_conformance runner put it (see [`cmd_conformance::subcommand_first`]).
fn plugin_argv(argv: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let mut names: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).collect();
    names.push("help");
    cmd_conformance::subcommand_first(argv, &names)
}

fn main() -> ExitCode {
    let cli = Cli::parse_from(plugin_argv(std::env::args_os().collect()));
    let result = match cli.command {
        Command::Dump(a) => cmd_dump::run(a),
        Command::Verify(a) => cmd_verify::run(a),
        Command::Explain(a) => cmd_explain::run(a),
        Command::Run(a) => cmd_run::run(a),
        Command::Test(a) => cmd_test::run(a),
        Command::Bench(a) => cmd_bench::run(a),
        Command::ConformancePlugin(a) => cmd_conformance::run(a),
        Command::GuestAgent(a) => cmd_verify::guest::agent(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("bpfvet: {}", error_text(&e));
            ExitCode::from(2)
        }
    }
}

/// An error and its causes joined by ": ", each cause once: a message that
/// already quotes its cause (as most of ours do) does not repeat it.
pub fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain().map(|c| c.to_string()) {
        if !text.contains(&cause) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&cause);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::{plugin_argv, Cli, Command};
    use clap::Parser;

    fn plugin(argv: &[&str]) -> crate::cmd_conformance::Args {
        let argv = plugin_argv(argv.iter().map(Into::into).collect());
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::ConformancePlugin(a) => a,
            _ => panic!("not the plugin"),
        }
    }

    /// The runner's order: memory, then its plugin options split on
    /// spaces (the subcommand among them), then --elf.
    #[test]
    fn plugin_options_are_accepted_anywhere() {
        let a = plugin(&["bpfvet", "00  01  ", "conformance-plugin", "--jit", "--elf"]);
        assert_eq!(
            (a.memory, a.jit, a.elf),
            (vec!["00  01  ".into()], true, true)
        );
        let a = plugin(&["bpfvet", "conformance-plugin", "--elf", "ff", "--jit"]);
        assert_eq!((a.memory, a.jit, a.elf), (vec!["ff".into()], true, true));
        let a = plugin(&["bpfvet", "0a", "conformance-plugin", "--jit", "--jit-only"]);
        assert!(a.jit && a.jit_only);
        // --jit-only means nothing without --jit.
        let argv = plugin_argv(
            ["bpfvet", "conformance-plugin", "--jit-only"]
                .map(Into::into)
                .to_vec(),
        );
        assert!(Cli::try_parse_from(argv).is_err());
        let a = plugin(&["bpfvet", "conformance-plugin"]);
        assert_eq!((a.memory.len(), a.jit, a.elf), (0, false, false));
        // --elf given in the plugin options and again by the runner.
        let a = plugin(&["bpfvet", "conformance-plugin", "--elf", "--elf"]);
        assert!(a.elf && !a.jit);
        // A doubled space in the plugin options makes an empty argument.
        let a = plugin(&["bpfvet", "aa", "conformance-plugin", "", "--jit"]);
        assert_eq!(a.memory, vec!["aa".to_string(), String::new()]);
    }
}
