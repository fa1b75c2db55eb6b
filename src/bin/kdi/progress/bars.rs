//! Live bars for people at a terminal while caches sync: one per
//! informer, with what it is doing, how many objects it listed and how
//! fast. They replace the "syncing" line and its reminders; failures are
//! still said as sentences, above the bars, and the bars are cleared (by
//! drop) before the command says anything else or prints objects.

use std::borrow::Cow;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use kube_dynamic_informer::informer::InformerStatus;

/// What a bar shows, each with its own template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Look {
    /// Listing: objects listed so far and the rate.
    Listing,
    /// Synced: the objects in the cache; no spinner.
    Synced,
    /// Anything else (not started, access denied, not served, ...): the
    /// state in words.
    Waiting,
}

impl Look {
    fn template(self) -> &'static str {
        match self {
            Look::Listing => "{spinner} {prefix}  {msg}, {human_pos} objects listed ({per_sec:0})",
            Look::Synced => "✓ {prefix}  {msg}, {human_pos} objects",
            Look::Waiting => "{spinner} {prefix}  {wide_msg}",
        }
    }

    fn style(self) -> ProgressStyle {
        // The templates are constants that a unit test parses.
        ProgressStyle::with_template(self.template())
            .unwrap_or_else(|_| ProgressStyle::default_spinner())
    }

    fn of(status: &InformerStatus) -> Look {
        match status {
            InformerStatus::Syncing { .. } | InformerStatus::Relisting { .. } => Look::Listing,
            InformerStatus::Synced | InformerStatus::Stale { .. } => Look::Synced,
            _ => Look::Waiting,
        }
    }
}

/// One bar per informer, in the order given; cleared when dropped.
pub struct SyncBars {
    bars: Vec<Bar>,
}

struct Bar {
    bar: ProgressBar,
    look: Look,
    /// Whether it shows a failure that its informer retries.
    failed: bool,
}

impl SyncBars {
    /// Bars for informers named `labels`, drawn by `multi`.
    pub fn new<'a>(multi: &MultiProgress, labels: impl IntoIterator<Item = &'a str>) -> Self {
        let labels: Vec<&str> = labels.into_iter().collect();
        let width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
        let bars = labels
            .iter()
            .map(|label| {
                let bar = ProgressBar::no_length()
                    .with_style(Look::Waiting.style())
                    .with_prefix(format!("{label:<width$}"))
                    .with_message(InformerStatus::NotStarted.words());
                Bar {
                    bar: multi.add(bar),
                    look: Look::Waiting,
                    failed: false,
                }
            })
            .collect();
        SyncBars { bars }
    }

    /// Shows informer `i`'s `status`; `cached`: the objects its cache
    /// holds, shown once it is synced.
    pub fn show(&mut self, i: usize, status: &InformerStatus, cached: usize) {
        let Some(Bar { bar, look, failed }) = self.bars.get_mut(i) else {
            return;
        };
        // Listing again after a failure is the retry: the failure stands
        // until objects come (as in the lines said).
        if *failed && matches!(status, InformerStatus::Syncing { listed: 0 }) {
            return;
        }
        *failed = status.is_failure();
        // Each setter may draw: the count first (in the look it had), then
        // the look, then the words, so that no frame mixes two states.
        match status {
            InformerStatus::Syncing { listed } | InformerStatus::Relisting { listed } => {
                let listed = *listed as u64;
                // A list started again: its rate is counted anew.
                if listed < bar.position() {
                    bar.reset();
                }
                bar.set_position(listed);
            }
            InformerStatus::Synced | InformerStatus::Stale { .. } => {
                bar.set_position(cached as u64);
            }
            _ => {}
        }
        let now = Look::of(status);
        if now != *look {
            bar.set_style(now.style());
            *look = now;
        }
        let words: Cow<'static, str> = Cow::Borrowed(status.words());
        if bar.message() != words {
            bar.set_message(words);
        }
    }

    /// Turns the spinners of the bars still waiting, and redraws the
    /// rates.
    pub fn tick(&self) {
        for b in &self.bars {
            if b.look != Look::Synced {
                b.bar.tick();
            }
        }
    }

    #[cfg(test)]
    fn bar(&self, i: usize) -> ProgressBar {
        self.bars[i].bar.clone()
    }
}

impl Drop for SyncBars {
    fn drop(&mut self) {
        for b in &self.bars {
            b.bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use indicatif::{ProgressDrawTarget, TermLike};

    use super::*;
    use crate::stderr::Stderr;

    fn refused() -> InformerStatus {
        InformerStatus::BackingOff {
            error: "configmaps is forbidden".into(),
            code: Some(403),
            attempt: 1,
            retry_in: Duration::from_secs(1),
            synced_before: false,
        }
    }

    #[test]
    fn every_template_parses() {
        for look in [Look::Listing, Look::Synced, Look::Waiting] {
            assert!(
                ProgressStyle::with_template(look.template()).is_ok(),
                "{look:?}"
            );
        }
    }

    #[test]
    fn each_bar_follows_its_informer_from_listing_to_synced() {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::hidden());
        let mut bars = SyncBars::new(&multi, ["configmaps", "widgets.example.com"]);
        let (configmaps, widgets) = (bars.bar(0), bars.bar(1));
        assert_eq!(configmaps.prefix(), "configmaps         ");
        assert_eq!(configmaps.message(), "not started");

        bars.show(0, &InformerStatus::Syncing { listed: 0 }, 0);
        bars.show(1, &refused(), 0);
        assert_eq!(configmaps.message(), "syncing");
        assert_eq!(widgets.message(), "access denied");
        // The retry's list, until objects come, is not news.
        bars.show(1, &InformerStatus::Syncing { listed: 0 }, 0);
        assert_eq!(widgets.message(), "access denied");
        bars.show(1, &InformerStatus::Syncing { listed: 100 }, 0);
        assert_eq!(widgets.message(), "syncing");
        assert_eq!(widgets.position(), 100);

        bars.show(0, &InformerStatus::Syncing { listed: 500 }, 0);
        bars.show(0, &InformerStatus::Syncing { listed: 1500 }, 0);
        assert_eq!(configmaps.position(), 1500);

        // A list that starts again counts from its start.
        bars.show(0, &InformerStatus::Relisting { listed: 200 }, 0);
        assert_eq!(configmaps.message(), "relisting");
        assert_eq!(configmaps.position(), 200);

        bars.show(0, &InformerStatus::Synced, 6002);
        assert_eq!(configmaps.message(), "synced");
        assert_eq!(configmaps.position(), 6002);
        bars.show(
            1,
            &InformerStatus::Pending {
                reason: "widgets.example.com is not served".into(),
            },
            0,
        );
        assert_eq!(widgets.message(), "not served");

        // A status for an informer without a bar is ignored.
        bars.show(7, &InformerStatus::Synced, 1);

        drop(bars);
        assert!(configmaps.is_finished() && widgets.is_finished());
    }

    #[test]
    fn lines_said_while_bars_are_drawn_go_above_them_and_the_bars_leave_nothing() {
        let screen = Screen::default();
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::term_like(Box::new(
            screen.clone(),
        )));
        let stderr = Stderr::Terminal {
            bars: Some(multi.clone()),
        };
        let mut bars = SyncBars::new(&multi, ["configmaps", "widgets"]);
        bars.show(0, &InformerStatus::Syncing { listed: 500 }, 0);
        bars.show(1, &refused(), 0);
        let drawn = screen.text();
        assert_eq!(drawn.len(), 2, "{drawn:#?}");
        assert!(
            drawn[0].contains("configmaps  syncing, 500 objects listed ("),
            "{drawn:#?}"
        );
        assert!(
            drawn[1].ends_with("widgets     access denied"),
            "{drawn:#?}"
        );

        stderr.say("kdi: widgets: access denied: configmaps is forbidden");
        let drawn = screen.text();
        assert_eq!(
            drawn[0], "kdi: widgets: access denied: configmaps is forbidden",
            "{drawn:#?}"
        );
        assert!(drawn[1].contains("configmaps  syncing"), "{drawn:#?}");
        assert!(drawn[2].contains("widgets     access denied"), "{drawn:#?}");

        bars.show(0, &InformerStatus::Synced, 6002);
        assert!(
            screen.text()[1].starts_with("✓ configmaps  synced, 6,002 objects"),
            "{:#?}",
            screen.text()
        );

        drop(bars);
        stderr.say("kdi: configmaps: synced, 6002 objects, ~1.2 MiB");
        assert_eq!(
            screen.text(),
            [
                "kdi: widgets: access denied: configmaps is forbidden",
                "kdi: configmaps: synced, 6002 objects, ~1.2 MiB",
            ]
        );
    }

    /// A terminal's screen, as the escape sequences indicatif sends leave
    /// it: lines of cells, a cursor, and the wrap at the right edge.
    #[derive(Clone, Debug, Default)]
    struct Screen(Arc<Mutex<Cells>>);

    #[derive(Debug, Default)]
    struct Cells {
        lines: Vec<Vec<char>>,
        row: usize,
        /// `WIDTH` when the next character wraps to the next line.
        col: usize,
    }

    const WIDTH: usize = 80;

    impl Screen {
        /// The lines with something on them, without trailing blanks.
        fn text(&self) -> Vec<String> {
            let cells = self.0.lock().unwrap();
            let mut lines: Vec<String> = cells
                .lines
                .iter()
                .map(|l| l.iter().collect::<String>().trim_end().to_owned())
                .collect();
            while lines.last().is_some_and(String::is_empty) {
                lines.pop();
            }
            lines
        }

        fn with(&self, f: impl FnOnce(&mut Cells)) -> std::io::Result<()> {
            let mut cells = self.0.lock().unwrap();
            f(&mut cells);
            let row = cells.row;
            if cells.lines.len() <= row {
                cells.lines.resize(row + 1, Vec::new());
            }
            Ok(())
        }
    }

    impl Cells {
        fn put(&mut self, c: char) {
            match c {
                '\r' => self.col = 0,
                '\n' => {
                    self.row += 1;
                    self.col = 0;
                }
                c => {
                    if self.col == WIDTH {
                        self.row += 1;
                        self.col = 0;
                    }
                    if self.lines.len() <= self.row {
                        self.lines.resize(self.row + 1, Vec::new());
                    }
                    let line = &mut self.lines[self.row];
                    if line.len() <= self.col {
                        line.resize(self.col + 1, ' ');
                    }
                    line[self.col] = c;
                    self.col += 1;
                }
            }
        }
    }

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            WIDTH as u16
        }

        fn height(&self) -> u16 {
            24
        }

        fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
            self.with(|c| {
                c.row = c.row.saturating_sub(n);
                c.col = c.col.min(WIDTH - 1);
            })
        }

        fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
            self.with(|c| {
                c.row += n;
                c.col = c.col.min(WIDTH - 1);
            })
        }

        fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
            self.with(|c| c.col = (c.col + n).min(WIDTH - 1))
        }

        fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
            self.with(|c| c.col = c.col.saturating_sub(n))
        }

        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.with(|c| s.chars().chain(['\n']).for_each(|ch| c.put(ch)))
        }

        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.with(|c| s.chars().for_each(|ch| c.put(ch)))
        }

        fn clear_line(&self) -> std::io::Result<()> {
            self.with(|c| {
                if let Some(line) = c.lines.get_mut(c.row) {
                    line.clear();
                }
                c.col = 0;
            })
        }

        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }
}
