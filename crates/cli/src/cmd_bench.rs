//! `bpfvet bench`: benchmarks with the machine named in the output.
//! `bench maps` runs the seed tables of the maps crate. The runtime's
//! benchmarks against the kernel are `bench/vm/run.sh`.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Subcommand)]
enum What {
    /// HASH vs RHASH (plus papaya and dashmap) on the seed workloads:
    /// lookups, full updates, 8-writer overwrite with memory, hash functions.
    Maps(MapsArgs),
}

#[derive(clap::Args)]
struct MapsArgs {
    /// Timed runs per figure; the median is printed.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Scale sizes and counts down 100x (a smoke test, not a measurement).
    #[arg(long)]
    quick: bool,
    /// Only these tables (comma separated): lookup, update, overwrite, hash.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Time the one-thread tables by the thread's CPU time, not the wall
    /// clock (for a machine shared with other work).
    #[arg(long)]
    cpu_time: bool,
}

#[cfg(feature = "bench-maps")]
fn maps_report(a: MapsArgs) -> anyhow::Result<ExitCode> {
    let opts = bpfvet_maps::bench::Options {
        runs: a.runs,
        quick: a.quick,
        only: a.only,
        cpu_time: a.cpu_time,
    };
    print!("{}", bpfvet_maps::bench::report(&opts));
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(feature = "bench-maps"))]
fn maps_report(_: MapsArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!(
        "this bpfvet was built without the maps benchmarks; rebuild with \
         `cargo build --release -p bpfvet --features bench-maps`"
    )
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.what {
        What::Maps(a) => {
            const TABLES: [&str; 4] = ["lookup", "update", "overwrite", "hash"];
            if let Some(bad) = a.only.iter().find(|t| !TABLES.contains(&t.as_str())) {
                anyhow::bail!("unknown table {bad:?}; choose from {}", TABLES.join(", "));
            }
            if a.runs == 0 {
                anyhow::bail!("--runs must be at least 1");
            }
            maps_report(a)
        }
    }
}
