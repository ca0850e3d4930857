//! The kcat-like commands (`kdeck topics|produce|consume|groups|elect`) against a Kafka
//! cluster's bootstrap servers, through `remote`. Output goes to stdout and pipes cleanly;
//! errors go to stderr with a non-zero exit, like kcat.

use anyhow::Result;

use crate::cli::{ConsumeArgs, ElectArgs, GroupsArgs, ProduceArgs, TopicsArgs};

pub fn topics(args: &TopicsArgs) -> Result<()> {
    let _ = args;
    anyhow::bail!("not yet")
}

pub fn produce(args: &ProduceArgs) -> Result<()> {
    let _ = args;
    anyhow::bail!("not yet")
}

pub fn consume(args: &ConsumeArgs) -> Result<()> {
    let _ = args;
    anyhow::bail!("not yet")
}

pub fn groups(args: &GroupsArgs) -> Result<()> {
    let _ = args;
    anyhow::bail!("not yet")
}

pub fn elect(args: &ElectArgs) -> Result<()> {
    let _ = args;
    anyhow::bail!("not yet")
}
