//! The replica-log screen: one partition's replicated log as a strip per replica, scaled so
//! the furthest log end fills the width, the log start at the left. Each strip is coloured
//! by leader epoch with the epoch's number printed in it where it fits (so it reads without
//! colour): █ below the high watermark (committed), ░ from there to the replica's log end
//! (not committed yet), × a diverged follower's suffix that is not in the leader's log (it
//! will truncate). Under each strip, `│HW` marks the replica's own high watermark and `┘LEO`
//! its log end; under the strips, a sentence per replica and a legend. It is drawn from the
//! current view every frame, so it moves as the cluster does.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::app::App;
use super::explain::wrap;
use super::keymap::Binding;
use super::text::{Item, by_priority, fit};
use crate::view::explain::{self, truncation_point};
use crate::view::timeline::{ids, partition_name};
use crate::view::{PartitionRow, ReplicaRow};
use unicode_width::UnicodeWidthStr;

/// Width of the label column left of the strips: `★ broker 12  in ISR `.
const LABEL: usize = 22;

/// The frame of a partition's picture (`L`, `D`): its name, the partition and the key
/// back, drawn on `area`; returns the area inside.
pub(super) fn picture_frame(frame: &mut Frame, area: Rect, app: &App, what: &str, tp: &str) -> Rect {
    let back = app.keymap.hint(Binding::Back);
    let title = format!(" {} · {tp} · {back} {} ", app.lang.tr(what), app.lang.tr("back"));
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(app.theme.focused_border)
        .title(Line::styled(title, app.theme.title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    inner
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App, topic: &str, partition: i32) {
    let t = &app.theme;
    let tp = partition_name(topic, partition);
    let inner = picture_frame(frame, area, app, "Replicated log", &tp);
    let Some(p) = app
        .view
        .partitions
        .iter()
        .find(|p| p.topic == topic && p.partition == partition)
    else {
        let text = app.lang.fmt(NOT_IN_METADATA, &[("partition", &tp)]);
        frame.render_widget(Paragraph::new(Line::styled(text, t.warn)), inner);
        return;
    };
    let width = (inner.width as usize).saturating_sub(LABEL + 1).max(10);
    let lines = picture(app, p, width, inner.width as usize);
    frame.render_widget(Paragraph::new(lines), inner);
}

/// Offsets `lo..hi` over `width` columns. When what differs between the replicas (HWs, log
/// ends, divergence) is a small tail of a long log, the axis breaks: the first `BREAK`
/// columns show `lo..mid`, the rest `mid..hi`.
#[derive(Clone, Copy)]
struct Scale {
    lo: i64,
    mid: i64,
    hi: i64,
    width: usize,
}

/// Columns given to the start of the log when the axis breaks.
const BREAK: usize = 12;

impl Scale {
    fn new(lo: i64, focus: i64, hi: i64, width: usize) -> Scale {
        // Some committed log before the interesting part, for context.
        let mid = (focus - (hi - focus) / 2).max(lo);
        let broken = width > BREAK * 3 && mid < hi && mid - lo > (hi - lo) / 4;
        Scale {
            lo,
            mid: if broken { mid } else { lo },
            hi,
            width,
        }
    }

    fn broken(self) -> bool {
        self.mid > self.lo
    }

    /// The first offset column `c` shows.
    fn offset(self, c: usize) -> i64 {
        let (c, w) = (c as i64, self.width as i64);
        if !self.broken() {
            return self.lo + (self.hi - self.lo) * c / w;
        }
        let b = BREAK as i64;
        if c < b {
            self.lo + (self.mid - self.lo) * c / b
        } else {
            self.mid + (self.hi - self.mid) * (c - b) / (w - b)
        }
    }

    /// The column showing `offset` (the width for the end of the log).
    fn column(self, offset: i64) -> usize {
        let w = self.width as i64;
        let up = |num: i64, den: i64| (num + den.max(1) - 1) / den.max(1);
        let c = if !self.broken() {
            up((offset - self.lo).max(0) * w, self.hi - self.lo)
        } else if offset < self.mid {
            up((offset - self.lo).max(0) * BREAK as i64, self.mid - self.lo)
        } else {
            BREAK as i64 + up((offset - self.mid) * (w - BREAK as i64), self.hi - self.mid)
        };
        c.clamp(0, w) as usize
    }
}

fn picture(app: &App, p: &PartitionRow, width: usize, text_width: usize) -> Vec<Line<'static>> {
    let t = &app.theme;
    let view = &app.view;
    let lang = app.lang;
    let leader = p.leader.and_then(|l| p.replica(l));
    let lo = p
        .replicas
        .iter()
        .filter_map(|r| r.log_start_offset)
        .min()
        .or(p.log_start_offset)
        .unwrap_or(0);
    let hi = p
        .replicas
        .iter()
        .filter_map(|r| r.log_end_offset)
        .max()
        .unwrap_or(lo)
        .max(lo + 1);
    let committed = p.high_watermark.or_else(|| leader.and_then(|l| l.high_watermark));
    let cuts: Vec<Option<i64>> = p
        .replicas
        .iter()
        .map(|r| match (leader, r.log_end_offset) {
            (Some(l), Some(leo)) if l.broker != r.broker => l
                .log_end_offset
                .and_then(|lleo| truncation_point(&l.epochs, lleo, &r.epochs, leo)),
            _ => None,
        })
        .collect();
    let focus = p
        .replicas
        .iter()
        .flat_map(|r| [r.high_watermark, r.log_end_offset])
        .chain(cuts.iter().copied())
        // Where the current leader's epoch began: what a returning follower is compared with.
        .chain([committed, leader.and_then(|l| l.epochs.last()).map(|e| e.start_offset)])
        .flatten()
        .min()
        .unwrap_or(lo);
    let scale = Scale::new(lo, focus, hi, width);
    let mut lines = vec![Line::from(vec![
        Span::styled(format!("{} ", partition_name(&p.topic, p.partition)), t.title),
        Span::raw(lang.fmt(
            "leader {leader} · epoch {epoch} · HW {hw} · ISR {isr} · offsets {lo}-{hi}",
            &[
                (
                    "leader",
                    &p.leader.map_or(lang.tr("none").to_string(), |l| l.to_string()),
                ),
                ("epoch", &p.leader_epoch),
                ("hw", &p.high_watermark.map_or("-".into(), |h| h.to_string())),
                ("isr", &ids(&p.isr)),
                ("lo", &lo),
                ("hi", &hi),
            ],
        )),
    ])];
    if p.leader.is_none() {
        let note = lang.tr("offline: no leader, so no HW moves; each strip is shaded from its replica's own last HW");
        lines.extend(wrap(note, text_width).into_iter().map(|l| Line::styled(l, t.error)));
    }
    lines.push(axis(scale, lang.tr("offsets"), t.dim));
    let cuts_any = cuts.iter().any(Option::is_some);
    let mut notes = Vec::new();
    for (r, cut) in p.replicas.iter().zip(cuts) {
        let in_isr = p.isr.contains(&r.broker);
        let isr = if in_isr { lang.tr("in ISR") } else { "" };
        let mut label = format!("{} broker {:<3} {isr}", r.role.glyph(), r.broker);
        // A space before the strip always: a longer translation loses the id's padding
        // first, then its end.
        if label.width() >= LABEL {
            label = fit(&format!("{} broker {} {isr}", r.role.glyph(), r.broker), LABEL - 1);
        }
        let label = Span::styled(padded(&label, LABEL), t.role(r.role));
        let Some(leo) = r.log_end_offset else {
            lines.push(Line::from(vec![
                label,
                Span::styled(lang.tr("(down: its log end is not known)").to_string(), t.dim),
            ]));
            lines.push(Line::raw(""));
            continue;
        };
        // Offline, no leader moves the HW: each replica's own last one says what it had
        // seen committed (with none known, nothing is shaded).
        let committed = if p.leader.is_some() {
            committed
        } else {
            r.high_watermark.or(p.high_watermark).or(Some(leo))
        };
        let mut spans = vec![label];
        spans.extend(strip(app, r, leo, committed, cut, scale));
        lines.push(Line::from(spans));
        lines.push(Line::from(vec![
            Span::raw(" ".repeat(LABEL)),
            Span::styled(markers(r.high_watermark, leo, scale), t.dim),
        ]));
        if let Some(to) = cut {
            notes.extend(
                wrap(
                    &format!("  {}", lang.say(&explain::diverged_said(r.broker, to, leo))),
                    text_width,
                )
                .into_iter()
                .map(|l| Line::styled(l, t.diverged)),
            );
        }
    }
    lines.push(Line::raw(""));
    for r in &p.replicas {
        let sentence = format!("  {}", lang.say(&explain::replica_said(view, p, r)));
        lines.extend(wrap(&sentence, text_width).into_iter().map(|l| Line::styled(l, t.text)));
    }
    lines.extend(notes);
    lines.push(Line::raw(""));
    let mut epochs: Vec<i32> = p
        .replicas
        .iter()
        .flat_map(|r| r.epochs.iter().map(|e| e.epoch))
        .collect();
    epochs.sort_unstable();
    epochs.dedup();
    let mut epoch_spans = vec![Span::styled(lang.tr("epochs:").to_string(), t.dim)];
    for e in epochs {
        epoch_spans.push(Span::raw(" "));
        epoch_spans.push(Span::styled(format!("e{e}"), t.epoch(e)));
    }
    let gap = || Span::raw("  ");
    // What the glyphs on screen mean first; a diverged suffix, when there is one, before the
    // markers' key.
    let diverged = if cuts_any { 4 } else { 2 };
    let legend = by_priority(
        vec![
            Item::new(
                vec![
                    Span::styled("█", t.text),
                    Span::styled(format!(" {}", lang.tr("committed (below the HW)")), t.dim),
                ],
                6,
            )
            .or_short(vec![
                Span::styled("█", t.text),
                Span::styled(format!(" {}", lang.tr("committed")), t.dim),
            ]),
            Item::new(
                vec![
                    gap(),
                    Span::styled("░", t.uncommitted),
                    Span::styled(format!(" {}", lang.tr("uncommitted (HW to LEO)")), t.dim),
                ],
                6,
            )
            .or_short(vec![
                gap(),
                Span::styled("░", t.uncommitted),
                Span::styled(format!(" {}", lang.tr("uncommitted")), t.dim),
            ]),
            Item::new(
                vec![
                    gap(),
                    Span::styled("×", t.diverged),
                    Span::styled(format!(" {}", lang.tr("diverged: not in the leader's log")), t.dim),
                ],
                diverged,
            )
            .or_short(vec![
                gap(),
                Span::styled("×", t.diverged),
                Span::styled(format!(" {}", lang.tr("diverged")), t.dim),
            ]),
            Item::new(vec![gap(), Span::styled("│HW ┘LEO", t.dim)], 3),
            Item::new([vec![gap()], epoch_spans].concat(), 1),
        ],
        text_width,
    );
    lines.push(Line::from(legend));
    lines
}

/// `text` padded with spaces to `width` display columns (a CJK character takes two).
fn padded(text: &str, width: usize) -> String {
    format!("{text}{}", " ".repeat(width.saturating_sub(text.width())))
}

/// What a replica-log screen says of a partition the view does not have.
pub(super) const NOT_IN_METADATA: &str = "{partition} is not in the cluster's metadata now (deleted?)";

/// The offsets under the header (`offsets`, in the console's language): the log start at
/// the left, the break, the furthest end.
fn axis(scale: Scale, offsets: &str, style: Style) -> Line<'static> {
    let mut text = format!("{}{}", padded(offsets, LABEL), scale.lo);
    if scale.broken() {
        let at = LABEL + BREAK;
        let pad = at.saturating_sub(text.width());
        text.push_str(&format!("{}┊ {}", " ".repeat(pad), scale.mid));
    }
    let end = scale.hi.to_string();
    let at = (LABEL + scale.width).saturating_sub(end.width());
    let pad = at.saturating_sub(text.width()).max(1);
    text.push_str(&format!("{}{end}", " ".repeat(pad)));
    Line::styled(text, style)
}

/// One replica's strip: a cell per column up to its log end.
fn strip(
    app: &App,
    r: &ReplicaRow,
    leo: i64,
    committed: Option<i64>,
    cut: Option<i64>,
    scale: Scale,
) -> Vec<Span<'static>> {
    let t = &app.theme;
    let end = scale.column(leo);
    let start = scale.column(r.log_start_offset.unwrap_or(scale.lo));
    let epoch_at = |offset: i64| {
        r.epochs
            .iter()
            .rev()
            .find(|e| e.start_offset <= offset)
            .map(|e| e.epoch)
    };
    // (glyph, style, epoch) of each column.
    let cells: Vec<(char, Style, Option<i32>)> = (0..end)
        .map(|c| {
            let offset = scale.offset(c);
            if c < start {
                return (' ', t.text, None);
            }
            if scale.broken() && c == BREAK {
                return ('┊', t.dim, epoch_at(offset));
            }
            let epoch = epoch_at(offset);
            let style = epoch.map_or(t.text, |e| t.epoch(e));
            if cut.is_some_and(|to| offset >= to) {
                ('×', t.diverged, epoch)
            } else if committed.is_none_or(|hw| offset >= hw) {
                ('░', style.patch(t.uncommitted), epoch)
            } else {
                ('█', style, epoch)
            }
        })
        .collect();
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut c = 0;
    while c < cells.len() {
        let (_, _, epoch) = cells[c];
        let run = cells[c..].iter().take_while(|cell| cell.2 == epoch).count();
        let label = epoch.map(|e| format!("e{e}")).unwrap_or_default();
        let mut i = 0;
        // The epoch's number where its run starts, when it fits with a cell to spare.
        if !label.is_empty() && run > label.chars().count() {
            let style = epoch.map_or(t.text, |e| t.epoch(e));
            spans.push(Span::styled(
                label.clone(),
                style.add_modifier(ratatui::style::Modifier::REVERSED),
            ));
            i = label.chars().count();
        }
        while i < run {
            let (glyph, style, _) = cells[c + i];
            let same = cells[c + i..c + run].iter().take_while(|cell| cell.0 == glyph).count();
            spans.push(Span::styled(glyph.to_string().repeat(same), style));
            i += same;
        }
        c += run;
    }
    spans
}

/// The line under a strip: `│HW 1180` from the replica's HW column, `LEO 1200┘` ending at
/// its log end's; one `HW 1200 = LEO┘` when they meet, `HW 1180 · LEO 1200┘` when they are
/// too close for two.
fn markers(hw: Option<i64>, leo: i64, scale: Scale) -> String {
    let leo_col = scale.column(leo).saturating_sub(1);
    let len = |t: &str| t.chars().count();
    // `text` ending at column `at` (or starting at 0 when it does not fit left of it).
    let ending_at = |text: &str, at: usize| {
        let start = (at + 1).saturating_sub(len(text));
        format!("{}{text}", " ".repeat(start))
    };
    let Some(hw) = hw else {
        return ending_at(&format!("LEO {leo}┘"), leo_col);
    };
    if hw >= leo {
        return ending_at(&format!("HW {hw} = LEO┘"), leo_col);
    }
    let hw_col = scale.column(hw);
    let hw_text = format!("│HW {hw}");
    let leo_text = format!("LEO {leo}┘");
    let leo_start = (leo_col + 1).saturating_sub(len(&leo_text));
    if hw_col + len(&hw_text) < leo_start {
        format!(
            "{}{hw_text}{}{leo_text}",
            " ".repeat(hw_col),
            " ".repeat(leo_start - hw_col - len(&hw_text))
        )
    } else {
        ending_at(&format!("HW {hw} · LEO {leo}┘"), leo_col)
    }
}
