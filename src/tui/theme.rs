//! Semantic styles, read from theme files: `assets/themes/*.toml` are compiled in and
//! chosen by name with `[console] theme`; a path names a user's own file; `auto` (the
//! default) is the default colours, and high contrast in the projector layout. With `NO_COLOR`
//! set (non-empty) the monochrome theme is used whatever the configuration says: states stay
//! readable through modifiers and the role glyphs (★ leader, ● in sync, ○ out of sync, ✗
//! offline).

use std::path::Path;
use std::str::FromStr;

use anyhow::{Context, Result};
use ratatui::style::{Color, Modifier, Style};
use serde::{Deserialize, Deserializer};

use super::layout::Presentation;
use crate::view::{BrokerStatus, ReplicaRole, Severity};

/// The themes shipped in the binary.
pub const THEMES: [(&str, &str); 3] = [
    ("default", include_str!("../../assets/themes/default.toml")),
    ("high-contrast", include_str!("../../assets/themes/high-contrast.toml")),
    ("monochrome", include_str!("../../assets/themes/monochrome.toml")),
];

/// `[console] theme` when it names no theme: each layout's own.
pub const AUTO: &str = "auto";

/// The theme of each layout. One configured theme serves both; `auto` is the default
/// colours in the normal layout and high contrast in the projector layout (a projector
/// washes dark greys and thin colours out).
#[derive(Debug, Clone, PartialEq)]
pub struct Themes {
    pub normal: Theme,
    pub projector: Theme,
}

impl Themes {
    /// The themes `[console] theme` means; monochrome for both when `no_color`.
    pub fn load(name: &str, no_color: bool) -> Result<Themes> {
        if name == AUTO {
            return Ok(Themes {
                normal: Theme::load("default", no_color)?,
                projector: Theme::load("high-contrast", no_color)?,
            });
        }
        let theme = Theme::load(name, no_color)?;
        Ok(Themes::same(theme))
    }

    /// One theme for both layouts.
    pub fn same(theme: Theme) -> Themes {
        Themes {
            normal: theme.clone(),
            projector: theme,
        }
    }

    pub fn of(&self, presentation: Presentation) -> &Theme {
        match presentation {
            Presentation::Normal => &self.normal,
            Presentation::Projector => &self.projector,
        }
    }
}

/// Whether `NO_COLOR` asks for no colour.
pub fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// Every style the console uses. A field left out of a theme file is plain text.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Theme {
    #[serde(deserialize_with = "style")]
    pub text: Style,
    #[serde(deserialize_with = "style")]
    pub dim: Style,
    #[serde(deserialize_with = "style")]
    pub title: Style,
    #[serde(deserialize_with = "style")]
    pub header: Style,
    #[serde(deserialize_with = "style")]
    pub column_header: Style,
    #[serde(deserialize_with = "style")]
    pub selected: Style,
    #[serde(deserialize_with = "style")]
    pub border: Style,
    #[serde(deserialize_with = "style")]
    pub focused_border: Style,
    #[serde(deserialize_with = "style")]
    pub flash: Style,
    #[serde(deserialize_with = "style")]
    pub ok: Style,
    #[serde(deserialize_with = "style")]
    pub warn: Style,
    #[serde(deserialize_with = "style")]
    pub error: Style,
    #[serde(deserialize_with = "style")]
    pub leader: Style,
    #[serde(deserialize_with = "style")]
    pub in_sync: Style,
    #[serde(deserialize_with = "style")]
    pub out_of_sync: Style,
    #[serde(deserialize_with = "style")]
    pub offline: Style,
    /// Leader epochs in the replica-log picture, taken in turn (epoch modulo their number);
    /// none: every epoch is plain text and reads by its printed number.
    #[serde(deserialize_with = "styles")]
    pub epochs: Vec<Style>,
    /// A replica's records above the high watermark (not committed yet).
    #[serde(deserialize_with = "style")]
    pub uncommitted: Style,
    /// A diverged follower's suffix, which it will truncate.
    #[serde(deserialize_with = "style")]
    pub diverged: Style,
}

/// One style in a theme file: `{ fg = "cyan", bg = "black", modifiers = ["bold"] }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StyleSpec {
    fg: Option<String>,
    bg: Option<String>,
    #[serde(default)]
    modifiers: Vec<String>,
}

fn color(name: &str) -> Result<Color, String> {
    Color::from_str(name).map_err(|_| {
        format!("{name:?} is not a colour: use a name such as \"cyan\" or \"darkgray\", \"#rrggbb\" or an index 0-255")
    })
}

fn styles<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Style>, D::Error> {
    use serde::de::Error;
    Vec::<StyleSpec>::deserialize(deserializer)?
        .iter()
        .map(|spec| to_style(spec).map_err(D::Error::custom))
        .collect()
}

fn style<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Style, D::Error> {
    use serde::de::Error;
    to_style(&StyleSpec::deserialize(deserializer)?).map_err(D::Error::custom)
}

fn to_style(spec: &StyleSpec) -> Result<Style, String> {
    let mut style = Style::default();
    if let Some(fg) = &spec.fg {
        style = style.fg(color(fg)?);
    }
    if let Some(bg) = &spec.bg {
        style = style.bg(color(bg)?);
    }
    for m in &spec.modifiers {
        let modifier = match m.as_str() {
            "bold" => Modifier::BOLD,
            "dim" => Modifier::DIM,
            "italic" => Modifier::ITALIC,
            "underlined" => Modifier::UNDERLINED,
            "reversed" => Modifier::REVERSED,
            "crossed_out" => Modifier::CROSSED_OUT,
            "slow_blink" => Modifier::SLOW_BLINK,
            other => {
                return Err(format!(
                    "{other:?} is not a modifier: use bold, dim, italic, underlined, reversed or crossed_out"
                ));
            }
        };
        style = style.add_modifier(modifier);
    }
    Ok(style)
}

impl Theme {
    /// The theme `[console] theme` names (a shipped name or a file's path; `auto` is the
    /// default colours); monochrome when `no_color`.
    pub fn load(name: &str, no_color: bool) -> Result<Theme> {
        let name = match name {
            _ if no_color => "monochrome",
            AUTO => "default",
            other => other,
        };
        if let Some((_, text)) = THEMES.iter().find(|(n, _)| *n == name) {
            return Theme::parse(&format!("assets/themes/{name}.toml"), text);
        }
        let path = Path::new(name);
        if !(name.ends_with(".toml") || name.contains(std::path::MAIN_SEPARATOR)) {
            let names: Vec<&str> = THEMES.iter().map(|(n, _)| *n).collect();
            anyhow::bail!(
                "[console] theme = {name:?}: no such theme; use one of {} or the path of a theme file (.toml)",
                names.join(", ")
            );
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("[console] theme: cannot read the theme file {}", path.display()))?;
        Theme::parse(&path.display().to_string(), &text)
    }

    /// A theme file's text; errors name the file, line and column.
    pub fn parse(name: &str, text: &str) -> Result<Theme> {
        toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map_or((0, 0), |s| crate::config::line_column(text, s.start));
            anyhow::anyhow!("{name}:{line}:{column}: {}", e.message().trim())
        })
    }

    /// A theme shipped in the binary (`cargo test` checks they all parse).
    fn shipped(name: &str) -> Theme {
        Theme::load(name, false).unwrap_or_else(|e| panic!("the shipped theme {name} is broken: {e:#}"))
    }

    /// The default colours.
    pub fn colored() -> Theme {
        Theme::shipped("default")
    }

    /// No colour (`NO_COLOR`).
    pub fn monochrome() -> Theme {
        Theme::shipped("monochrome")
    }

    pub fn role(&self, role: ReplicaRole) -> Style {
        match role {
            ReplicaRole::Leader => self.leader,
            ReplicaRole::InSync => self.in_sync,
            ReplicaRole::OutOfSync => self.out_of_sync,
            ReplicaRole::Offline => self.offline,
        }
    }

    /// The style of a leader epoch in the replica-log picture.
    pub fn epoch(&self, epoch: i32) -> Style {
        match self.epochs.len() {
            0 => self.text,
            n => self.epochs[epoch.rem_euclid(n as i32) as usize],
        }
    }

    pub fn broker(&self, status: BrokerStatus) -> Style {
        match status {
            BrokerStatus::Online => self.ok,
            BrokerStatus::Fenced | BrokerStatus::Paused => self.warn,
            BrokerStatus::Stopped | BrokerStatus::Killed | BrokerStatus::Down | BrokerStatus::Unreachable => self.error,
        }
    }

    pub fn severity(&self, severity: Severity) -> Style {
        match severity {
            Severity::Info => self.text,
            Severity::Warn => self.warn,
            Severity::Error => self.error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_theme_parses_and_differs() {
        let themes: Vec<Theme> = THEMES
            .iter()
            .map(|(name, _)| Theme::load(name, false).unwrap_or_else(|e| panic!("{e:#}")))
            .collect();
        assert_eq!(themes.len(), 3);
        assert_ne!(themes[0], themes[1]);
        assert_eq!(
            Theme::colored().title,
            Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD)
        );
    }

    #[test]
    fn no_color_wins_over_the_configured_theme() {
        let theme = Theme::load("high-contrast", true).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(theme, Theme::monochrome());
        assert!(theme.error.fg.is_none());
    }

    #[test]
    fn auto_is_high_contrast_in_the_projector_layout_unless_a_theme_is_named_or_no_color() {
        let auto = Themes::load(AUTO, false).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(auto.of(Presentation::Normal), &Theme::colored());
        assert_eq!(auto.of(Presentation::Projector), &Theme::shipped("high-contrast"));
        let named = Themes::load("default", false).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(named.of(Presentation::Projector), &Theme::colored());
        let no_color = Themes::load(AUTO, true).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(no_color.of(Presentation::Projector), &Theme::monochrome());
    }

    #[test]
    fn a_bad_theme_says_where_and_what() {
        let err = Theme::parse("mine.toml", "text = {}\nwarn = { fg = \"orangeish\" }\n")
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("mine.toml:2:"), "{err}");
        assert!(err.contains("orangeish"), "{err}");
        let err = Theme::load("solarized", false).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains("default, high-contrast, monochrome"), "{err}");
    }
}
