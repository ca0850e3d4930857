//! `kdeck records delete --topic T --partition P --offset N`: DeleteRecords at the leader
//! (kafka-delete-records.sh for one partition). Prints the partition's new low watermark.

use anyhow::Result;

use super::Output;
use crate::cli::{RecordsAction, RecordsArgs};
use crate::remote::KafkaClient;
use crate::remote::ops;

pub(crate) async fn run(args: &RecordsArgs, client: &KafkaClient, out: &mut Output) -> Result<()> {
    match &args.action {
        RecordsAction::Delete {
            topic,
            partition,
            offset,
        } => {
            let low = ops::delete_records(client, topic, *partition, *offset).await?;
            out.line(&format!("{topic} {partition} low_watermark={low}"))
        }
    }
}
