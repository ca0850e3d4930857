use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = kdeck::cli::Cli::parse();
    // `kdeck serve` is headless: its log is its output.
    let serve = matches!(cli.command, Some(kdeck::cli::Command::Serve(_)));
    let filter = tracing_subscriber::EnvFilter::try_from_env("KDECK_LOG")
        .unwrap_or_else(|_| if serve { "info" } else { "warn" }.into());
    let logger = tracing_subscriber::fmt().with_env_filter(filter);
    if serve {
        let colors = std::io::IsTerminal::is_terminal(&std::io::stdout());
        logger.with_writer(std::io::stdout).with_ansi(colors).init();
    } else {
        logger.with_writer(std::io::stderr).init();
    }
    match kdeck::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kdeck: {e:#}");
            ExitCode::FAILURE
        }
    }
}
