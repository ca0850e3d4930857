//! `kdeck serve`: the embedded cluster without the console, its brokers listening for Kafka
//! clients. Scripts drive failures through line commands on standard input.

use std::io::{BufRead, IsTerminal};

use anyhow::{Context, Result, bail};
use tokio::sync::mpsc;

use crate::cli::ClusterArgs;
use crate::config::KdeckConfig;
use crate::embedded::Embedded;
use std::collections::BTreeMap;
use std::time::Duration;

use crate::engine::{BrokerId, BrokerState, Cluster, ErrorCode, Membership};
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
    let reporter = tokio::spawn(report_drains(embedded.cluster().clone()));
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
    reporter.abort();
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

/// One line of standard input, understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StdinCommand {
    Kill(BrokerId),
    Stop(BrokerId),
    Start(BrokerId),
    Pause(BrokerId),
    Resume(BrokerId),
    Elect,
    Status,
    Add,
    Decommission(BrokerId),
}

const COMMANDS: &str = "kill N, start N, stop N, pause N, resume N, add, decommission N, elect, status";

fn broker_arg(word: Option<&str>) -> Result<BrokerId> {
    let Some(word) = word else {
        bail!("which broker? (a broker id)");
    };
    word.parse().with_context(|| format!("{word:?} is not a broker id"))
}

fn parse(line: &str) -> Result<StdinCommand> {
    let mut words = line.split_whitespace();
    let verb = words.next().unwrap_or_default();
    let arg = words.next();
    let command = match verb {
        "kill" => StdinCommand::Kill(broker_arg(arg)?),
        "stop" => StdinCommand::Stop(broker_arg(arg)?),
        "start" => StdinCommand::Start(broker_arg(arg)?),
        "pause" => StdinCommand::Pause(broker_arg(arg)?),
        "resume" => StdinCommand::Resume(broker_arg(arg)?),
        "decommission" => StdinCommand::Decommission(broker_arg(arg)?),
        "add" => StdinCommand::Add,
        "elect" => StdinCommand::Elect,
        "status" => StdinCommand::Status,
        other => bail!("unknown command {other:?}; commands: {COMMANDS}"),
    };
    let takes_broker = !matches!(command, StdinCommand::Add | StdinCommand::Elect | StdinCommand::Status);
    if let Some(extra) = if takes_broker { words.next() } else { arg } {
        bail!("unexpected {extra:?} after {verb}; commands: {COMMANDS}");
    }
    Ok(command)
}

/// Runs one stdin command; the answer is one line.
async fn command(embedded: &Embedded, line: &str) -> Result<String> {
    let cluster = embedded.cluster();
    let answer = match parse(line)? {
        StdinCommand::Kill(id) => {
            cluster.kill(id)?;
            format!("broker {id} killed")
        }
        StdinCommand::Stop(id) => {
            cluster.stop(id).await?;
            format!("broker {id} stopped")
        }
        StdinCommand::Start(id) => {
            cluster.start_broker(id)?;
            format!("broker {id} started")
        }
        StdinCommand::Pause(id) => {
            cluster.pause(id)?;
            format!("broker {id} paused")
        }
        StdinCommand::Resume(id) => {
            cluster.resume(id)?;
            format!("broker {id} resumed")
        }
        StdinCommand::Elect => {
            let results = cluster.elect_preferred_leaders(|_| true).await?;
            let moved = results.iter().filter(|(_, e)| *e == ErrorCode::None).count();
            format!("preferred leaders elected for {moved} partitions")
        }
        StdinCommand::Status => return Ok(status(embedded)),
        StdinCommand::Add => {
            let id = cluster.add_broker()?;
            embedded.wire_sync().await;
            return Ok(match embedded.wire_listeners().iter().find(|l| l.broker == id) {
                Some(l) => format!("broker {id} added, listening on {}", l.addr),
                None => format!("broker {id} added"),
            });
        }
        StdinCommand::Decommission(id) => {
            let replicas = cluster.decommission(id).await?;
            format!(
                "broker {id} decommissioning: {replicas} replicas move to the other brokers, then it shuts down and leaves"
            )
        }
    };
    embedded.wire_sync().await;
    Ok(answer)
}

/// Says on standard output how each decommission goes: its progress as replicas leave the
/// broker, and when it has left the cluster.
async fn report_drains(cluster: Cluster) {
    let mut draining: BTreeMap<BrokerId, (usize, usize)> = BTreeMap::new();
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let snapshot = cluster.snapshot();
        for b in &snapshot.brokers {
            if let Membership::Draining { left, total } = b.membership
                && draining.insert(b.id, (left, total)) != Some((left, total))
            {
                let moved = total.saturating_sub(left);
                outln!("broker {} draining: {moved}/{total} replicas moved", b.id);
            }
        }
        draining.retain(|id, _| {
            let here = snapshot.broker(*id);
            if here.is_none() {
                outln!("broker {id} decommissioned: it left the cluster");
            }
            here.is_some_and(|b| matches!(b.membership, Membership::Draining { .. }))
        });
    }
}

fn status(embedded: &Embedded) -> String {
    let snapshot = embedded.cluster().snapshot();
    let listeners = embedded.wire_listeners();
    let brokers: Vec<String> = snapshot
        .brokers
        .iter()
        .map(|b| {
            let state = match (b.state, b.membership) {
                (_, Membership::Draining { left, total }) => {
                    format!("draining({}/{total})", total.saturating_sub(left))
                }
                (BrokerState::Running, Membership::Joining) if b.fenced => "joining".to_string(),
                (state, _) => state_word(state, b.fenced).to_string(),
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

fn state_word(state: BrokerState, fenced: bool) -> &'static str {
    match state {
        BrokerState::Running if fenced => "fenced",
        BrokerState::Running => "running",
        BrokerState::Paused => "paused",
        BrokerState::Stopped => "stopped",
        BrokerState::Killed => "killed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_lines_name_a_command_and_its_broker() {
        assert_eq!(parse("add").ok(), Some(StdinCommand::Add));
        assert_eq!(parse("  decommission 3 ").ok(), Some(StdinCommand::Decommission(3)));
        assert_eq!(parse("kill 1").ok(), Some(StdinCommand::Kill(1)));
        assert_eq!(parse("status").ok(), Some(StdinCommand::Status));
    }

    #[test]
    fn a_bad_stdin_line_says_what_is_wrong_and_lists_the_commands() {
        let missing = parse("decommission").err().map(|e| e.to_string());
        assert_eq!(missing.as_deref(), Some("which broker? (a broker id)"));
        let bad = parse("decommission one").err().map(|e| e.to_string());
        assert_eq!(bad.as_deref(), Some("\"one\" is not a broker id"));
        let unknown = parse("remove 1").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(unknown.contains("add, decommission N"), "{unknown}");
        assert!(
            parse("add 4").is_err(),
            "add takes no broker id: the cluster picks the next one"
        );
    }
}
