//! Consumer groups: state, members, total lag with its trend; below, the selected group's
//! per-partition committed offset, end offset, lag and owning member.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row, Table};
use unicode_width::UnicodeWidthStr;

use super::Pane;
use super::app::App;
use super::keymap::Binding;
use super::layout::Width::{Length, Min};
use super::layout::{Column, block, headers, rows_in, scroll, spaced_row};
use super::pane::{PaneLayout, PaneView};
use super::text::{fit, fit_end, sparkline};

pub struct GroupsPane;

impl PaneView for GroupsPane {
    fn title(&self) -> &'static str {
        "Consumer groups"
    }

    fn hints(&self) -> &'static [(Binding, &'static str)] {
        &[
            (Binding::AddMember, "member+"),
            (Binding::RemoveMember, "member-"),
            (Binding::NextPane, "pane"),
            (Binding::Filter, "filter"),
            (Binding::PauseDemo, "demo on/off"),
            (Binding::Help, "help"),
            (Binding::Quit, "quit"),
        ]
    }

    fn rows(&self, app: &App) -> usize {
        app.visible_groups().len()
    }

    /// The group list and the selected group's partitions, each with its column header
    /// (the list alone in the projector layout).
    fn wanted_height(&self, app: &App) -> u16 {
        if app.projector() {
            return u16::try_from(self.rows(app) * 2).unwrap_or(u16::MAX).saturating_add(2);
        }
        let offsets = app.selected_group().map_or(0, |g| g.offsets.len());
        u16::try_from(self.rows(app) + offsets)
            .unwrap_or(u16::MAX)
            .saturating_add(4)
    }

    fn draw(&self, frame: &mut Frame, area: Rect, app: &App, _now: chrono::DateTime<chrono::Utc>) -> PaneLayout {
        draw(frame, area, app)
    }
}

fn draw(frame: &mut Frame, area: Rect, app: &App) -> PaneLayout {
    if app.projector() {
        return draw_projector(frame, area, app);
    }
    let t = &app.theme;
    let groups = app.visible_groups();
    let block = block(app, Pane::Groups, app.lang.count(app.view.groups.len(), "group"));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let list_height = (groups.len() as u16 + 1).clamp(2, inner.height / 2);
    let parts = Layout::vertical([Constraint::Length(list_height), Constraint::Min(0)]).split(inner);
    let cursor = app.cursor(Pane::Groups);
    let height = parts[0].height.saturating_sub(1) as usize;
    let id_width = (inner.width as usize).saturating_sub(33).clamp(6, 24);
    let layout = PaneLayout::table(Pane::Groups, area, parts[0], scroll(cursor, height), groups.len());
    let rows = groups
        .iter()
        .enumerate()
        .skip(scroll(cursor, height))
        .take(height)
        .map(|(i, g)| {
            let state_style = if g.state == "Stable" { t.ok } else { t.warn };
            let row = Row::new(vec![
                Cell::from(fit(&g.group_id, id_width)),
                Cell::from(Span::styled(state_label(&g.state), state_style)),
                Cell::from(Line::from(g.members.len().to_string()).right_aligned()),
                Cell::from(Line::from(g.total_lag.to_string()).right_aligned()),
                Cell::from(Span::styled(sparkline(&g.lag_history, 8), t.warn)),
            ]);
            if i == cursor { row.style(t.selected) } else { row }
        });
    let columns = headers(
        app,
        &[
            Column::left("GROUP", Length(id_width as u16)),
            Column::left("STATE", Length(11)),
            Column::right("MEMB", Length(4)),
            Column::right("LAG", Length(6)),
            Column::left("TREND", Length(8)),
        ],
    );
    let header = Row::new(columns.cells).style(t.column_header);
    frame.render_widget(Table::new(rows, columns.widths).header(header), parts[0]);

    let Some(group) = app.selected_group() else {
        return layout;
    };
    let height = parts[1].height.saturating_sub(1) as usize;
    // What the fixed columns and their gaps leave to the member column; a wide pane also
    // shows each owner's client id and host, as kafka-consumer-groups.sh does.
    let rest = usize::from(parts[1].width).saturating_sub(16 + 9 + 8 + 6 + 4);
    let widest = |f: fn(&crate::view::MemberRow) -> &str, min: usize, max: usize| {
        group
            .members
            .iter()
            .map(|m| f(m).width())
            .max()
            .unwrap_or(0)
            .clamp(min, max)
    };
    let client_width = widest(|m| &m.client_id, 9, 32);
    let host_width = widest(|m| &m.host, 4, 24);
    let who = rest >= 24 + client_width + host_width + 2 && group.members.iter().any(|m| !m.client_id.is_empty());
    let member_width = if who {
        rest - client_width - host_width - 2
    } else {
        rest.max(6)
    };
    let rows = group.offsets.iter().take(height).map(|o| {
        // Whole when the column has room (as kafka-consumer-groups.sh prints it); else without
        // the group id it starts with, since the rest tells members apart.
        let prefix = format!("{}-", group.group_id);
        let owner = group.owner(&o.topic, o.partition);
        let member = owner.map_or("-".to_string(), |m| {
            let whole = member_label(app, &m.member_id, m.instance_id.as_deref());
            let id = if whole.width() <= member_width {
                whole
            } else {
                let short = m.member_id.strip_prefix(&prefix).unwrap_or(&m.member_id);
                member_label(app, short, m.instance_id.as_deref())
            };
            fit_end(&id, member_width)
        });
        let mut who_cells = Vec::new();
        if who {
            let (client, host) = owner.map_or(("-", "-"), |m| (m.client_id.as_str(), m.host.as_str()));
            who_cells.push(Cell::from(Span::styled(fit(client, client_width), t.dim)));
            who_cells.push(Cell::from(Span::styled(fit(host, host_width), t.dim)));
        }
        Row::new(
            vec![
                Cell::from(fit(&format!("{}-{}", o.topic, o.partition), 16)),
                Cell::from(Line::from(o.committed.to_string()).right_aligned()),
                Cell::from(Line::from(o.end.map_or("-".into(), |e| e.to_string())).right_aligned()),
                Cell::from(
                    Line::from(Span::styled(
                        o.lag.map_or("-".into(), |l| l.to_string()),
                        if o.lag.unwrap_or(0) > 0 { t.warn } else { t.text },
                    ))
                    .right_aligned(),
                ),
                Cell::from(Span::styled(member, t.dim)),
            ]
            .into_iter()
            .chain(who_cells)
            .collect::<Vec<_>>(),
        )
    });
    let mut wanted = vec![
        Column::left("PARTITION", Length(16)),
        Column::right("COMMITTED", Length(9)),
        Column::right("END", Length(8)),
        Column::right("LAG", Length(6)),
        Column::left("MEMBER", Min(6)),
    ];
    if who {
        wanted[4] = Column::left("MEMBER", Length(member_width as u16));
        wanted.push(Column::left("CLIENT-ID", Length(client_width as u16)));
        wanted.push(Column::left("HOST", Length(host_width as u16)));
    }
    let columns = headers(app, &wanted);
    let header = Row::new(columns.cells).style(t.column_header);
    frame.render_widget(Table::new(rows, columns.widths).header(header), parts[1]);
    layout
}

/// A member as the offsets table names it: a static member (KIP-345) with its
/// `group.instance.id`, which stays the same across its restarts while its member id changes.
fn member_label(app: &App, member_id: &str, instance: Option<&str>) -> String {
    match instance {
        Some(instance) => app.lang.fmt(
            "{member} (static: {instance})",
            &[("member", &member_id), ("instance", &instance)],
        ),
        None => member_id.to_string(),
    }
}

/// For a room: group, state and total lag, spaced.
fn draw_projector(frame: &mut Frame, area: Rect, app: &App) -> PaneLayout {
    let t = &app.theme;
    let groups = app.visible_groups();
    let block = block(app, Pane::Groups, app.lang.count(app.view.groups.len(), "group"));
    let inner = block.inner(area);
    let height = rows_in(inner.height.saturating_sub(1), 2);
    let cursor = app.cursor(Pane::Groups);
    let first = scroll(cursor, height);
    let id_width = (inner.width as usize).saturating_sub(11 + 8 + 2 * 3).clamp(6, 30);
    let layout = PaneLayout::spaced(Pane::Groups, area, inner, first, groups.len(), 2);
    let rows = groups.iter().enumerate().skip(first).take(height).map(|(i, g)| {
        let state_style = if g.state == "Stable" { t.ok } else { t.warn };
        let lag_style = if g.total_lag > 0 { t.warn } else { t.text };
        let row = spaced_row(Row::new(vec![
            Cell::from(fit(&g.group_id, id_width)),
            Cell::from(Span::styled(state_label(&g.state), state_style)),
            Cell::from(Line::from(Span::styled(g.total_lag.to_string(), lag_style)).right_aligned()),
        ]));
        if i == cursor { row.style(t.selected) } else { row }
    });
    let columns = headers(
        app,
        &[
            Column::left("GROUP", Length(id_width as u16)),
            Column::left("STATE", Length(11)),
            Column::right("LAG", Length(8)),
        ],
    );
    let header = Row::new(columns.cells).style(t.column_header);
    frame.render_widget(
        Table::new(rows, columns.widths)
            .header(header)
            .column_spacing(3)
            .block(block),
        area,
    );
    layout
}

/// Group states in at most 11 columns.
fn state_label(state: &str) -> &str {
    match state {
        "PreparingRebalance" => "Rebalancing",
        "CompletingRebalance" => "Completing",
        other => other,
    }
}
