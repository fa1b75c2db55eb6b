//! Who reads kdi's stderr, decided once for the process: people at a
//! terminal get sentences, and live progress bars while caches sync;
//! anything else (a file, a pipe, a log collector) gets JSON lines.
//!
//! Every line kdi writes on stderr goes through here, log lines
//! (`--verbose`) included: while bars are drawn, a line is printed above
//! them instead of through them.

use std::io::{IsTerminal, Write};
use std::sync::OnceLock;

use indicatif::{MultiProgress, ProgressDrawTarget};

/// How kdi writes on stderr; see the [module docs](self).
#[derive(Clone, Debug)]
pub enum Stderr {
    /// Not a terminal: JSON lines, for programs.
    Json,
    /// A terminal: sentences, for people, and the bars drawn by `bars`
    /// while caches sync (none where the terminal cannot draw them:
    /// `TERM=dumb`).
    Terminal { bars: Option<MultiProgress> },
}

impl Stderr {
    /// The process's stderr, as it is decided once, at first use.
    pub fn process() -> &'static Stderr {
        static STDERR: OnceLock<Stderr> = OnceLock::new();
        STDERR.get_or_init(|| {
            if !std::io::stderr().is_terminal() {
                return Stderr::Json;
            }
            let target = ProgressDrawTarget::stderr();
            let bars = (!target.is_hidden()).then(|| MultiProgress::with_draw_target(target));
            Stderr::Terminal { bars }
        })
    }

    /// Whether lines are JSON, for programs.
    pub fn json(&self) -> bool {
        matches!(self, Stderr::Json)
    }

    /// The bars of a terminal that draws them.
    pub fn bars(&self) -> Option<&MultiProgress> {
        match self {
            Stderr::Terminal { bars } => bars.as_ref(),
            Stderr::Json => None,
        }
    }

    /// Writes `line` (it may have several): above the bars when some are
    /// drawn. A stderr that cannot be written (closed, as in
    /// `kdi get 2>&1 | head -1`) is no reason to stop, nor to panic as
    /// `eprintln!` does.
    pub fn say(&self, line: impl std::fmt::Display) {
        match self.bars() {
            Some(bars) if !bars.is_hidden() => {
                let _ = bars.println(line.to_string());
            }
            _ => {
                let _ = writeln!(std::io::stderr().lock(), "{line}");
            }
        }
    }
}

/// A writer for log lines (`tracing_subscriber`'s `with_writer`): each
/// line is kept until it is complete, then said through
/// [`Stderr::process`].
#[derive(Default)]
pub struct LogLine(Vec<u8>);

impl Write for LogLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogLine {
    fn drop(&mut self) {
        if !self.0.is_empty() {
            let text = String::from_utf8_lossy(&self.0);
            Stderr::process().say(text.trim_end_matches('\n'));
        }
    }
}
