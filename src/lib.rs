//! kdeck: a full-screen terminal console with an embedded, replicated Kafka-style cluster.
//! See `DESIGN.md` in the shared folder for the rooms and which way dependencies point.

pub mod bench;
pub mod cli;
pub mod client;
pub mod engine;
pub mod serve;
pub mod storage;
pub mod wire;
pub mod workload;

use anyhow::Result;

use cli::{BenchCommand, Cli, Command};

/// Runs what the command line asked for.
pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        None => {
            println!("{}", cli::CONSOLE_NOT_YET);
            Ok(())
        }
        Some(Command::Serve(args)) => serve::run(&args),
        Some(Command::Bench {
            what: BenchCommand::Storage(args),
        }) => bench::storage::run(&args),
        Some(Command::Bench {
            what: BenchCommand::Consume(args),
        }) => bench::consume::run(&args),
        Some(Command::Bench {
            what: BenchCommand::E2e(args),
        }) => bench::e2e::run(&args),
        Some(Command::Bench {
            what: BenchCommand::Engine(args),
        }) => bench::engine::run(&args),
        Some(Command::Bench {
            what: BenchCommand::Produce(args),
        }) => bench::produce::run(&args),
    }
}
