//! The `bpfvet` binary. Each subcommand lives in its own module with its
//! clap arguments and a `run` that returns the process exit code.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod cmd_bench;
mod cmd_conformance;
mod cmd_dump;
mod cmd_run;
mod cmd_test;
mod cmd_verify;

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

#[derive(Subcommand)]
enum Command {
    /// List the maps and programs of .bpf.o files, optionally disassembled.
    Dump(cmd_dump::Args),
    /// Verify programs (veristat-compatible output, A/B comparison).
    Verify(cmd_verify::Args),
    /// Check the kernel selftests' annotated tests (__success, __failure,
    /// __msg, __retval, ...) as their test_loader does.
    Test(cmd_test::Args),
    /// Run a program with BPF_PROG_TEST_RUN semantics.
    Run(cmd_run::Args),
    /// Benchmarks (maps, runtime).
    Bench(cmd_bench::Args),
    /// The bpf_conformance plugin protocol: program on stdin, r0 on stdout.
    ConformancePlugin(cmd_conformance::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Dump(a) => cmd_dump::run(a),
        Command::Verify(a) => cmd_verify::run(a),
        Command::Run(a) => cmd_run::run(a),
        Command::Test(a) => cmd_test::run(a),
        Command::Bench(a) => cmd_bench::run(a),
        Command::ConformancePlugin(a) => cmd_conformance::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("bpfvet: {e:#}");
            ExitCode::from(2)
        }
    }
}
