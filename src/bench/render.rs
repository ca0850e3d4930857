//! `kdeck bench render`: the time to build and render one console frame of a large cluster
//! view (TestBackend, no terminal I/O), and the CPU the whole process uses while an idle
//! console (embedded cluster, no demo) runs its real event loop headless.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use chrono::Utc;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio::sync::{mpsc, watch};

use crate::cli::{ClusterArgs, RenderBenchArgs};
use crate::config::KdeckConfig;
use crate::embedded::{DataDir, Embedded};
use crate::out::outln;
use crate::tui;
use crate::view::{
    BrokerRow, BrokerStatus, ClusterSource, ClusterView, Command, CommandOutcome, EpochStart, OutcomeSender,
    PartitionRow, ReplicaRole, ReplicaRow, SourceKind, TailBuffer, TailHandle, TailSpec, Throughput, TopicRow,
};

pub fn run(args: &RenderBenchArgs) -> Result<()> {
    super::block_on(run_async(args))
}

/// A source that only holds a view.
struct StaticSource(watch::Sender<Arc<ClusterView>>);

impl ClusterSource for StaticSource {
    fn views(&self) -> watch::Receiver<Arc<ClusterView>> {
        self.0.subscribe()
    }

    fn submit(&self, command: Command, outcomes: OutcomeSender) {
        let _ = outcomes.send(CommandOutcome {
            command,
            result: Err("the benchmark view is read-only".into()),
        });
    }

    fn tail(&self, spec: TailSpec, capacity: usize) -> TailHandle {
        TailHandle {
            spec,
            buffer: Arc::new(TailBuffer::new(capacity)),
        }
    }
}

/// A cluster of 6 brokers whose partitions are spread over topics of 100 partitions, RF 3.
fn large_view(partitions: u32) -> ClusterView {
    let brokers = 6;
    let per_topic = 100;
    let topic_count = partitions.div_ceil(per_topic);
    let now = Utc::now();
    let mut view = ClusterView::empty("bench", SourceKind::Embedded);
    view.taken_at = now;
    view.controller = Some(0);
    view.brokers = (0..brokers)
        .map(|id| BrokerRow {
            id,
            status: BrokerStatus::Online,
            is_controller: id == 0,
            leaders: partitions as usize / brokers as usize,
            replicas: partitions as usize * 3 / brokers as usize,
            throughput: Throughput::Bytes {
                in_per_sec: 1e6,
                out_per_sec: 2e6,
            },
            address: Some(format!("127.0.0.1:{}", 9092 + id)),
            disk_bytes: Some(40 << 30),
            produce_history: (0..60).map(|i| 1000 + i * 37 % 500).collect(),
            changed_at: None,
            lifecycle: None,
        })
        .collect();
    for n in 0..partitions {
        let topic = format!("topic-{:04}", n / per_topic);
        let p = (n % per_topic) as i32;
        let leader = (n as i32) % brokers;
        let replicas: Vec<ReplicaRow> = (0..3)
            .map(|k| ReplicaRow {
                broker: (leader + k) % brokers,
                role: if k == 0 {
                    ReplicaRole::Leader
                } else {
                    ReplicaRole::InSync
                },
                log_end_offset: Some(1_000_000 + i64::from(p)),
                log_start_offset: Some(0),
                high_watermark: Some(1_000_000),
                epochs: [EpochStart {
                    epoch: 3,
                    start_offset: 0,
                }]
                .into(),
                size_bytes: Some(1 << 30),
                caught_up_ms_ago: (k > 0).then_some(0),
            })
            .collect();
        view.partitions.push(PartitionRow {
            topic,
            partition: p,
            leader: Some(leader),
            leader_epoch: 3,
            isr: replicas.iter().map(|r| r.broker).collect(),
            replicas,
            preferred_leader: leader,
            high_watermark: Some(1_000_000),
            last_stable_offset: Some(1_000_000),
            log_start_offset: Some(0),
            under_replicated: false,
            min_insync_replicas: Some(2),
            adding: Vec::new(),
            removing: Vec::new(),
            changed_at: None,
        });
    }
    view.topics = (0..topic_count)
        .map(|t| TopicRow {
            name: format!("topic-{t:04}"),
            internal: false,
            partitions: per_topic as i32,
            replication_factor: 3,
            under_replicated: 0,
            offline: 0,
            messages: 100_000_000,
            size_bytes: Some(10 << 30),
            messages_per_sec: 12_345.0,
            total_lag: Some(42),
            retention: Some(crate::view::Retention {
                compact: false,
                delete: true,
                ms: 604_800_000,
                bytes: -1,
            }),
            unclean_election: Some(false),
        })
        .collect();
    view
}

async fn run_async(args: &RenderBenchArgs) -> Result<()> {
    let config = KdeckConfig::from_layers(None)?;
    let started = Instant::now();
    let view = Arc::new(large_view(args.partitions));
    let build = started.elapsed();
    let (tx, _) = watch::channel(Arc::clone(&view));
    let source: Arc<dyn ClusterSource> = Arc::new(StaticSource(tx));
    let (mut console, _outcomes) = tui::new_console(source, &config, None)?;
    let mut terminal = Terminal::new(TestBackend::new(args.width, args.height))?;
    let mut frames = Vec::with_capacity(args.frames as usize);
    for _ in 0..args.frames {
        let start = Instant::now();
        // A new Arc per frame, as when the snapshot task sends a view.
        console.set_view(Arc::new(ClusterView::clone(&view)));
        console.draw(&mut terminal, Utc::now())?;
        frames.push(start.elapsed());
    }
    frames.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let avg = frames.iter().sum::<Duration>() / args.frames;
    let pct = |p: f64| frames[((frames.len() as f64 - 1.0) * p) as usize];
    outln!(
        "render: {} partitions, {} brokers, {}x{}, {} frames, view built in {:.2} ms, {:.2} ms avg frame (view copy + layout + draw), {:.2} ms 50th, {:.2} ms 99th, {:.2} ms max",
        args.partitions,
        view.brokers.len(),
        args.width,
        args.height,
        args.frames,
        ms(build),
        ms(avg),
        ms(pct(0.5)),
        ms(pct(0.99)),
        ms(pct(1.0)),
    );
    if args.idle_secs > 0.0 {
        idle(args).await?;
    }
    Ok(())
}

/// CPU seconds (user + system) of this process so far, from /proc/self/stat (Linux; ticks of
/// USER_HZ = 100, as on every mainstream Linux).
fn process_cpu_secs() -> Result<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").context("reading /proc/self/stat (Linux only)")?;
    let after = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .context("parsing /proc/self/stat")?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let field = |i: usize| -> Result<f64> {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .context("parsing /proc/self/stat")
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    Ok((field(11)? + field(12)?) / 100.0)
}

async fn idle(args: &RenderBenchArgs) -> Result<()> {
    let config = KdeckConfig::from_layers(None)?;
    let cluster_args = ClusterArgs {
        ephemeral: true,
        no_demo: true,
        ..ClusterArgs::default()
    };
    let embedded = Arc::new(Embedded::start_in(&config, &cluster_args, DataDir::prepare(&cluster_args)?).await?);
    let source: Arc<dyn ClusterSource> = Arc::clone(&embedded) as Arc<dyn ClusterSource>;
    let (mut console, mut outcomes) = tui::new_console(source, &config, None)?;
    let mut terminal = Terminal::new(TestBackend::new(120, 40))?;
    let (input_tx, mut input) = mpsc::unbounded_channel();
    let ticker = tui::spawn_ticker(input_tx);
    let run = async {
        // Let start-up settle (elections, the offsets topic) before measuring.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let cpu_before = process_cpu_secs()?;
        let wall = Instant::now();
        tokio::time::sleep(Duration::from_secs_f64(args.idle_secs)).await;
        let cpu = process_cpu_secs()? - cpu_before;
        anyhow::Ok((cpu, wall.elapsed().as_secs_f64()))
    };
    let measured = tokio::select! {
        r = run => r,
        r = tui::event_loop(&mut terminal, &mut console, &mut input, &mut outcomes, None) => r.and(Err(anyhow::anyhow!("the console loop ended early"))),
    };
    ticker.abort();
    embedded.shutdown().await;
    let (cpu, wall) = measured?;
    outln!(
        "render idle: 3 brokers, no demo, console loop on a 120x40 test terminal, {wall:.1} s, {:.2} CPU seconds, {:.2}% of one core",
        cpu,
        cpu / wall * 100.0
    );
    Ok(())
}
