//! The kcat-like commands (`kdeck topics|list|produce|consume|groups|transactions|elect|reassign|configs`, and
//! `kdeck clusters`, the profiles they can name) against a Kafka
//! cluster's bootstrap servers, through `remote`. Output goes to stdout and pipes cleanly;
//! errors go to stderr with a non-zero exit, like kcat. A room of its own beside `serve.rs`
//! (DESIGN's list has none for it): it sits at the binary's edge, above `remote`, and borrows
//! the group assignor of `client/` for `consume -g`.

pub mod clusters;
mod configs;
mod consume;
mod elect;
mod format;
mod groups;
mod list;
mod member;
mod produce;
mod properties;
mod reassign;
mod records;
mod topics;
mod transactions;

use std::io::{self, Write};

use anyhow::{Context, Result};

use crate::cli::{
    ConfigsArgs, ConnectArgs, ConsumeArgs, ElectArgs, GroupsArgs, ListArgs, ProduceArgs, ReassignArgs, RecordsArgs,
    TopicsArgs, TransactionsArgs,
};
use crate::config::KdeckConfig;
use crate::remote::{ClientSettings, KafkaClient};
use properties::{Role, Tuning};

pub fn topics(args: &TopicsArgs) -> Result<()> {
    let Some((settings, _)) = settings(&args.connect, Role::Metadata)? else {
        return Ok(());
    };
    run(settings, async |client, out| topics::run(args, client, out).await)
}

pub fn list(args: &ListArgs) -> Result<()> {
    let Some((settings, _)) = settings(&args.connect, Role::Metadata)? else {
        return Ok(());
    };
    let topics: Vec<String> = args.topics.iter().chain(&args.topic).cloned().collect();
    run(settings, async |client, out| list::run(&topics, client, out).await)
}

pub fn produce(args: &ProduceArgs) -> Result<()> {
    let Some((settings, tuning)) = settings(&args.connect, Role::Producer)? else {
        return Ok(());
    };
    let plan = produce::Plan::new(args, tuning)?;
    run(settings, async |client, _| produce::run(plan, client).await)
}

pub fn consume(args: &ConsumeArgs) -> Result<()> {
    let Some((settings, tuning)) = settings(&args.connect, Role::Consumer)? else {
        return Ok(());
    };
    let plan = consume::Plan::new(args, tuning)?;
    run(settings, async |client, out| consume::run(plan, client, out).await)
}

pub fn groups(args: &GroupsArgs) -> Result<()> {
    let Some((settings, _)) = settings(&args.connect, Role::Metadata)? else {
        return Ok(());
    };
    run(settings, async |client, out| groups::run(args, client, out).await)
}

pub fn transactions(args: &TransactionsArgs) -> Result<()> {
    let Some((settings, _)) = settings(&args.connect, Role::Metadata)? else {
        return Ok(());
    };
    run(settings, async |client, out| transactions::run(args, client, out).await)
}

pub fn elect(args: &ElectArgs) -> Result<()> {
    let Some((settings, _)) = settings(&args.connect, Role::Metadata)? else {
        return Ok(());
    };
    run(settings, async |client, out| elect::run(args, client, out).await)
}

pub fn reassign(args: &ReassignArgs) -> Result<()> {
    let Some((settings, _)) = settings(&args.connect, Role::Metadata)? else {
        return Ok(());
    };
    run(settings, async |client, out| reassign::run(args, client, out).await)
}

pub fn records(args: &RecordsArgs) -> Result<()> {
    let Some((settings, _)) = settings(&args.connect, Role::Metadata)? else {
        return Ok(());
    };
    run(settings, async |client, out| records::run(args, client, out).await)
}

/// `kdeck clusters`: the configuration's profiles, one line each (no cluster is asked).
pub fn clusters(args: &crate::cli::ClustersArgs) -> Result<()> {
    let config = KdeckConfig::load(args.config.as_deref())?;
    let mut out = Output::stdout();
    let printed = clusters::lines(&config)
        .iter()
        .try_for_each(|line| out.line(line))
        .and_then(|()| out.flush());
    match printed {
        Err(error) if error.downcast_ref::<PipeClosed>().is_some() => Ok(()),
        other => other,
    }
}

pub fn configs(args: &ConfigsArgs) -> Result<()> {
    let Some((settings, _)) = settings(&args.connect, Role::Metadata)? else {
        return Ok(());
    };
    run(settings, async |client, out| configs::run(args, client, out).await)
}

/// The checked client settings: the configuration's `[remote]`, the `-X` properties over it,
/// the flags over those; and what the properties set for a producer or consumer. None when
/// `-X list` asked only for the properties kdeck takes (printed here).
fn settings(connect: &ConnectArgs, role: Role) -> Result<Option<(ClientSettings, Tuning)>> {
    if connect
        .properties
        .iter()
        .any(|(name, value)| name == "list" && value.is_empty())
    {
        let mut out = Output::stdout();
        let printed = properties::list()
            .iter()
            .try_for_each(|line| out.line(line))
            .and_then(|()| out.flush());
        return match printed {
            Err(error) if error.downcast_ref::<PipeClosed>().is_none() => Err(error),
            _ => Ok(None),
        };
    }
    let config = KdeckConfig::load(connect.config.as_deref())?;
    let mut remote = connect.base_remote(&config).map_err(anyhow::Error::msg)?;
    let tuning = properties::apply(&connect.properties, role, &mut remote)?;
    let remote = connect.remote_config(&remote);
    let settings = ClientSettings::from_config(&remote).map_err(anyhow::Error::msg)?;
    Ok(Some((settings, tuning)))
}

/// Connects and runs `command` on a runtime of its own. A reader that went away (`| head`)
/// is not an error: the command just ends, as `head` expects.
fn run(settings: ClientSettings, command: impl AsyncFnOnce(&KafkaClient, &mut Output) -> Result<()>) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let client = KafkaClient::connect(settings).await?;
        let mut out = Output::stdout();
        let result = command(&client, &mut out).await.and_then(|()| out.flush());
        client.close();
        match result {
            Err(error) if error.downcast_ref::<PipeClosed>().is_some() => Ok(()),
            other => other,
        }
    })
}

/// The reader of stdout is gone; the command stops quietly.
#[derive(Debug, thiserror::Error)]
#[error("the output pipe was closed")]
pub(crate) struct PipeClosed;

/// Buffered stdout whose write errors tell a closed pipe apart from a real failure.
pub(crate) struct Output {
    inner: Box<dyn Write>,
}

impl Output {
    fn stdout() -> Output {
        Output {
            inner: Box::new(io::BufWriter::with_capacity(64 * 1024, io::stdout())),
        }
    }

    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.inner.write_all(bytes).map_err(output_error)
    }

    pub(crate) fn line(&mut self, text: &str) -> Result<()> {
        self.write(text.as_bytes())?;
        self.write(b"\n")
    }

    /// Hands what was written to the reader now, so that a pipe sees records as they come.
    pub(crate) fn flush(&mut self) -> Result<()> {
        self.inner.flush().map_err(output_error)
    }
}

fn output_error(error: io::Error) -> anyhow::Error {
    if error.kind() == io::ErrorKind::BrokenPipe {
        PipeClosed.into()
    } else {
        anyhow::Error::new(error).context("cannot write to stdout")
    }
}
