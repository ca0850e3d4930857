//! `kdeck bench storage`: append to one partition log against plain sequential writes of the
//! same bytes, read it back, recover it after an unclean stop, and measure group commit.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::{make_batch, mb, now_ms};
use crate::cli::StorageBenchArgs;
use crate::out::outln;
use crate::storage::checkpoint::RECOVERY_POINT_CHECKPOINT;
use crate::storage::{FlushPolicy, Log, LogConfig, batch};

pub fn run(args: &StorageBenchArgs) -> Result<()> {
    let tmp = match &args.dir {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .context("creating the benchmark directory")?;
    let template = make_batch(args.batch_bytes, args.record_bytes)?;
    let batches = (args.bytes / template.len() as u64).max(1);
    let total = batches * template.len() as u64;
    let records_per_batch = batch::BatchHeader::parse(&template)?.records_count as u64;
    outln!(
        "storage setup: {} batches of {} bytes ({} records of {} bytes), {:.1} MB in {}",
        batches,
        template.len(),
        records_per_batch,
        args.record_bytes,
        mb(total),
        tmp.path().display()
    );

    let config = LogConfig {
        segment_bytes: args.segment_bytes,
        max_message_bytes: (template.len() as u64).max(LogConfig::default().max_message_bytes),
        ..LogConfig::default()
    };
    // Rounds alternate raw writes and log appends, so that neither side always meets the
    // colder page cache; medians are compared. The last round's log is kept for reading.
    let log_dir = tmp.path().join("bench-0");
    let mut raw_times = Vec::new();
    let mut append_times = Vec::new();
    let mut log = None;
    for round in 1..=args.rounds {
        // Both sides start with the previous round's files gone: cached pages of a file
        // still present slow the next writer down on this kind of VM.
        drop(log.take());
        let _ = std::fs::remove_dir_all(&log_dir);
        let (_, raw) = raw_write(&tmp.path().join("raw.bin"), &template, RawWrite::Batches(batches))?;
        outln!(
            "storage raw write (round {round}): {} bytes in {:.2} s, {:.1} MB/s (sequential write calls, no fsync)",
            total,
            raw.as_secs_f64(),
            mb(total) / raw.as_secs_f64()
        );
        raw_times.push(raw);
        let fresh = Log::open(&log_dir, config.clone(), now_ms())?;
        let mut buf = template.clone();
        let start = Instant::now();
        for _ in 0..batches {
            batch::set_base_offset(&mut buf, 0);
            fresh.append_as_leader(&mut buf, 0, now_ms())?;
        }
        let append = start.elapsed();
        outln!(
            "storage append (round {round}, flush=never): {} records, {:.1} records/sec, {:.1} MB/s, {} segments",
            batches * records_per_batch,
            (batches * records_per_batch) as f64 / append.as_secs_f64(),
            mb(total) / append.as_secs_f64(),
            fresh.segments().len()
        );
        append_times.push(append);
        fresh.flush()?;
        log = Some(fresh);
    }
    let log = log.context("at least one round")?;
    let append_rate = mb(total) / median(&mut append_times).as_secs_f64();
    let raw_rate = mb(total) / median(&mut raw_times).as_secs_f64();

    let start = Instant::now();
    let mut offset = 0;
    let mut read_bytes = 0u64;
    let leo = log.log_end_offset();
    while offset < leo {
        let data = log.read(offset, 1 << 20, None)?;
        let mut last = offset;
        for item in batch::Batches::new(&data.records) {
            let (_, header, _) = item.map_err(|(at, e)| anyhow::anyhow!("batch at {at}: {e}"))?;
            last = header.next_offset();
        }
        if last == offset {
            bail!("read made no progress at offset {offset}");
        }
        read_bytes += data.records.len() as u64;
        offset = last;
    }
    let read = start.elapsed();
    outln!(
        "storage read: {} bytes in {:.2} s, {:.1} MB/s (1 MiB fetches, CRC-checked)",
        read_bytes,
        read.as_secs_f64(),
        mb(read_bytes) / read.as_secs_f64()
    );

    // An unclean stop with no recovery point: the worst case, every segment is scanned.
    drop(log);
    std::fs::remove_file(log_dir.join(RECOVERY_POINT_CHECKPOINT)).context("removing the recovery point")?;
    let start = Instant::now();
    let log = Log::open(&log_dir, config.clone(), now_ms())?;
    let recovery = start.elapsed();
    if log.log_end_offset() != leo {
        bail!(
            "recovery lost data: log end {} after reopening, {} before",
            log.log_end_offset(),
            leo
        );
    }
    outln!(
        "storage recovery scan: {} bytes in {:.2} s, {:.1} MB/s (unclean open, CRC of every batch, indexes rebuilt)",
        log.size_bytes(),
        recovery.as_secs_f64(),
        mb(log.size_bytes()) / recovery.as_secs_f64()
    );
    // A clean stop and start: no recovery, and the open transactions come from the clean
    // shutdown's snapshot instead of every batch header.
    log.close()?;
    drop(log);
    let start = Instant::now();
    let log = Log::open(&log_dir, config.clone(), now_ms())?;
    let clean_open = start.elapsed();
    outln!(
        "storage clean open: {} bytes in {:.1} ms (clean shutdown before, {} segments)",
        log.size_bytes(),
        clean_open.as_secs_f64() * 1000.0,
        log.segments().len()
    );
    drop(log);
    std::fs::remove_dir_all(&log_dir).ok();

    for writers in [1, args.writers] {
        group_commit(tmp.path(), &template, &config, writers, args.group_commit_secs)?;
    }

    outln!(
        "storage append: {:.1} MB/s = {:.0}% of raw write ({:.1} MB/s), medians of {} rounds",
        append_rate,
        100.0 * append_rate / raw_rate,
        raw_rate,
        args.rounds
    );
    Ok(())
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

/// How long a raw write goes on.
pub(super) enum RawWrite {
    /// This many copies of the template.
    Batches(u64),
    /// Copies of the template until this much time has passed.
    For(Duration),
}

/// Plain sequential write calls of `template` to a new file at `path`, no fsync while timed:
/// the bytes written and the time they took. The file is synced (its dirty pages drained, so
/// whatever runs next starts from the same state) and removed after.
pub(super) fn raw_write(path: &Path, template: &[u8], how_long: RawWrite) -> Result<(u64, Duration)> {
    let mut file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let start = Instant::now();
    let mut batches = 0u64;
    let more = |batches: u64| match how_long {
        RawWrite::Batches(n) => batches < n,
        RawWrite::For(d) => start.elapsed() < d,
    };
    while more(batches) {
        file.write_all(template)
            .with_context(|| format!("writing {}", path.display()))?;
        batches += 1;
    }
    let elapsed = start.elapsed();
    file.sync_all().with_context(|| format!("syncing {}", path.display()))?;
    drop(file);
    std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
    Ok((batches * template.len() as u64, elapsed))
}

fn group_commit(dir: &Path, template: &[u8], base: &LogConfig, writers: u32, secs: f64) -> Result<()> {
    let log_dir = dir.join(format!("group-commit-{writers}"));
    let config = LogConfig {
        flush: FlushPolicy::Always,
        ..base.clone()
    };
    let log = Arc::new(Log::open(&log_dir, config, now_ms())?);
    let stop = Arc::new(AtomicBool::new(false));
    let appends = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let handles: Vec<_> = (0..writers)
        .map(|_| {
            let (log, stop, appends) = (Arc::clone(&log), Arc::clone(&stop), Arc::clone(&appends));
            let mut buf = template.to_vec();
            std::thread::spawn(move || -> Result<()> {
                while !stop.load(Ordering::Relaxed) {
                    batch::set_base_offset(&mut buf, 0);
                    log.append_as_leader(&mut buf, 0, now_ms())?;
                    appends.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().map_err(|_| anyhow::anyhow!("a writer thread panicked"))??;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let n = appends.load(Ordering::Relaxed);
    let fsyncs = log.fsync_count().max(1);
    outln!(
        "storage group commit (flush=always, {writers} writers): {n} appends in {elapsed:.2} s, {:.1} appends/sec, {:.1} MB/s, {:.1} fsyncs/sec, {:.1} appends per fsync",
        n as f64 / elapsed,
        mb(n * template.len() as u64) / elapsed,
        fsyncs as f64 / elapsed,
        n as f64 / fsyncs as f64
    );
    drop(log);
    std::fs::remove_dir_all(&log_dir).ok();
    Ok(())
}
