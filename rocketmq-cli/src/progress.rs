//! Progress on standard error while long work runs: a bar for `rmq produce`, a status line for
//! `rmq consume`. Both redraw one line in place, so they are only for terminals: callers create
//! them with [`stderr_is_terminal`] and nothing is written when it is false (a log file or a
//! pipe gets only the final summary).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Width of the bar, in characters.
const BAR_WIDTH: usize = 30;
/// Redraws at most this often: more is invisible and costs a write per message.
const REDRAW_EVERY: Duration = Duration::from_millis(100);

/// Whether standard error is a terminal (the only place a redrawn line makes sense).
pub fn stderr_is_terminal() -> bool {
    std::io::stderr().is_terminal()
}

/// A progress bar over `total` items, drawn on standard error when enabled.
#[derive(Debug)]
pub struct ProgressBar {
    total: usize,
    enabled: bool,
    started: Instant,
    drawn: Option<Instant>,
}

impl ProgressBar {
    /// A bar for `total` items; draws nothing unless `enabled`.
    pub fn new(total: usize, enabled: bool) -> Self {
        Self {
            total,
            enabled,
            started: Instant::now(),
            drawn: None,
        }
    }

    /// Reports `done` items finished, `errors` of them failed; redraws when due (and always for
    /// the last item).
    pub fn update(&mut self, done: usize, errors: usize) {
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        let due = self
            .drawn
            .is_none_or(|at| now.duration_since(at) >= REDRAW_EVERY);
        if !due && done < self.total {
            return;
        }
        self.drawn = Some(now);
        let line = bar_line(
            done,
            self.total,
            errors,
            now.duration_since(self.started).as_secs_f64(),
        );
        draw(&line);
    }

    /// Erases the bar, leaving the line for the final summary.
    pub fn finish(&mut self) {
        if self.enabled && self.drawn.is_some() {
            clear();
        }
    }
}

/// The text of the bar: `[#####.....]  500/1000  50%  1234 msg/s  0 errors`.
pub fn bar_line(done: usize, total: usize, errors: usize, seconds: f64) -> String {
    let done_of_total = done.min(total);
    // Nothing to do is all done.
    let filled = (done_of_total * BAR_WIDTH)
        .checked_div(total)
        .unwrap_or(BAR_WIDTH);
    let percent = (done_of_total * 100).checked_div(total).unwrap_or(100);
    format!(
        "[{}{}] {done:>width$}/{total} {percent:>3}% {:>7.0} msg/s {errors} errors",
        "#".repeat(filled),
        ".".repeat(BAR_WIDTH - filled),
        rate(done, seconds),
        width = total.to_string().len(),
    )
}

/// Items per second, 0 before any time passed.
pub fn rate(items: usize, seconds: f64) -> f64 {
    if seconds > 0.0 {
        items as f64 / seconds
    } else {
        0.0
    }
}

/// Replaces the current line of standard error with `line`.
pub fn draw(line: &str) {
    let mut err = std::io::stderr().lock();
    // A failed progress write is not worth failing the work for.
    let _ = write!(err, "\r\x1b[K{line}");
    let _ = err.flush();
}

/// Erases the current line of standard error.
pub fn clear() {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[K");
    let _ = err.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bar_fills_with_progress() {
        assert_eq!(
            bar_line(0, 10, 0, 0.0),
            format!("[{}]  0/10   0%       0 msg/s 0 errors", ".".repeat(30))
        );
        assert_eq!(
            bar_line(5, 10, 1, 2.0),
            format!(
                "[{}{}]  5/10  50%       2 msg/s 1 errors",
                "#".repeat(15),
                ".".repeat(15)
            )
        );
        assert!(bar_line(10, 10, 0, 1.0).starts_with(&format!("[{}]", "#".repeat(30))));
        assert!(bar_line(0, 0, 0, 1.0).contains("100%"));
    }
}
