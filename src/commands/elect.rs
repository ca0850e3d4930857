//! `kdeck elect [--topic T [--partition P]]`: preferred-leader elections.

use anyhow::{Result, bail};

use super::Output;
use crate::cli::ElectArgs;
use crate::remote::KafkaClient;
use crate::remote::ops;

pub(crate) async fn run(args: &ElectArgs, client: &KafkaClient, out: &mut Output) -> Result<()> {
    let results = ops::elect_preferred(client, args.topic.as_deref(), args.partition).await?;
    let mut failed = 0;
    for result in &results {
        match &result.error {
            None => out.line(&format!("{} {} preferred leader", result.topic, result.partition))?,
            Some(error) => {
                failed += 1;
                out.line(&format!("{} {} failed: {error}", result.topic, result.partition))?;
            }
        }
    }
    if failed > 0 {
        out.flush()?;
        bail!("{failed} of {} elections failed", results.len());
    }
    Ok(())
}
