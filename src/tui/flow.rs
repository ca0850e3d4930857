//! The flow picture: records flowing through one partition as a diagram, producers -> the
//! leader -> each follower, and the leader -> the consumer groups that read the partition.
//! Batches (`■`) move along the produce and fetch arrows, acks (`✓`) come back to the
//! producers and each follower's fetch position (`◆`, from which the leader moves the HW)
//! back to the leader. A follower that cannot fetch (fenced, offline, paused, its link cut)
//! gets a dashed arrow ending in `✗`; a slow link a dashed arrow whose batches crawl.
//!
//! The batches stand where the cluster's clock puts them ([`positions`]): the picture is a
//! function of the view and the clock's instant, so a freeze stops them, slow motion slows
//! them, and with no traffic nothing moves (and the console draws no frame for it, see
//! [`moving`]).

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::app::{App, Screen};
use super::explain::wrap;
use super::text::{fit, rate};
use super::theme::Theme;
use crate::view::explain;
use crate::view::lang::Lang;
use crate::view::timeline::{ids, partition_name};
use crate::view::{BrokerId, BrokerStatus, ClusterView, LinkState, ReplicaRole};

/// How long a batch takes along an arrow, in the cluster's milliseconds (a slow link adds
/// its delay).
const CROSSING_MS: i64 = 2000;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, topic: &str, partition: i32, now: DateTime<Utc>) {
    let t = &app.theme;
    let tp = partition_name(topic, partition);
    let lang = app.lang;
    let inner = super::replica_log::picture_frame(frame, area, app, "Records flowing", &tp);
    let Some(flow) = Flow::of(&app.view, topic, partition) else {
        let text = lang.fmt(super::replica_log::NOT_IN_METADATA, &[("partition", &tp)]);
        frame.render_widget(Paragraph::new(Line::styled(text, t.warn)), inner);
        return;
    };
    let clock = clock_at(&app.view, now);
    let mut notes: Vec<String> = app
        .view
        .partitions_of(topic)
        .filter(|p| p.partition == partition)
        .flat_map(|p| {
            p.replicas
                .iter()
                .map(|r| lang.say(&explain::replica_said(&app.view, p, r)))
        })
        .collect();
    notes.extend(flow.rules().iter().map(|r| lang.tr(r).to_string()));
    let lines = picture(
        &flow,
        t,
        lang,
        clock,
        &notes,
        inner.width as usize,
        inner.height as usize,
    );
    frame.render_widget(Paragraph::new(lines), inner);
}

/// Whether the open flow picture has batches moving now: the console draws a frame per tick
/// then, and none for it when nothing moves (no traffic, nothing to catch up, or the
/// cluster's clock frozen).
pub fn moving(app: &App) -> bool {
    let Screen::Flow { topic, partition } = app.screen() else {
        return false;
    };
    Flow::of(&app.view, topic, *partition).is_some_and(|f| !f.frozen() && f.moves())
}

/// The cluster's clock at `now`: the embedded cluster's own (stopped while frozen, slower in
/// slow motion), the wall clock for an external cluster.
pub fn clock_at(view: &ClusterView, now: DateTime<Utc>) -> i64 {
    match view.controls {
        Some(c) => c.clock_at(view.taken_at, now),
        None => now.timestamp_millis(),
    }
}

/// Where the glyphs on an arrow of `len` cells stand at `clock_ms` (cell 0 is the arrow's
/// tail): `count` of them evenly spaced, each crossing in `crossing_ms`.
pub fn positions(len: usize, clock_ms: i64, crossing_ms: i64, count: usize) -> Vec<usize> {
    if len == 0 || count == 0 {
        return Vec::new();
    }
    let crossing = crossing_ms.max(1);
    let phase = (i128::from(clock_ms.rem_euclid(crossing)) * len as i128 / i128::from(crossing)) as usize;
    let mut cells: Vec<usize> = (0..count.min(len)).map(|k| (phase + k * len / count) % len).collect();
    cells.sort_unstable();
    cells.dedup();
    cells
}

/// How a follower's fetches fare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetch {
    /// Fetching and in the ISR.
    InSync,
    /// Fetching, out of the ISR: catching up.
    OutOfIsr,
    /// Fetching over a link that delays every request this many milliseconds.
    Slow(u64),
    /// The link between it and the leader is cut: nothing arrives.
    Cut,
    /// Its broker is fenced by the controller.
    Fenced,
    /// Its broker is paused (a long GC pause): it sends nothing.
    Paused,
    /// Its broker is down (the status's label: stopped, killed, down, unreach).
    Offline(&'static str),
    /// The partition has no leader to fetch from.
    NoLeader,
}

impl Fetch {
    /// Whether records can reach the follower at all.
    pub fn flows(self) -> bool {
        matches!(self, Fetch::InSync | Fetch::OutOfIsr | Fetch::Slow(_))
    }

    /// The label over its arrow in `lang`, longest first.
    fn labels(self, lang: &Lang) -> Vec<String> {
        let tr = |english: &str| lang.tr(english).to_string();
        match self {
            Fetch::InSync => vec![tr("fetching")],
            Fetch::OutOfIsr => vec![tr("out of ISR"), tr("not in ISR")],
            Fetch::Slow(ms) => vec![
                lang.fmt("slow link {ms} ms", &[("ms", &ms)]),
                lang.fmt("slow {ms} ms", &[("ms", &ms)]),
                lang.fmt("{ms} ms", &[("ms", &ms)]),
            ],
            Fetch::Cut => vec![tr("link cut"), tr("cut")],
            Fetch::Fenced => vec![tr("fenced")],
            Fetch::Paused => vec![tr("paused")],
            Fetch::Offline(status) => vec![
                lang.fmt("offline ({status})", &[("status", &lang.tr(status))]),
                tr("offline"),
            ],
            Fetch::NoLeader => vec![tr("no leader")],
        }
    }
}

/// The producers' side, as far as the view knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Producers {
    /// Whose producers: a scenario's workload, the demo, or any client.
    pub who: &'static str,
    /// Records per second into the whole topic.
    pub rate: f64,
    /// `acks` (0, 1, -1), when the producers are the console's own.
    pub acks: Option<i16>,
    /// The most frequent failure so far (Kafka's error name, count).
    pub error: Option<(String, u64)>,
    pub acked: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Leader {
    pub broker: BrokerId,
    pub epoch: i32,
    pub log_end: Option<i64>,
    /// Its broker is down: nothing can be written or read.
    pub offline: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Follower {
    pub broker: BrokerId,
    pub role: ReplicaRole,
    pub in_isr: bool,
    pub log_end: Option<i64>,
    /// Records behind the leader's log end.
    pub behind: Option<i64>,
    pub fetch: Fetch,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub id: String,
    pub state: String,
    pub members: usize,
    pub committed: Option<i64>,
    pub lag: Option<i64>,
}

/// What one partition's flow is made of, read from one view.
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    pub topic: String,
    pub producers: Producers,
    pub leader: Option<Leader>,
    pub high_watermark: Option<i64>,
    pub isr: Vec<BrokerId>,
    pub min_insync: Option<i32>,
    pub followers: Vec<Follower>,
    pub groups: Vec<Group>,
    /// The cluster's clock: (frozen, slow-motion factor); `None` for an external cluster.
    pub clock: Option<(bool, u32)>,
}

impl Flow {
    pub fn of(view: &ClusterView, topic: &str, partition: i32) -> Option<Flow> {
        let p = view.partitions_of(topic).find(|p| p.partition == partition)?;
        let status = |b: BrokerId| view.brokers.iter().find(|r| r.id == b).map(|r| r.status);
        let leader = p.leader.map(|l| Leader {
            broker: l,
            epoch: p.leader_epoch,
            log_end: p.replica(l).and_then(|r| r.log_end_offset),
            offline: p.offline(),
        });
        let leader_up = leader.as_ref().filter(|l| !l.offline);
        let followers = p
            .replicas
            .iter()
            .filter(|r| Some(r.broker) != p.leader)
            .map(|r| {
                let in_isr = p.isr.contains(&r.broker);
                let fetch = match (status(r.broker), leader_up) {
                    (Some(BrokerStatus::Fenced), _) => Fetch::Fenced,
                    (Some(BrokerStatus::Paused), _) => Fetch::Paused,
                    (Some(s), _) if !s.is_up() => Fetch::Offline(s.label()),
                    (_, None) => Fetch::NoLeader,
                    (_, Some(l)) => match view.link_between(r.broker, l.broker) {
                        LinkState::Cut => Fetch::Cut,
                        LinkState::Delay(ms) => Fetch::Slow(ms),
                        LinkState::Up if in_isr => Fetch::InSync,
                        LinkState::Up => Fetch::OutOfIsr,
                    },
                };
                let behind = match (leader_up.and_then(|l| l.log_end), r.log_end_offset) {
                    (Some(l), Some(f)) => Some((l - f).max(0)),
                    _ => None,
                };
                Follower {
                    broker: r.broker,
                    role: r.role,
                    in_isr,
                    log_end: r.log_end_offset,
                    behind,
                    fetch,
                }
            })
            .collect();
        let groups = view
            .groups
            .iter()
            .filter_map(|g| {
                let offset = g.offsets.iter().find(|o| o.topic == topic && o.partition == partition);
                (offset.is_some() || g.owner(topic, partition).is_some()).then(|| Group {
                    id: g.group_id.clone(),
                    state: g.state.clone(),
                    members: g.members.len(),
                    committed: offset.map(|o| o.committed),
                    lag: offset.and_then(|o| o.lag),
                })
            })
            .collect();
        let workload = view.workload.as_ref();
        let who = if workload.is_some() {
            "scenario"
        } else if view.demo.is_some() {
            "demo"
        } else {
            "clients"
        };
        let producers = Producers {
            who,
            rate: view.topic(topic).map_or(0.0, |t| t.messages_per_sec),
            acks: view
                .controls
                .and_then(|c| c.producer_acks)
                .or_else(|| workload.and_then(|w| w.acks)),
            error: workload.and_then(|w| {
                w.errors
                    .iter()
                    .max_by_key(|(_, n)| **n)
                    .map(|(name, n)| (name.clone(), *n))
            }),
            acked: workload.map(|w| w.acked),
        };
        Some(Flow {
            topic: topic.to_string(),
            producers,
            leader,
            high_watermark: p.high_watermark,
            isr: p.isr.clone(),
            min_insync: p.min_insync_replicas,
            followers,
            groups,
            clock: view.controls.map(|c| (c.frozen, c.slow_motion)),
        })
    }

    fn frozen(&self) -> bool {
        self.clock.is_some_and(|(frozen, _)| frozen)
    }

    fn leader_up(&self) -> bool {
        self.leader.as_ref().is_some_and(|l| !l.offline)
    }

    /// Records are being produced to the partition's leader.
    pub fn produce_moves(&self) -> bool {
        self.leader_up() && self.producers.rate > 0.0
    }

    /// acks=all with fewer in-sync replicas than `min.insync.replicas`: every produce is
    /// refused (NOT_ENOUGH_REPLICAS), so what comes back is a refusal.
    pub fn refused(&self) -> bool {
        self.producers.acks == Some(-1) && self.min_insync.is_some_and(|m| (self.isr.len() as i32) < m)
    }

    /// Records are moving to this follower: new ones arrive, or it is catching up.
    pub fn fetch_moves(&self, f: &Follower) -> bool {
        self.leader_up() && f.fetch.flows() && (self.producers.rate > 0.0 || f.behind.is_some_and(|b| b > 0))
    }

    /// Some group is reading: it has members and records to read.
    pub fn consume_moves(&self) -> bool {
        self.leader_up()
            && self
                .groups
                .iter()
                .any(|g| g.members > 0 && (self.producers.rate > 0.0 || g.lag.is_some_and(|l| l > 0)))
    }

    /// Anything moves at all.
    pub fn moves(&self) -> bool {
        self.produce_moves() || self.followers.iter().any(|f| self.fetch_moves(f)) || self.consume_moves()
    }

    /// The rules behind what comes back and what consumers see, in a sentence each.
    pub fn rules(&self) -> Vec<String> {
        let mut rules = Vec::new();
        let acks = match self.producers.acks {
            Some(-1) => Some(
                "acks=all: the leader answers once every ISR member has the batch (the HW has passed \
                 it); with fewer in the ISR than min.insync.replicas it refuses (NOT_ENOUGH_REPLICAS).",
            ),
            Some(1) => {
                Some("acks=1: the leader answers once the batch is in its own log; a follower may not have it yet.")
            }
            Some(0) => Some("acks=0: the producers wait for no answer; nothing comes back."),
            _ => None,
        };
        rules.extend(acks.map(String::from));
        rules.push("Consumers read only below the HW: a record above it is not committed yet.".into());
        rules
    }

    /// Batches on an arrow at once: more for a busier topic.
    fn batches(&self) -> usize {
        match self.producers.rate {
            r if r < 10.0 => 1,
            r if r < 1000.0 => 2,
            _ => 3,
        }
    }
}

/// The first of `options` that fits `width` columns, else the last one cut to fit (the
/// options end with one short enough for any box, so no number is cut in practice).
fn pick(options: &[String], width: usize) -> String {
    options
        .iter()
        .find(|o| o.width() <= width)
        .cloned()
        .unwrap_or_else(|| fit(options.last().map_or("", |s| s.as_str()), width))
}

/// A grid of cells the picture is drawn on, then turned into lines.
struct Canvas {
    width: usize,
    height: usize,
    /// `None`: the second column of a wide character.
    cells: Vec<Option<(char, Style)>>,
}

impl Canvas {
    fn new(width: usize, height: usize, style: Style) -> Canvas {
        Canvas {
            width,
            height,
            cells: vec![Some((' ', style)); width * height],
        }
    }

    fn put(&mut self, x: usize, y: usize, c: char, style: Style) {
        if x < self.width && y < self.height {
            self.cells[y * self.width + x] = Some((c, style));
        }
    }

    /// `text` from (x, y), cut at `room` columns and at the canvas's edge.
    fn text(&mut self, x: usize, y: usize, text: &str, room: usize, style: Style) {
        let room = room.min(self.width.saturating_sub(x));
        let mut at = x;
        for c in fit(text, room).chars() {
            let w = c.width().unwrap_or(0);
            if w == 0 {
                continue;
            }
            self.put(at, y, c, style);
            if w == 2 && at + 1 < self.width && y < self.height {
                self.cells[y * self.width + at + 1] = None;
            }
            at += w;
        }
    }

    /// A box with its title on the top border.
    fn frame(&mut self, x: usize, y: usize, w: usize, h: usize, (title, title_style): (&str, Style), border: Style) {
        if w < 2 || h < 2 {
            return;
        }
        for i in 1..w - 1 {
            self.put(x + i, y, '─', border);
            self.put(x + i, y + h - 1, '─', border);
        }
        for j in 1..h - 1 {
            self.put(x, y + j, '│', border);
            self.put(x + w - 1, y + j, '│', border);
        }
        self.put(x, y, '┌', border);
        self.put(x + w - 1, y, '┐', border);
        self.put(x, y + h - 1, '└', border);
        self.put(x + w - 1, y + h - 1, '┘', border);
        self.text(x + 1, y, title, w - 2, title_style);
    }

    fn lines(self) -> Vec<Line<'static>> {
        self.cells
            .chunks(self.width.max(1))
            .take(self.height)
            .map(|row| {
                let mut spans: Vec<Span<'static>> = Vec::new();
                let mut run = String::new();
                let mut style = Style::default();
                for (c, s) in row.iter().flatten() {
                    if *s != style && !run.is_empty() {
                        spans.push(Span::styled(std::mem::take(&mut run), style));
                    }
                    style = *s;
                    run.push(*c);
                }
                if !run.is_empty() {
                    spans.push(Span::styled(run, style));
                }
                Line::from(spans)
            })
            .collect()
    }
}

/// How an arrow is drawn.
#[derive(Clone, Copy)]
enum Shaft {
    Solid(Style),
    /// Dashed, still carrying records (a slow link).
    Dashed(Style),
    /// Dashed and ending in `✗`: nothing gets through.
    Broken(Style),
}

/// An arrow over `len` cells from `x` on row `y`, pointing right (or left), with `glyph`
/// at the cells `at` counts from its tail.
#[allow(clippy::too_many_arguments)]
fn arrow(
    c: &mut Canvas,
    x: usize,
    y: usize,
    len: usize,
    right: bool,
    shaft: Shaft,
    glyph: (char, Style),
    at: &[usize],
) {
    if len < 2 {
        return;
    }
    let (body, head, style) = match shaft {
        Shaft::Solid(s) => ('─', if right { '▶' } else { '◀' }, s),
        Shaft::Dashed(s) => ('╌', if right { '▶' } else { '◀' }, s),
        Shaft::Broken(s) => ('╌', '✗', s),
    };
    // Cell i from the tail, on screen.
    let cell = |i: usize| if right { x + i } else { x + len - 1 - i };
    for i in 0..len - 1 {
        c.put(cell(i), y, body, style);
    }
    c.put(cell(len - 1), y, head, style);
    for &i in at {
        if i < len - 1 {
            c.put(cell(i), y, glyph.0, glyph.1);
        }
    }
}

/// Widths of the five columns: producers, gap, leader, gap, followers. At 78 columns (an
/// 80x24 terminal less the border) 16 12 16 16 18; wider terminals share the rest.
fn columns(width: usize) -> [usize; 5] {
    const BASE: [usize; 5] = [16, 12, 16, 16, 18];
    if width < 78 {
        return BASE.map(|b| (b * width / 78).max(4));
    }
    let extra = (width - 78).min(60);
    let mut cols = BASE.map(|b| b + extra / 5);
    cols[3] += extra % 5;
    cols
}

/// The picture in `width` x `height` cells at the cluster's clock `clock_ms`.
/// `notes`: sentences for the rows left under the groups, each whole or not at all.
/// `lang`: the language of its words.
pub fn picture(
    flow: &Flow,
    t: &Theme,
    lang: &Lang,
    clock_ms: i64,
    notes: &[String],
    width: usize,
    height: usize,
) -> Vec<Line<'static>> {
    let mut c = Canvas::new(width, height, t.text);
    let [pw, g1, lw, g2, fw] = columns(width);
    let (lx, fx) = (pw + g1, pw + g1 + lw + g2);
    header(&mut c, flow, t, lang, width);

    // Rows: the header, a blank, the boxes from row 2, the arrow down and the groups' box.
    // What the boxes need below the header: the leader's box, the arrow down, and a groups
    // box with at least one row.
    let n = flow.followers.len();
    let below = |slot: usize, down: usize, shown: usize| 2 + (shown.max(1) * slot).max(6) + down + 3;
    let (mut slot, mut down) = (4, 2);
    if below(slot, down, n) > height {
        slot = 3;
    }
    if below(slot, down, n) > height {
        down = 1;
    }
    let mut shown = n;
    while shown > 1 && below(slot, down, shown) > height {
        shown -= 1;
    }
    let leader_h = (shown.max(1) * slot).max(6);
    let top = 2;

    producers(&mut c, flow, (t, lang), clock_ms, pw, g1, top);
    leader(&mut c, flow, (t, lang), lx, lw, top, leader_h);
    for (i, f) in flow.followers.iter().take(shown).enumerate() {
        follower(
            &mut c,
            flow,
            f,
            (t, lang),
            clock_ms,
            (lx + lw, g2, fx, fw),
            top + i * slot,
            slot,
        );
    }
    if shown < n {
        let text = lang.fmt("+{n} more not drawn", &[("n", &(n - shown))]);
        c.text(fx, top + leader_h - 1, &text, fw, t.dim);
    }
    let y = top + leader_h;
    let end = consumers(&mut c, flow, (t, lang), clock_ms, (lx, lw), y, down, height);
    legend(&mut c, flow, (t, lang), top + 6, lx.saturating_sub(1));
    let mut y = end + 1;
    for note in notes {
        let lines = wrap(&format!(" {note}"), width);
        if y + lines.len() > height {
            break;
        }
        for line in lines {
            c.text(0, y, &line, width, t.text);
            y += 1;
        }
    }
    c.lines()
}

/// Row 0: the partition as the leader sees it, and how the clock runs.
fn header(c: &mut Canvas, flow: &Flow, t: &Theme, lang: &Lang, width: usize) {
    let clock = match flow.clock {
        Some((true, _)) => lang.tr("clock frozen: nothing moves").to_string(),
        Some((false, f)) if f > 1 => lang.fmt("slow motion x{factor}", &[("factor", &f)]),
        _ => String::new(),
    };
    let room = width.saturating_sub(clock.width() + 2);
    let mut parts = vec![match &flow.leader {
        Some(l) => lang.fmt("leader {broker}", &[("broker", &l.broker)]),
        None => lang.tr("no leader").to_string(),
    }];
    if let Some(l) = &flow.leader {
        parts.push(lang.fmt("epoch {epoch}", &[("epoch", &l.epoch)]));
    }
    parts.push(format!(
        "HW {}",
        flow.high_watermark.map_or("-".into(), |h| h.to_string())
    ));
    parts.push(format!("ISR {}", ids(&flow.isr)));
    if let Some(m) = flow.min_insync {
        parts.push(format!("min.insync {m}"));
    }
    let mut text = String::new();
    for part in parts {
        let next = if text.is_empty() {
            part
        } else {
            format!("{text} · {part}")
        };
        if next.width() > room {
            break;
        }
        text = next;
    }
    c.text(0, 0, &text, room, t.text);
    let style = if flow.frozen() { t.warn } else { t.dim };
    c.text(width.saturating_sub(clock.width()), 0, &clock, clock.width(), style);
}

/// The producers' box and the produce / ack arrows to the leader.
fn producers(c: &mut Canvas, flow: &Flow, (t, lang): (&Theme, &Lang), clock_ms: i64, pw: usize, g1: usize, top: usize) {
    let tr = |english: &str| lang.tr(english).to_string();
    let p = &flow.producers;
    c.frame(
        0,
        top,
        pw,
        6,
        (&format!(" {} ", lang.tr("producers")), t.title),
        t.border,
    );
    let room = pw.saturating_sub(2);
    let who = match p.who {
        "scenario" => vec![tr("scenario workload"), tr("scenario")],
        "demo" => vec![tr("demo workload"), tr("demo")],
        _ => vec![tr("any Kafka client"), tr("clients")],
    };
    let r = rate(p.rate);
    let acks = acks_name(p.acks);
    let last = match (&p.error, p.acked) {
        (Some((name, n)), _) => vec![format!("{name} {n}"), lang.fmt("errors {n}", &[("n", n)])],
        (None, Some(n)) => vec![lang.fmt("acked {n}", &[("n", &n)]), lang.fmt("{n} acked", &[("n", &n)])],
        (None, None) => vec![String::new()],
    };
    let lines = [
        pick(&who, room),
        pick(&[lang.fmt("{rate} to topic", &[("rate", &r)]), r], room),
        match p.acks {
            Some(_) => pick(&[format!("acks={acks}")], room),
            None => pick(&[tr("acks not known"), "acks ?".into()], room),
        },
        pick(&last, room),
    ];
    for (i, line) in lines.iter().enumerate() {
        let style = if i == 3 && p.error.is_some() { t.warn } else { t.text };
        c.text(1, top + 1 + i, line, room, style);
    }

    let (x, len) = (pw, g1);
    let label_room = len.saturating_sub(1);
    if !flow.leader_up() {
        let what = lang.tr(if flow.leader.is_some() {
            "leader down"
        } else {
            "no leader"
        });
        c.text(x + 1, top, what, label_room, t.error);
        arrow(c, x, top + 1, len, true, Shaft::Broken(t.error), ('■', t.title), &[]);
        return;
    }
    let count = flow.batches();
    let moving = flow.produce_moves();
    let at = |offset: i64| {
        if moving {
            positions(len - 1, clock_ms + offset, CROSSING_MS, count)
        } else {
            Vec::new()
        }
    };
    c.text(x + 1, top, &pick(&[tr("produce")], label_room), label_room, t.dim);
    arrow(c, x, top + 1, len, true, Shaft::Solid(t.dim), ('■', t.title), &at(0));
    if p.acks == Some(0) {
        c.text(
            x + 1,
            top + 3,
            &pick(&[tr("no acks"), tr("none")], label_room),
            label_room,
            t.dim,
        );
        return;
    }
    let (glyph, style, label) = if flow.refused() {
        (
            '✗',
            t.error,
            vec![
                "✗ NOT_ENOUGH_REPLICAS".to_string(),
                "✗ ISR < min.insync".into(),
                format!("✗ {}", lang.tr("refused")),
            ],
        )
    } else {
        let label = match p.acks {
            Some(-1) => vec![tr("ack once ISR has it"), tr("ack after ISR"), tr("ISR ack")],
            Some(1) => vec![tr("ack from leader"), tr("leader ack")],
            _ => vec!["acks".to_string()],
        };
        ('✓', t.ok, label)
    };
    arrow(
        c,
        x,
        top + 2,
        len,
        false,
        Shaft::Solid(t.dim),
        (glyph, style),
        &at(CROSSING_MS / 2),
    );
    let label_style = if flow.refused() { t.error } else { t.dim };
    c.text(x + 1, top + 3, &pick(&label, label_room), label_room, label_style);
}

/// `acks` as a producer's configuration spells it.
fn acks_name(acks: Option<i16>) -> String {
    match acks {
        Some(-1) => "all".into(),
        Some(a) => a.to_string(),
        None => "?".into(),
    }
}

/// The leader's box: epoch, log end, HW, ISR.
fn leader(c: &mut Canvas, flow: &Flow, (t, lang): (&Theme, &Lang), x: usize, w: usize, top: usize, h: usize) {
    let tr = |english: &str| lang.tr(english).to_string();
    let room = w.saturating_sub(2);
    let Some(l) = &flow.leader else {
        c.frame(x, top, w, h, (&format!(" {} ", lang.tr("no leader")), t.error), t.error);
        c.text(
            x + 1,
            top + 1,
            &pick(&[tr("offline: no"), tr("offline")], room),
            room,
            t.error,
        );
        c.text(x + 1, top + 2, &pick(&[tr("reads or writes")], room), room, t.error);
        return;
    };
    let (glyph, style) = if l.offline {
        ("✗", t.error)
    } else {
        (ReplicaRole::Leader.glyph(), t.leader)
    };
    let title = pick(
        &[
            format!(
                " {glyph} {} ",
                lang.fmt("leader broker {broker}", &[("broker", &l.broker)])
            ),
            format!(" {glyph} {} ", lang.fmt("leader b{broker}", &[("broker", &l.broker)])),
            format!(" {glyph} b{} ", l.broker),
        ],
        room,
    );
    c.frame(
        x,
        top,
        w,
        h,
        (&title, style),
        if l.offline { t.error } else { t.border },
    );
    let mut lines = vec![
        vec![
            lang.fmt("epoch {epoch}", &[("epoch", &l.epoch)]),
            format!("e{}", l.epoch),
        ],
        vec![format!("LEO {}", l.log_end.map_or("?".into(), |o| o.to_string()))],
        vec![format!(
            "HW {}",
            flow.high_watermark.map_or("-".into(), |o| o.to_string())
        )],
        vec![
            format!("ISR {}", ids(&flow.isr)),
            lang.fmt("ISR of {n}", &[("n", &flow.isr.len())]),
        ],
    ];
    if let Some(m) = flow.min_insync {
        lines.push(vec![format!("min.insync {m}"), format!("min ISR {m}")]);
    }
    if l.offline {
        lines.insert(0, vec![tr("broker down"), tr("down")]);
    }
    for (i, options) in lines.iter().take(h.saturating_sub(2)).enumerate() {
        let s = if l.offline && i == 0 { t.error } else { t.text };
        c.text(x + 1, top + 1 + i, &pick(options, room), room, s);
    }
}

/// One follower's box and its arrows from the leader: records out, its fetch position back.
#[allow(clippy::too_many_arguments)]
fn follower(
    c: &mut Canvas,
    flow: &Flow,
    f: &Follower,
    (t, lang): (&Theme, &Lang),
    clock_ms: i64,
    (gx, g2, fx, fw): (usize, usize, usize, usize),
    top: usize,
    slot: usize,
) {
    let room = fw.saturating_sub(2);
    let role_style = t.role(f.role);
    let isr = lang.tr(if f.in_isr { "in ISR" } else { "out of ISR" });
    let glyph = f.role.glyph();
    let title = pick(
        &[
            format!(" {glyph} broker {} {isr} ", f.broker),
            format!(" {glyph} b{} {isr} ", f.broker),
            format!(" {glyph} broker {} ", f.broker),
            format!(" {glyph} b{} ", f.broker),
        ],
        room,
    );
    let broken = !f.fetch.flows();
    c.frame(
        fx,
        top,
        fw,
        slot,
        (&title, role_style),
        if broken { t.error } else { t.border },
    );
    let leo = format!("LEO {}", f.log_end.map_or("?".into(), |o| o.to_string()));
    let behind = match f.behind {
        Some(0) => vec![lang.tr("caught up").to_string()],
        Some(b) => vec![lang.fmt("{n} behind", &[("n", &b)]), format!("-{b}")],
        None if f.log_end.is_none() => vec![lang.tr("log end unknown").to_string(), lang.tr("unknown").to_string()],
        None => vec![String::new()],
    };
    if slot >= 4 {
        c.text(fx + 1, top + 1, &pick(&[leo], room), room, t.text);
        c.text(fx + 1, top + 2, &pick(&behind, room), room, t.text);
    } else {
        let options: Vec<String> = behind
            .iter()
            .map(|b| format!("{leo} · {b}"))
            .chain(behind.iter().cloned())
            .collect();
        c.text(fx + 1, top + 1, &pick(&options, room), room, t.text);
    }

    let label_room = g2.saturating_sub(2);
    let (shaft, label_style) = match f.fetch {
        Fetch::InSync => (Shaft::Solid(t.dim), t.dim),
        Fetch::OutOfIsr => (Shaft::Solid(t.out_of_sync), t.warn),
        Fetch::Slow(_) => (Shaft::Dashed(t.warn), t.warn),
        _ => (Shaft::Broken(t.error), t.error),
    };
    c.text(
        gx + 1,
        top,
        &pick(&f.fetch.labels(lang), label_room),
        label_room,
        label_style,
    );
    let moving = flow.fetch_moves(f);
    let crossing = CROSSING_MS
        + match f.fetch {
            Fetch::Slow(ms) => ms as i64,
            _ => 0,
        };
    let at = |offset: i64| {
        if moving {
            positions(g2 - 1, clock_ms + offset, crossing, flow.batches())
        } else {
            Vec::new()
        }
    };
    arrow(c, gx, top + 1, g2, true, shaft, ('■', t.title), &at(0));
    if broken {
        return;
    }
    let from = f.log_end.map(|o| {
        vec![
            lang.fmt("fetch from {offset}", &[("offset", &o)]),
            lang.fmt("from {offset}", &[("offset", &o)]),
            o.to_string(),
        ]
    });
    if slot >= 4 {
        let back = match shaft {
            Shaft::Dashed(s) => Shaft::Dashed(s),
            _ => Shaft::Solid(t.dim),
        };
        arrow(c, gx, top + 2, g2, false, back, ('◆', t.in_sync), &at(crossing / 2));
        if let Some(from) = from {
            c.text(gx + 1, top + 3, &pick(&from, label_room), label_room, t.dim);
        }
    }
}

/// The arrow down from the leader to the consumer groups, and their box; the row under it.
#[allow(clippy::too_many_arguments)]
fn consumers(
    c: &mut Canvas,
    flow: &Flow,
    (t, lang): (&Theme, &Lang),
    clock_ms: i64,
    (lx, lw): (usize, usize),
    y: usize,
    down: usize,
    height: usize,
) -> usize {
    let cx = lx + lw / 2;
    let moving = flow.consume_moves();
    let at = if moving {
        positions(down, clock_ms, CROSSING_MS / 2, 1)
    } else {
        Vec::new()
    };
    for i in 0..down {
        let glyph = if i + 1 == down { '▼' } else { '│' };
        if at.contains(&i) {
            c.put(cx, y + i, '■', t.title);
        } else {
            c.put(cx, y + i, glyph, t.dim);
        }
    }
    let room = c.width.saturating_sub(cx + 2);
    let hw = flow.high_watermark.map_or("-".into(), |h| h.to_string());
    let label = pick(
        &[
            lang.fmt("consumers read up to the HW ({hw})", &[("hw", &hw)]),
            lang.fmt("read up to HW {hw}", &[("hw", &hw)]),
            format!("HW {hw}"),
        ],
        room,
    );
    c.text(cx + 2, y, &label, room, t.dim);

    let top = y + down;
    let rows = height.saturating_sub(top + 2);
    if rows == 0 {
        return height;
    }
    let w = c.width.saturating_sub(lx);
    let room = w.saturating_sub(2);
    let count = flow.groups.len().max(1).min(rows);
    c.frame(
        lx,
        top,
        w,
        count + 2,
        (&format!(" {} ", lang.tr("consumer groups")), t.title),
        t.border,
    );
    if flow.groups.is_empty() {
        let text = pick(
            &[
                lang.fmt("no group reads {topic}", &[("topic", &flow.topic)]),
                lang.tr("no group reads it").to_string(),
            ],
            room,
        );
        c.text(lx + 1, top + 1, &text, room, t.dim);
        return top + 3;
    }
    let hidden = flow.groups.len() - count;
    for (i, g) in flow.groups.iter().take(count).enumerate() {
        if hidden > 0 && i + 1 == count {
            c.text(
                lx + 1,
                top + 1 + i,
                &lang.fmt("+{n} more groups", &[("n", &(hidden + 1))]),
                room,
                t.dim,
            );
            break;
        }
        group_line(c, g, (t, lang), lx + 1, top + 1 + i, room);
    }
    top + count + 2
}

/// One group: its id (cut first), then what it has read of the partition.
fn group_line(c: &mut Canvas, g: &Group, (t, lang): (&Theme, &Lang), x: usize, y: usize, room: usize) {
    let committed = g.committed.map_or("-".into(), |o| o.to_string());
    let lag = g.lag.map_or("-".into(), |l| l.to_string());
    let members = lang.count(g.members, "member");
    let said = |english: &str| {
        lang.fmt(
            english,
            &[
                ("committed", &committed),
                ("lag", &lag),
                ("members", &members),
                ("state", &g.state),
            ],
        )
    };
    let rests = [
        format!("  {}", said("committed {committed} · lag {lag} · {members} · {state}")),
        format!("  {}", said("committed {committed} · lag {lag} · {state}")),
        format!("  {}", said("at {committed} · lag {lag}")),
        format!(" {}", said("lag {lag}")),
    ];
    let id_min = g.id.width().min(8);
    let rest = rests
        .iter()
        .find(|r| g.id.width() + r.width() <= room)
        .or_else(|| rests.iter().find(|r| id_min + r.width() <= room))
        .unwrap_or(&rests[3]);
    let id_room = room.saturating_sub(rest.width());
    let id = fit(&g.id, id_room);
    let style = if g.members == 0 { t.dim } else { t.text };
    c.text(x, y, &id, id_room, style);
    c.text(x + id.width(), y, rest, room.saturating_sub(id.width()), style);
}

/// Under the producers: what the glyphs mean.
fn legend(c: &mut Canvas, flow: &Flow, (t, lang): (&Theme, &Lang), top: usize, room: usize) {
    let tr = |english: &str| lang.tr(english).to_string();
    let mut lines: Vec<(char, Style, Vec<String>)> = vec![
        ('■', t.title, vec![tr("a batch of records"), tr("records")]),
        ('✓', t.ok, vec![tr("ack to the producer"), tr("ack")]),
        ('◆', t.in_sync, vec![tr("follower's fetch offset"), tr("fetch offset")]),
        ('╌', t.warn, vec![tr("slow or broken link"), tr("bad link")]),
    ];
    if !flow.moves() && !flow.frozen() {
        lines.push((' ', t.dim, vec![tr("no traffic: still"), tr("still")]));
    }
    for (i, (glyph, style, text)) in lines.into_iter().enumerate() {
        let y = top + 1 + i;
        if y >= c.height || room < 4 {
            return;
        }
        c.put(1, y, glyph, style);
        c.text(3, y, &pick(&text, room - 3), room - 3, t.dim);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{
        BrokerLink, BrokerRow, Controls, GroupOffsetRow, GroupRow, MemberRow, PartitionRow, ReplicaRow, SourceKind,
        Throughput, TopicRow,
    };

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::<Utc>::from_timestamp(1_768_478_400 + s, 0).unwrap_or_default()
    }

    fn replica(broker: BrokerId, role: ReplicaRole, leo: i64) -> ReplicaRow {
        ReplicaRow {
            broker,
            role,
            log_end_offset: Some(leo),
            log_start_offset: Some(0),
            high_watermark: Some(1180),
            epochs: Default::default(),
            size_bytes: None,
            caught_up_ms_ago: None,
        }
    }

    /// trades-0 led by broker 1 at epoch 3; broker 2 in sync, broker 3 twenty behind; 120
    /// records a second; a group reading it.
    fn view() -> ClusterView {
        let mut v = ClusterView::empty("flow", SourceKind::Embedded);
        v.taken_at = at(0);
        v.brokers = (1..=3)
            .map(|id| BrokerRow {
                id,
                status: BrokerStatus::Online,
                is_controller: id == 1,
                leaders: 1,
                replicas: 1,
                throughput: Throughput::Messages { in_per_sec: 0.0 },
                address: None,
                disk_bytes: None,
                produce_history: Vec::new(),
                changed_at: None,
                lifecycle: None,
            })
            .collect();
        v.topics = vec![TopicRow {
            name: "trades".into(),
            internal: false,
            partitions: 1,
            replication_factor: 3,
            under_replicated: 0,
            offline: 0,
            messages: 1200,
            size_bytes: None,
            messages_per_sec: 120.0,
            total_lag: Some(20),
            retention: None,
            unclean_election: Some(false),
        }];
        v.partitions = vec![PartitionRow {
            topic: "trades".into(),
            partition: 0,
            leader: Some(1),
            leader_epoch: 3,
            replicas: vec![
                replica(1, ReplicaRole::Leader, 1200),
                replica(2, ReplicaRole::InSync, 1200),
                replica(3, ReplicaRole::InSync, 1180),
            ],
            isr: vec![1, 2, 3],
            preferred_leader: 1,
            high_watermark: Some(1180),
            last_stable_offset: Some(1180),
            log_start_offset: Some(0),
            under_replicated: false,
            min_insync_replicas: Some(2),
            adding: Vec::new(),
            removing: Vec::new(),
            changed_at: None,
        }];
        v.groups = vec![GroupRow {
            group_id: "risk".into(),
            state: "Stable".into(),
            protocol: "range".into(),
            generation: 1,
            coordinator: 1,
            members: vec![MemberRow {
                member_id: "risk-1".into(),
                instance_id: None,
                client_id: String::new(),
                host: String::new(),
                assignment: vec![("trades".into(), 0)],
            }],
            offsets: vec![GroupOffsetRow {
                topic: "trades".into(),
                partition: 0,
                committed: 1170,
                end: Some(1180),
                lag: Some(10),
            }],
            total_lag: 10,
            lag_history: Vec::new(),
        }];
        v.controls = Some(Controls {
            held: false,
            frozen: false,
            slow_motion: 1,
            auto_rebalance: true,
            unclean_election: false,
            balanced_election: false,
            replica_lag_time_max_ms: 10_000,
            broker_session_timeout_ms: 9000,
            producer_acks: Some(-1),
            clock_ms: 50_000,
        });
        v
    }

    fn text(v: &ClusterView, now: DateTime<Utc>, width: usize, height: usize) -> String {
        let flow = Flow::of(v, "trades", 0).expect("trades-0");
        picture(
            &flow,
            &Theme::monochrome(),
            Lang::english(),
            clock_at(v, now),
            &flow.rules(),
            width,
            height,
        )
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
    }

    #[test]
    fn batches_advance_with_the_clock_and_wrap_around() {
        assert_eq!(positions(10, 0, 2000, 1), vec![0]);
        assert_eq!(positions(10, 1000, 2000, 1), vec![5]);
        assert_eq!(positions(10, 1900, 2000, 1), vec![9]);
        assert_eq!(positions(10, 2000, 2000, 1), vec![0]);
        assert_eq!(positions(10, 1000, 2000, 2), vec![0, 5]);
        assert!(positions(0, 1000, 2000, 2).is_empty());
        assert!(positions(10, 1000, 2000, 0).is_empty());
    }

    #[test]
    fn the_picture_moves_on_the_clusters_clock() {
        let v = view();
        assert_eq!(clock_at(&v, at(1)), 51_000);
        assert_ne!(text(&v, at(0), 98, 25), text(&v, at(1), 98, 25));
        assert!(Flow::of(&v, "trades", 0).is_some_and(|f| f.moves()));
    }

    #[test]
    fn a_frozen_clock_stops_the_batches_and_slow_motion_slows_them() {
        let mut v = view();
        if let Some(c) = v.controls.as_mut() {
            c.frozen = true;
        }
        assert_eq!(clock_at(&v, at(5)), 50_000);
        assert_eq!(text(&v, at(0), 98, 25), text(&v, at(5), 98, 25));
        assert!(text(&v, at(0), 98, 25).contains("clock frozen: nothing moves"));
        if let Some(c) = v.controls.as_mut() {
            c.frozen = false;
            c.slow_motion = 10;
        }
        assert_eq!(clock_at(&v, at(5)), 50_500);
    }

    #[test]
    fn without_traffic_nothing_moves() {
        let mut v = view();
        v.topics[0].messages_per_sec = 0.0;
        v.partitions[0].replicas[2].log_end_offset = Some(1200);
        v.groups[0].offsets[0].lag = Some(0);
        let flow = Flow::of(&v, "trades", 0).expect("trades-0");
        assert!(!flow.moves());
        assert_eq!(text(&v, at(0), 98, 25), text(&v, at(1), 98, 25));
        // Only the legend's batch: none on the arrows.
        assert_eq!(text(&v, at(0), 98, 25).matches('■').count(), 1);
    }

    #[test]
    fn a_fenced_follower_gets_a_broken_arrow_and_no_batches() {
        let mut v = view();
        v.brokers[2].status = BrokerStatus::Fenced;
        v.partitions[0].replicas[2].role = ReplicaRole::Offline;
        v.partitions[0].isr = vec![1, 2];
        let flow = Flow::of(&v, "trades", 0).expect("trades-0");
        let fenced = &flow.followers[1];
        assert_eq!(fenced.fetch, Fetch::Fenced);
        assert!(!flow.fetch_moves(fenced));
        assert!(flow.fetch_moves(&flow.followers[0]));
        let text = text(&v, at(0), 98, 25);
        assert!(text.contains("fenced"), "{text}");
        assert!(text.contains("╌✗"), "{text}");
    }

    #[test]
    fn a_cut_or_slow_link_and_an_offline_broker_are_named() {
        let mut v = view();
        v.links = vec![
            BrokerLink {
                from: 3,
                to: 1,
                state: LinkState::Delay(2500),
            },
            BrokerLink {
                from: 1,
                to: 2,
                state: LinkState::Cut,
            },
        ];
        let flow = Flow::of(&v, "trades", 0).expect("trades-0");
        assert_eq!(flow.followers[0].fetch, Fetch::Cut);
        assert_eq!(flow.followers[1].fetch, Fetch::Slow(2500));
        let text = text(&v, at(0), 98, 25);
        assert!(text.contains("link cut"), "{text}");
        assert!(text.contains("slow link 2500 ms"), "{text}");
        v.brokers[1].status = BrokerStatus::Killed;
        let flow = Flow::of(&v, "trades", 0).expect("trades-0");
        assert_eq!(flow.followers[0].fetch, Fetch::Offline("killed"));
    }

    #[test]
    fn acks_all_below_min_insync_come_back_refused() {
        let mut v = view();
        v.partitions[0].isr = vec![1];
        let flow = Flow::of(&v, "trades", 0).expect("trades-0");
        assert!(flow.refused());
        let text = text(&v, at(0), 98, 25);
        assert!(text.contains("✗ refused"), "{text}");
        assert!(text.contains("◀✗"), "{text}");
    }
}
