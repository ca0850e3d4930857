use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = kdeck::cli::Cli::parse();
    // The console logs to a file of its own; everything else logs to stderr.
    if cli.command.is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("KDECK_LOG").unwrap_or_else(|_| "warn".into()))
            .with_writer(std::io::stderr)
            .init();
    }
    match kdeck::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kdeck: {e:#}");
            ExitCode::FAILURE
        }
    }
}
