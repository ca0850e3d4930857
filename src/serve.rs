//! `kdeck serve`: the embedded cluster without the console, its brokers listening for Kafka
//! clients. Scripts drive failures through line commands on standard input.

use std::io::{BufRead, IsTerminal};

use anyhow::{Context, Result, bail};
use tokio::sync::mpsc;

use crate::cli::ClusterArgs;
use crate::config::KdeckConfig;
use crate::embedded::Embedded;
use crate::engine::{BrokerId, BrokerState, ErrorCode};
use crate::out::outln;

/// The same flags and configuration as the console; `[wire] enabled` must be on.
pub fn run(args: &ClusterArgs) -> Result<()> {
    let config = KdeckConfig::load(args.config.as_deref())?;
    if !config.wire.enabled {
        bail!("[wire] enabled = false: kdeck serve has nothing to serve");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let result = runtime.block_on(serve(&config, args));
    // The stdin reader may sit in a blocking read: do not wait for it.
    runtime.shutdown_background();
    result
}

async fn serve(config: &KdeckConfig, args: &ClusterArgs) -> Result<()> {
    let embedded = Embedded::start(config, args).await?;
    tracing::info!(data_dir = %embedded.data_dir().display(), "cluster started");
    let listeners = embedded.wire_listeners();
    for l in &listeners {
        outln!("broker {} listening on {}", l.broker, l.addr);
    }
    let bootstrap: Vec<String> = listeners.iter().map(|l| l.addr.to_string()).collect();
    outln!("bootstrap.servers={}", bootstrap.join(","));
    let mut commands = stdin_commands();
    let mut terminate = signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut hangup = signal(tokio::signal::unix::SignalKind::hangup())?;
    let mut stdin_open = true;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            _ = terminate.recv() => break,
            _ = hangup.recv() => break,
            line = commands.recv(), if stdin_open => {
                let Some(line) = line else {
                    stdin_open = false;
                    continue;
                };
                let reply = match command(&embedded, line.trim()).await {
                    Ok(ok) => format!("ok {ok}"),
                    Err(e) => format!("error {e:#}"),
                };
                outln!("{reply}");
            }
        }
    }
    tracing::info!("shutting down");
    embedded.shutdown().await;
    Ok(())
}

fn signal(kind: tokio::signal::unix::SignalKind) -> Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(kind).context("installing the signal handler")
}

/// Lines from standard input when it is not a terminal. Its end is not a shutdown: a script
/// may close it and still stop kdeck with a signal.
fn stdin_commands() -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    if std::io::stdin().is_terminal() {
        return rx;
    }
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { return };
            if !line.trim().is_empty() && tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

fn broker_arg(word: Option<&str>) -> Result<BrokerId> {
    let Some(word) = word else {
        bail!("which broker? (a broker id)");
    };
    word.parse().with_context(|| format!("{word:?} is not a broker id"))
}

/// Runs one stdin command; the answer is one line.
async fn command(embedded: &Embedded, line: &str) -> Result<String> {
    let cluster = embedded.cluster();
    let mut words = line.split_whitespace();
    let verb = words.next().unwrap_or_default();
    let arg = words.next();
    let answer = match verb {
        "kill" => {
            let id = broker_arg(arg)?;
            cluster.kill(id)?;
            format!("broker {id} killed")
        }
        "stop" => {
            let id = broker_arg(arg)?;
            cluster.stop(id).await?;
            format!("broker {id} stopped")
        }
        "start" => {
            let id = broker_arg(arg)?;
            cluster.start_broker(id)?;
            format!("broker {id} started")
        }
        "pause" => {
            let id = broker_arg(arg)?;
            cluster.pause(id)?;
            format!("broker {id} paused")
        }
        "resume" => {
            let id = broker_arg(arg)?;
            cluster.resume(id)?;
            format!("broker {id} resumed")
        }
        "elect" => {
            let results = cluster.elect_preferred_leaders(|_| true).await?;
            let moved = results.iter().filter(|(_, e)| *e == ErrorCode::None).count();
            format!("preferred leaders elected for {moved} partitions")
        }
        "status" => return Ok(status(embedded)),
        other => {
            bail!("unknown command {other:?}; commands: kill N, start N, stop N, pause N, resume N, elect, status")
        }
    };
    embedded.wire_sync().await;
    Ok(answer)
}

fn status(embedded: &Embedded) -> String {
    let snapshot = embedded.cluster().snapshot();
    let listeners = embedded.wire_listeners();
    let brokers: Vec<String> = snapshot
        .brokers
        .iter()
        .map(|b| {
            let state = match b.state {
                BrokerState::Running if b.fenced => "fenced",
                BrokerState::Running => "running",
                BrokerState::Paused => "paused",
                BrokerState::Stopped => "stopped",
                BrokerState::Killed => "killed",
            };
            let addr = listeners
                .iter()
                .find(|l| l.broker == b.id)
                .map_or(String::new(), |l| format!("@{}", l.addr));
            format!("{}{}={} leaders={}", b.id, addr, state, b.leaders)
        })
        .collect();
    let offline = snapshot.partitions.iter().filter(|p| p.leader.is_none()).count();
    let under = snapshot.partitions.iter().filter(|p| p.under_replicated).count();
    format!(
        "controller={} brokers=[{}] partitions={} offline={} under_replicated={}",
        snapshot.controller.map_or("none".to_string(), |c| c.to_string()),
        brokers.join(", "),
        snapshot.partitions.len(),
        offline,
        under
    )
}
