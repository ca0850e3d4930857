use std::process::ExitCode;

use clap::Parser;

/// Fixes glibc malloc's two thresholds instead of leaving them to its dynamic adjustment.
///
/// A broker's requests allocate and free buffers of 100 KiB to 1 MiB all the time (request
/// frames, fetched batches). With the defaults (128 KiB, raised only after a large mmapped
/// block happens to be freed) a worker thread's arena gives freed memory back with
/// `madvise` and faults it in again on the next request: `kdeck serve` took 27,000 to
/// 42,000 page faults and 1,200 to 1,800 `madvise` calls for 2 M records at RF 3, and
/// 25% more CPU than the same build with these settings (about 330 faults, no `madvise`);
/// in other runs the thresholds happened to rise early and it did not, which was most of the
/// run-to-run spread of the serve benchmarks. 2 MiB keeps those buffers out of mmap, and an
/// arena keeps at most 4 MiB free at its top before trimming: a bounded amount per arena.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn settle_the_allocator() {
    // SAFETY: `mallopt` only sets malloc's tuning parameters; it is called first thing in
    // `main`, before any other thread exists or anything is allocated on one.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 2 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 4 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn settle_the_allocator() {}

fn main() -> ExitCode {
    settle_the_allocator();
    let cli = kdeck::cli::Cli::parse();
    // The console logs to a file of its own (set up in `kdeck::run`); `kdeck serve` is
    // headless, so its log is its output; everything else logs to stderr. `kdeck record`,
    // a scenario presented in the console and a recording replayed in it are the console.
    let console = matches!(cli.command, Some(kdeck::cli::Command::Record(_)))
        || matches!(&cli.command, Some(kdeck::cli::Command::Replay(r)) if !r.headless)
        || matches!(
            &cli.command,
            Some(kdeck::cli::Command::Scenario {
                what: kdeck::cli::ScenarioCommand::Run { headless: false, .. }
            })
        );
    if let Some(command) = cli.command.as_ref().filter(|_| !console) {
        use kdeck::cli::Command;
        let serve = matches!(command, Command::Serve(_));
        // The kcat-like commands say what went wrong in their one error line; a client's
        // reconnect warnings before it would only clutter a script's stderr.
        // The simulation's wire clients reconnect through every fault it injects; their
        // warnings are the schedule working, not news (its trace shows what happened).
        let quiet = matches!(
            command,
            Command::Topics(_)
                | Command::List(_)
                | Command::Produce(_)
                | Command::Consume(_)
                | Command::Groups(_)
                | Command::Transactions(_)
                | Command::Elect(_)
                | Command::Reassign(_)
                | Command::Records(_)
                | Command::Configs(_)
        ) || matches!(
            command,
            Command::Bench {
                what: kdeck::cli::BenchCommand::Sim(_)
            }
        );
        let default = match (serve, quiet) {
            (true, _) => "info",
            (false, true) => "error",
            (false, false) => "warn",
        };
        let filter = tracing_subscriber::EnvFilter::try_from_env("KDECK_LOG").unwrap_or_else(|_| default.into());
        let logger = tracing_subscriber::fmt().with_env_filter(filter);
        if serve {
            let colors = std::io::IsTerminal::is_terminal(&std::io::stdout());
            logger.with_writer(std::io::stdout).with_ansi(colors).init();
        } else {
            let colors = std::io::IsTerminal::is_terminal(&std::io::stderr());
            logger.with_writer(std::io::stderr).with_ansi(colors).init();
        }
    }
    match kdeck::run(cli) {
        // A reader that went away (`| head`) is a quiet end; a full disk is not.
        Ok(()) if kdeck::out::failed() => ExitCode::FAILURE,
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kdeck: {e:#}");
            ExitCode::FAILURE
        }
    }
}
