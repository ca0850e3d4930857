//! `kdeck reassign plan|execute|status|cancel`: partition reassignment as
//! kafka-reassign-partitions.sh does it (--generate, --execute, --verify, --cancel), with its
//! JSON files, and plans that move as few replicas as they can. `execute --throttle` sets the
//! replication throttle (KIP-73) through the configs API, as Kafka's tool does, and `status`
//! removes it once every move of the plan is complete.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::Output;
use crate::cli::{PlanArgs, ReassignAction, ReassignArgs};
use crate::kafka::reassign::{
    self, Assignment, FOLLOWER_THROTTLED_RATE, FOLLOWER_THROTTLED_REPLICAS, Goal, LEADER_THROTTLED_RATE,
    LEADER_THROTTLED_REPLICAS, Plan, Throttle, ThrottleTarget,
};
use crate::remote::KafkaClient;
use crate::remote::ops;
use crate::view::ConfigTarget;

pub(crate) async fn run(args: &ReassignArgs, client: &KafkaClient, out: &mut Output) -> Result<()> {
    match &args.action {
        ReassignAction::Plan(plan) => propose(plan, client, out).await,
        ReassignAction::Execute {
            file,
            reassignment_json_file,
            additional,
            throttle,
        } => {
            let plan = read_plan(chosen(file, reassignment_json_file)?)?;
            execute(&plan, *additional, *throttle, client, out).await
        }
        ReassignAction::Status {
            file,
            reassignment_json_file,
            preserve_throttles,
        } => match file.as_ref().or(reassignment_json_file.as_ref()) {
            Some(path) => verify(&read_plan(path)?, *preserve_throttles, client, out).await,
            None => in_progress(client, out).await,
        },
        ReassignAction::Cancel {
            file,
            reassignment_json_file,
            all,
        } => {
            let partitions: Vec<(String, i32)> = if *all {
                ops::list_reassignments(client, None)
                    .await?
                    .into_iter()
                    .map(|o| (o.topic, o.partition))
                    .collect()
            } else {
                let plan = read_plan(chosen(file, reassignment_json_file)?)?;
                plan.partitions.into_iter().map(|a| (a.topic, a.partition)).collect()
            };
            cancel(&partitions, client, out).await
        }
    }
}

fn chosen<'a>(file: &'a Option<PathBuf>, flag: &'a Option<PathBuf>) -> Result<&'a PathBuf> {
    file.as_ref()
        .or(flag.as_ref())
        .context("a plan file is needed (FILE or --reassignment-json-file)")
}

/// A file's text, or stdin's for `-`.
fn read_text(path: &Path) -> Result<String> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the plan from stdin")?;
        Ok(text)
    } else {
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
    }
}

fn read_plan(path: &Path) -> Result<Plan> {
    let text = read_text(path)?;
    Plan::from_json(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

fn replicas(list: &[i32]) -> String {
    let ids: Vec<String> = list.iter().map(i32::to_string).collect();
    format!("[{}]", ids.join(","))
}

async fn propose(args: &PlanArgs, client: &KafkaClient, out: &mut Output) -> Result<()> {
    let (current, brokers) = ops::assignments(client).await?;
    let mut topics = args.topics.clone();
    if let Some(path) = &args.topics_to_move_json_file {
        let text = read_text(path)?;
        topics = reassign::topics_from_json(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    }
    let goals: Vec<Goal> = if let Some(broker) = args.drain {
        vec![Goal::Drain {
            broker,
            topics: topics.clone(),
        }]
    } else if args.balance {
        vec![Goal::Balance { topics: topics.clone() }]
    } else if let Some(rf) = args.replication_factor {
        topics
            .iter()
            .map(|topic| Goal::ReplicationFactor {
                topic: topic.clone(),
                replication_factor: usize::from(rf),
            })
            .collect()
    } else if let Some(onto) = &args.broker_list {
        vec![Goal::Spread {
            topics: topics.clone(),
            brokers: onto.clone(),
        }]
    } else if let Some(m) = &args.move_replica {
        vec![Goal::Move {
            topic: m.topic.clone(),
            partition: m.partition,
            from: m.from,
            to: m.to,
        }]
    } else {
        bail!("say what the plan is for: --drain, --balance, --replication-factor, --broker-list or --move");
    };
    // Goals apply one after the other (a replication factor per topic), each on the last's result.
    let mut after = current.clone();
    for goal in &goals {
        let step = reassign::propose(&after, &brokers, goal).map_err(anyhow::Error::msg)?;
        for a in step.partitions {
            if let Some(slot) = after
                .iter_mut()
                .find(|c| c.topic == a.topic && c.partition == a.partition)
            {
                *slot = a;
            }
        }
    }
    let partitions: Vec<Assignment> = after.into_iter().filter(|a| !current.contains(a)).collect();
    let plan = Plan { partitions };
    if plan.partitions.is_empty() {
        eprintln!("nothing to move: the cluster already meets the goal");
        return Ok(());
    }
    for (now, next) in plan.diff(&current) {
        eprintln!("{}  {} -> {}", now.name(), replicas(&now.replicas), replicas(&next));
    }
    eprintln!(
        "{} partitions change, {} replicas to copy; save the JSON and run `kdeck reassign execute FILE`",
        plan.partitions.len(),
        plan.replicas_moved(&current)
    );
    out.line(&plan.to_json())
}

/// Sets the replication throttle of `plan` (before its moves start, as Kafka's tool does).
async fn set_throttle(throttle: &Throttle, client: &KafkaClient, out: &mut Output) -> Result<()> {
    for (target, set) in throttle.configs() {
        let target = match target {
            ThrottleTarget::Broker(b) => ConfigTarget::Broker(b),
            ThrottleTarget::Topic(t) => ConfigTarget::Topic(t),
        };
        ops::incremental_alter_configs(client, &target, &set, &[], false)
            .await
            .with_context(|| format!("cannot set the replication throttle of {target}"))?;
    }
    out.line(
        "Warning: You must run `kdeck reassign status` with this plan periodically, until the reassignment completes, to ensure the throttle is removed.",
    )?;
    out.line(&format!(
        "The inter-broker throttle limit was set to {} B/s (on brokers {})",
        throttle.rate,
        ids(&throttle.brokers)
    ))
}

fn ids<'a>(brokers: impl IntoIterator<Item = &'a i32>) -> String {
    brokers.into_iter().map(i32::to_string).collect::<Vec<_>>().join(",")
}

/// Removes the replication throttle: both rates from every broker, both replica lists from
/// the plan's topics (Kafka's `clearAllThrottles`).
async fn clear_throttle(plan: &Plan, client: &KafkaClient, out: &mut Output) -> Result<()> {
    let (_, brokers) = ops::assignments(client).await?;
    let rates = [LEADER_THROTTLED_RATE.to_string(), FOLLOWER_THROTTLED_RATE.to_string()];
    for b in &brokers {
        ops::incremental_alter_configs(client, &ConfigTarget::Broker(*b), &[], &rates, false)
            .await
            .with_context(|| format!("cannot remove the replication throttle of broker {b}"))?;
    }
    out.line(&format!("Clearing broker-level throttles on brokers {}", ids(&brokers)))?;
    let topics: std::collections::BTreeSet<&str> = plan.partitions.iter().map(|a| a.topic.as_str()).collect();
    let lists = [
        LEADER_THROTTLED_REPLICAS.to_string(),
        FOLLOWER_THROTTLED_REPLICAS.to_string(),
    ];
    for t in &topics {
        ops::incremental_alter_configs(client, &ConfigTarget::Topic(t.to_string()), &[], &lists, false)
            .await
            .with_context(|| format!("cannot remove the replication throttle of topic {t}"))?;
    }
    out.line(&format!(
        "Clearing topic-level throttles on topics {}",
        topics.into_iter().collect::<Vec<_>>().join(",")
    ))
}

async fn execute(
    plan: &Plan,
    additional: bool,
    throttle: Option<u64>,
    client: &KafkaClient,
    out: &mut Output,
) -> Result<()> {
    if !additional {
        let ongoing = ops::list_reassignments(client, None).await?;
        if !ongoing.is_empty() {
            let names: Vec<String> = ongoing.iter().map(|o| format!("{}-{}", o.topic, o.partition)).collect();
            bail!(
                "cannot execute: reassignments are in progress ({}); use --additional to start these as well",
                names.join(", ")
            );
        }
    }
    let (current, _) = ops::assignments(client).await?;
    out.line("Current partition replica assignment")?;
    out.line("")?;
    out.line(&plan.rollback(&current).to_json())?;
    out.line("")?;
    out.line("Save this to use as the --reassignment-json-file option during rollback")?;
    if let Some(rate) = throttle {
        set_throttle(&Throttle::of(plan, &current, rate), client, out).await?;
    }
    let moves: Vec<(String, i32, Option<Vec<i32>>)> = plan
        .partitions
        .iter()
        .map(|a| (a.topic.clone(), a.partition, Some(a.replicas.clone())))
        .collect();
    let answers = ops::alter_reassignments(client, &moves).await?;
    let started: Vec<String> = answers
        .iter()
        .filter(|(_, _, e)| e.is_none())
        .map(|(t, p, _)| format!("{t}-{p}"))
        .collect();
    if !started.is_empty() {
        out.line(&format!(
            "Successfully started partition reassignments for {}",
            started.join(",")
        ))?;
    }
    failures(&answers, "reassignments", out)
}

/// Prints each refused partition and fails when there is one.
fn failures(answers: &[(String, i32, Option<String>)], what: &str, out: &mut Output) -> Result<()> {
    let failed: Vec<String> = answers
        .iter()
        .filter_map(|(t, p, e)| e.as_ref().map(|e| format!("{t}-{p}: {e}")))
        .collect();
    if failed.is_empty() {
        return Ok(());
    }
    out.flush()?;
    bail!(
        "{} of {} {what} failed:\n{}",
        failed.len(),
        answers.len(),
        failed.join("\n")
    )
}

async fn verify(plan: &Plan, preserve_throttles: bool, client: &KafkaClient, out: &mut Output) -> Result<()> {
    let asked: Vec<(String, i32)> = plan.partitions.iter().map(|a| (a.topic.clone(), a.partition)).collect();
    let ongoing = ops::list_reassignments(client, Some(&asked)).await?;
    let (current, _) = ops::assignments(client).await?;
    out.line("Status of partition reassignment:")?;
    let mut all_complete = true;
    for target in &plan.partitions {
        let name = target.name();
        let line = if ongoing
            .iter()
            .any(|o| o.topic == target.topic && o.partition == target.partition)
        {
            all_complete = false;
            format!("Reassignment of partition {name} is still in progress.")
        } else {
            match current
                .iter()
                .find(|c| c.topic == target.topic && c.partition == target.partition)
            {
                None => format!("There is no partition {name}."),
                Some(c) if c.replicas == target.replicas => format!("Reassignment of partition {name} is completed."),
                Some(c) => format!(
                    "There is no active reassignment of partition {name}, but replica set is {} rather than {}.",
                    replicas(&c.replicas),
                    replicas(&target.replicas)
                ),
            }
        };
        out.line(&line)?;
    }
    // As Kafka's --verify: once no move of the plan is left, the throttle goes.
    if all_complete && !preserve_throttles {
        clear_throttle(plan, client, out).await?;
    }
    Ok(())
}

async fn in_progress(client: &KafkaClient, out: &mut Output) -> Result<()> {
    let ongoing = ops::list_reassignments(client, None).await?;
    if ongoing.is_empty() {
        out.line("no reassignment in progress")?;
        return Ok(());
    }
    let metadata = client.refresh_metadata().await?;
    out.line(&format!(
        "{:<24} {:>9}  {:<12} {:<10} {:<10} {:<12}",
        "TOPIC", "PARTITION", "REPLICAS", "ADDING", "REMOVING", "ISR"
    ))?;
    for o in &ongoing {
        let isr = metadata
            .topic(&o.topic)
            .and_then(|t| t.partitions.iter().find(|p| p.partition == o.partition))
            .map_or_else(|| "-".to_string(), |p| replicas(&p.isr));
        out.line(&format!(
            "{:<24} {:>9}  {:<12} {:<10} {:<10} {:<12}",
            o.topic,
            o.partition,
            replicas(&o.replicas),
            replicas(&o.adding),
            replicas(&o.removing),
            isr
        ))?;
    }
    Ok(())
}

async fn cancel(partitions: &[(String, i32)], client: &KafkaClient, out: &mut Output) -> Result<()> {
    if partitions.is_empty() {
        out.line("no reassignment in progress")?;
        return Ok(());
    }
    let cancels: Vec<(String, i32, Option<Vec<i32>>)> = partitions.iter().map(|(t, p)| (t.clone(), *p, None)).collect();
    let answers = ops::alter_reassignments(client, &cancels).await?;
    let cancelled: Vec<String> = answers
        .iter()
        .filter(|(_, _, e)| e.is_none())
        .map(|(t, p, _)| format!("{t}-{p}"))
        .collect();
    if !cancelled.is_empty() {
        out.line(&format!(
            "Successfully cancelled partition reassignments for: {}",
            cancelled.join(",")
        ))?;
    }
    failures(&answers, "cancellations", out)
}
