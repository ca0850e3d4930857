//! kdeck: a full-screen terminal console with an embedded, replicated Kafka-style cluster.
//! See `DESIGN.md` in the shared folder for the rooms and which way dependencies point.

pub mod bench;
pub mod cli;
pub mod client;
pub mod commands;
pub mod config;
pub mod embedded;
pub mod engine;
pub mod hub;
pub mod kafka;
pub mod out;
pub mod record;
pub mod remote;
pub mod scenario;
pub mod serve;
pub mod sim;
pub mod storage;
pub mod tui;
pub mod view;
pub mod wire;
pub mod workload;

use std::sync::Arc;

use anyhow::{Context, Result};

use cli::{BenchCommand, Cli, ClusterArgs, Command};
use config::KdeckConfig;
use embedded::{DataDir, Embedded};

use crate::out::outln;

/// Runs what the command line asked for.
pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        None => {
            let config = KdeckConfig::load(cli.cluster.config.as_deref())?;
            match cli.remote.target(&config).map_err(anyhow::Error::msg)? {
                Some(target) => run_remote_console(&cli, config, target),
                None => run_console(&cli.cluster, config),
            }
        }
        Some(Command::Serve(args)) => serve::run(&args),
        Some(Command::Topics(args)) => commands::topics(&args),
        Some(Command::List(args)) => commands::list(&args),
        Some(Command::Produce(args)) => commands::produce(&args),
        Some(Command::Consume(args)) => commands::consume(&args),
        Some(Command::Groups(args)) => commands::groups(&args),
        Some(Command::Transactions(args)) => commands::transactions(&args),
        Some(Command::Elect(args)) => commands::elect(&args),
        Some(Command::Reassign(args)) => commands::reassign(&args),
        Some(Command::Records(args)) => commands::records(&args),
        Some(Command::Configs(args)) => commands::configs(&args),
        Some(Command::Clusters(args)) => commands::clusters(&args),
        Some(Command::Scenario { what }) => scenario_command(what),
        Some(Command::Record(args)) => record_console(&args),
        Some(Command::Replay(args)) => replay(&args),
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
        Some(Command::Bench {
            what: BenchCommand::Reassign(args),
        }) => bench::reassign::run(&args),
        Some(Command::Bench {
            what: BenchCommand::Render(args),
        }) => bench::render::run(&args),
        Some(Command::Bench {
            what: BenchCommand::Sim(args),
        }) => bench::sim::run(&args),
        Some(Command::Bench {
            what: BenchCommand::Soak(args),
        }) => bench::soak::run(&args),
    }
}

/// `kdeck scenario list|check|run`.
fn scenario_command(what: cli::ScenarioCommand) -> Result<()> {
    match what {
        cli::ScenarioCommand::List { dir } => {
            let mut all = scenario::shipped()?;
            if let Some(d) = dir.or_else(scenario::user_dir).filter(|d| d.is_dir()) {
                all.extend(scenario::from_dir(&d)?);
            }
            let width = all.iter().map(|s| s.name.len()).max().unwrap_or(0);
            for s in &all {
                let langs: Vec<&str> = s.lang.keys().map(String::as_str).collect();
                let langs = if langs.is_empty() {
                    String::new()
                } else {
                    format!(" [en, {}]", langs.join(", "))
                };
                outln!("{:width$}  {}{langs}", s.name, s.title);
            }
            Ok(())
        }
        cli::ScenarioCommand::Check { files } => {
            let mut failed = 0;
            for file in &files {
                match scenario::check_file(file) {
                    Ok(()) => outln!("{}: ok", file.display()),
                    Err(e) => {
                        failed += 1;
                        outln!("{e:#}");
                    }
                }
            }
            if failed > 0 {
                anyhow::bail!("{failed} of {} scenario files have problems", files.len());
            }
            Ok(())
        }
        cli::ScenarioCommand::Run {
            name,
            lang,
            headless,
            dir,
            config,
            cast,
        } => {
            let dir = dir.or_else(scenario::user_dir);
            let found = scenario::find(&name, dir.as_deref())?;
            if let Some(l) = &lang
                && !found.lang.contains_key(l)
            {
                anyhow::bail!(
                    "scenario {name} has no [lang.{l}]; it has: en{}",
                    found.lang.keys().map(|k| format!(", {k}")).collect::<String>()
                );
            }
            let translated = found.translated(lang.as_deref());
            let config = KdeckConfig::load(config.as_deref())?;
            if headless {
                let summary = scenario::headless::run_blocking(&translated, &config, &mut |line| out::line(line))?;
                if !summary.passed() {
                    anyhow::bail!(
                        "scenario {name}: {} failed",
                        view::words::count(summary.failures().len(), "check")
                    );
                }
                Ok(())
            } else {
                run_scenario_console(
                    translated,
                    scenario::driver::ClusterRecipe::Setup,
                    &config,
                    cast.as_deref(),
                )
            }
        }
    }
}

/// The console on a scenario's cluster, in trainer mode (a recording played in the console
/// is one too: see `record::present`); its frames also go to `cast` when given.
fn run_scenario_console(
    scenario: scenario::Scenario,
    recipe: scenario::driver::ClusterRecipe,
    config: &KdeckConfig,
    cast: Option<&std::path::Path>,
) -> Result<()> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!("the console needs a terminal (stdin and stdout); add --headless to run without it");
    }
    tui::check_config(config)?;
    // A cast that cannot be written is said before the console opens.
    let cast = cast
        .map(|path| tui::cast::Cast::create(path, &scenario.title))
        .transpose()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    // The scenario's cluster runs on the driver's own thread and runtime (a replay pauses
    // its clock); the console on this one. The log is not in the cluster's directory:
    // going back a step replaces the cluster and removes it.
    let log_dir = console_log_dir();
    let log_path = log_dir.join("kdeck.log");
    let _flush_guard = log_to_file(&log_dir);
    let (driver, link, first) = scenario::driver::spawn_on(scenario, recipe, config.clone())?;
    let source = first as Arc<dyn view::ClusterSource>;
    let result = runtime.block_on(tui::run_with(source, config, Some(log_path), Some(link), cast));
    driver.shutdown();
    result
}

/// The console on an embedded cluster. Logs go to `kdeck.log` in the data directory, never
/// to the screen.
fn run_console(args: &ClusterArgs, config: KdeckConfig) -> Result<()> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!("the console needs a terminal (stdin and stdout); for the headless commands see `kdeck --help`");
    }
    // A bad key binding or theme is reported before the terminal switches to the console.
    tui::check_config(&config)?;
    let data_dir = DataDir::prepare(args)?;
    let log_path = data_dir.path().join("kdeck.log");
    let _flush_guard = log_to_file(data_dir.path());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async {
        let embedded = Arc::new(Embedded::start_in(&config, args, data_dir).await?);
        tracing::info!(data_dir = %embedded.data_dir().display(), "console started");
        let source = Arc::clone(&embedded) as Arc<dyn view::ClusterSource>;
        let hub = hub::Hub::new(config, args.clone(), false, None, Some(embedded), None);
        hub::run_console(hub, source, Some(tui::clusters::EMBEDDED.to_string()), Some(log_path)).await
    })
}

/// `kdeck record FILE`: the console on an ephemeral embedded cluster, recording; the file
/// is written when the console quits.
fn record_console(args: &cli::RecordArgs) -> Result<()> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "the console needs a terminal (stdin and stdout); to replay a recording see `kdeck replay --help`"
        );
    }
    let cluster = args.cluster();
    let config = KdeckConfig::load(cluster.config.as_deref())?;
    tui::check_config(&config)?;
    let data_dir = DataDir::prepare(&cluster)?;
    let log_path = data_dir.path().join("kdeck.log");
    let _flush_guard = log_to_file(data_dir.path());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let recording = runtime.block_on(async {
        let embedded = Arc::new(Embedded::start_in(&config, &cluster, data_dir).await?);
        let source = Arc::clone(&embedded) as Arc<dyn view::ClusterSource>;
        let result = async {
            let (mut console, outcomes) = tui::new_console(Arc::clone(&source), &config, Some(log_path))?;
            let brokers = cluster.brokers.unwrap_or(config.cluster.brokers);
            let view = source.views().borrow().clone();
            let recorder = record::Recorder::new(
                chrono::Utc::now(),
                brokers,
                !cluster.no_demo,
                // Absolute, so that a replay from elsewhere finds it.
                cluster
                    .config
                    .as_ref()
                    .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())),
                &view,
            );
            console.app.observer = Some(Box::new(recorder.clone()));
            tui::run_console(console, outcomes, &config, None).await?;
            anyhow::Ok(recorder.finish(chrono::Utc::now()))
        }
        .await;
        embedded.shutdown().await;
        result
    })?;
    recording.write(&args.file)?;
    outln!(
        "recorded {} ({} replayable) and {} in {}",
        view::words::count(recording.actions.len(), "action"),
        recording.replayable().count(),
        view::words::count(recording.events.len(), "event"),
        args.file.display()
    );
    Ok(())
}

/// `kdeck replay FILE`: the recording in the console, step by step; with `--headless`,
/// exit code 1 when the new run's timeline differs.
fn replay(args: &cli::ReplayArgs) -> Result<()> {
    let recording = record::Recording::read(&args.file)?;
    let config_path = args.config.clone().or_else(|| recording.recording.config.clone());
    let config = KdeckConfig::load(config_path.as_deref())?;
    if !args.headless {
        let name = args
            .file
            .file_name()
            .map_or_else(|| args.file.display().to_string(), |n| n.to_string_lossy().into_owned());
        let shown = record::present::as_scenario(&recording, &name)?;
        return run_scenario_console(
            shown,
            record::present::recipe(&recording),
            &config,
            args.cast.as_deref(),
        );
    }
    let new = record::replay::run_blocking(&recording, &config, &mut |line| out::line(line))?;
    let diffs = record::diff(&recording, &new);
    for line in record::report(&recording, &diffs) {
        outln!("{line}");
    }
    if !diffs.is_empty() {
        anyhow::bail!("{}: the replay differs from the recording", args.file.display());
    }
    Ok(())
}

/// The console on an external Kafka cluster. The cluster is reached before the terminal
/// switches to the console (and before the terminal check), so an unreachable bootstrap is a
/// clear error and exit code 1, never a hang or a blank screen. Logs go to `kdeck.log` in
/// the platform data directory's `kdeck/` (the embedded console's log), else in the
/// temporary directory.
fn run_remote_console(cli: &Cli, config: KdeckConfig, target: cli::ConsoleTarget) -> Result<()> {
    use std::io::IsTerminal;
    let remote = target.remote.clone();
    let section = match &target.profile {
        Some(name) => format!("[clusters.{name}]"),
        None => "[remote]".to_string(),
    };
    let settings = remote::ClientSettings::from_config(&remote).map_err(|e| anyhow::anyhow!("{section} {e}"))?;
    // A bad key binding or theme is reported before anything else happens.
    tui::check_config(&config)?;
    let bootstrap = remote.bootstrap.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async {
        let client = remote::KafkaClient::connect(settings)
            .await
            .with_context(|| format!("cannot attach the console to {bootstrap}"))?;
        if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
            client.close();
            anyhow::bail!(
                "the console needs a terminal (stdin and stdout); for the headless commands see `kdeck --help`"
            );
        }
        let log_dir = console_log_dir();
        let _flush_guard = log_to_file(&log_dir);
        tracing::info!(%bootstrap, read_only = target.read_only, profile = ?target.profile, "console attached to an external cluster");
        let options = remote::source::SourceOptions {
            cluster_name: target.profile.clone(),
            ..remote::source::SourceOptions::new(
                config.console.refresh_ms,
                config.console.event_history,
                target.read_only,
            )
        };
        let source = Arc::new(remote::source::RemoteSource::start(client.clone(), options));
        let current = target.profile.clone();
        let hub = hub::Hub::new(
            config,
            cli.cluster.clone(),
            cli.remote.read_only,
            Some(target),
            None,
            Some(client),
        );
        hub::run_console(
            hub,
            source as Arc<dyn view::ClusterSource>,
            current,
            Some(log_dir.join("kdeck.log")),
        )
        .await
    })
}

/// Where a console without a data directory of its own keeps `kdeck.log`: the platform
/// data directory's `kdeck/`, else the temporary directory.
fn console_log_dir() -> std::path::PathBuf {
    dirs::data_dir()
        .map(|d| d.join("kdeck"))
        .filter(|d| std::fs::create_dir_all(d).is_ok())
        .unwrap_or_else(std::env::temp_dir)
}

/// The console logs to `kdeck.log` in `dir`, never to the screen; the guard flushes it on drop.
fn log_to_file(dir: &std::path::Path) -> tracing_appender::non_blocking::WorkerGuard {
    let appender = tracing_appender::rolling::never(dir, "kdeck.log");
    let (writer, guard) = tracing_appender::non_blocking(appender);
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("KDECK_LOG").unwrap_or_else(|_| "info".into()))
        .with_writer(writer)
        .with_ansi(false)
        .try_init()
        // Only a second console in one process would find one set; its log goes to the first.
        .unwrap_or_else(|e| eprintln!("kdeck: logging to {}: {e}", dir.display()));
    guard
}
