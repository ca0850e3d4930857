use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = kdeck::cli::Cli::parse();
    // The console logs to a file of its own (set up in `kdeck::run`); `kdeck serve` is
    // headless, so its log is its output; everything else logs to stderr.
    if let Some(command) = &cli.command {
        let serve = matches!(command, kdeck::cli::Command::Serve(_));
        let filter = tracing_subscriber::EnvFilter::try_from_env("KDECK_LOG")
            .unwrap_or_else(|_| if serve { "info" } else { "warn" }.into());
        let logger = tracing_subscriber::fmt().with_env_filter(filter);
        if serve {
            let colors = std::io::IsTerminal::is_terminal(&std::io::stdout());
            logger.with_writer(std::io::stdout).with_ansi(colors).init();
        } else {
            logger.with_writer(std::io::stderr).init();
        }
    }
    match kdeck::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kdeck: {e:#}");
            ExitCode::FAILURE
        }
    }
}
