//! Progress bars (indicatif) for long runs on a terminal.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use trajkit::pipeline::Progress;

/// A byte-based progress bar over the inputs; invisible when stderr is not a terminal.
pub struct Bar {
    bar: ProgressBar,
    bytes: AtomicU64,
    records: AtomicU64,
}

impl Bar {
    /// A bar for `inputs`; `visible` false hides it whatever the terminal.
    pub fn new(inputs: &[String], what: &'static str, visible: bool) -> Bar {
        let total: Option<u64> = inputs
            .iter()
            .map(|p| {
                let plain = !(p == "-" || p.ends_with(".gz") || p.ends_with(".zst"));
                plain
                    .then(|| std::fs::metadata(p).map(|m| m.len()).ok())
                    .flatten()
            })
            .sum();
        let bar = match total {
            Some(n) => ProgressBar::new(n),
            None => ProgressBar::no_length(),
        };
        let template = if total.is_some() {
            "{prefix} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta} {msg}"
        } else {
            "{prefix} {spinner} {bytes} {binary_bytes_per_sec} {msg}"
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(what);
        let on_terminal = std::env::var_os("CI").is_none();
        if visible && on_terminal {
            bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
            bar.enable_steady_tick(Duration::from_millis(250));
        } else {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
        Bar {
            bar,
            bytes: AtomicU64::new(0),
            records: AtomicU64::new(0),
        }
    }

    /// Input bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Progress for Bar {
    fn bytes(&self, n: u64) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
        self.bar.inc(n);
    }

    fn records(&self, n: u64) {
        let total = self.records.fetch_add(n, Ordering::Relaxed) + n;
        self.bar.set_message(format!("{total} records"));
    }
}
