//! Progress for long runs: bars (indicatif) on a terminal, or with `run --progress json`
//! periodic JSON lines on stderr for batch jobs.
//!
//! The main bar follows the input bytes (MB/s, and ETA when every input is a plain file). A pass
//! with stages (`trajkit run`) adds a line per stage under it: trajectories in, written,
//! filtered, rejected and the stage's busy time; `--progress json` lines carry the same counts.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use trajkit::engine::output::warn;
use trajkit::engine::pipeline::Progress;
use trajkit::engine::pipeline::StageSummary;

/// How often `--progress json` writes a line.
pub const JSON_EVERY: Duration = Duration::from_secs(5);

/// Counts shared with the JSON ticker.
struct Counts {
    bytes: AtomicU64,
    records: AtomicU64,
    total: Option<u64>,
    what: &'static str,
    started: Instant,
    /// The stage counts last reported (empty for passes without stages).
    stages: Mutex<Vec<StageSummary>>,
}

impl Counts {
    /// One `--progress json` line.
    fn line(&self, done: bool) -> String {
        let bytes = self.bytes.load(Ordering::Relaxed);
        let secs = self.started.elapsed().as_secs_f64();
        let stages = self.stages.lock().map(|s| s.clone()).unwrap_or_default();
        let mut line = serde_json::json!({
            "progress": self.what,
            "elapsed_s": (secs * 1000.0).round() / 1000.0,
            "bytes": bytes,
            "total_bytes": self.total,
            "records": self.records.load(Ordering::Relaxed),
            "mb_per_s": if secs > 0.0 { (bytes as f64 / 1e6 / secs * 10.0).round() / 10.0 } else { 0.0 },
            "done": done,
        });
        if !stages.is_empty() {
            line["stages"] = serde_json::json!(stages);
        }
        line.to_string()
    }
}

/// The thread writing `--progress json` lines, and its stop flag.
struct Ticker {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

/// A byte-based progress bar over the inputs; invisible when stderr is not a terminal. With
/// [`Bar::json`], no bar: a JSON line on stderr every [`JSON_EVERY`] and one at the end.
pub struct Bar {
    multi: MultiProgress,
    bar: ProgressBar,
    /// One line per stage, made at the first stage counts.
    stage_bars: Mutex<Vec<ProgressBar>>,
    counts: Arc<Counts>,
    ticker: Mutex<Option<Ticker>>,
}

/// The total size of the inputs when every one is a plain file.
fn total_size(inputs: &[String]) -> Option<u64> {
    inputs
        .iter()
        .map(|p| {
            let plain = !(p == "-" || p.ends_with(".gz") || p.ends_with(".zst"));
            plain
                .then(|| std::fs::metadata(p).map(|m| m.len()).ok())
                .flatten()
        })
        .sum()
}

impl Bar {
    /// A bar for `inputs`; `visible` false hides it whatever the terminal.
    pub fn new(inputs: &[String], what: &'static str, visible: bool) -> Bar {
        let total = total_size(inputs);
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
        // The stderr target draws nothing when stderr is not a terminal.
        let multi = if visible && on_terminal {
            MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(4))
        } else {
            MultiProgress::with_draw_target(ProgressDrawTarget::hidden())
        };
        let bar = multi.add(bar);
        if visible && on_terminal {
            bar.enable_steady_tick(Duration::from_millis(250));
        }
        Bar {
            multi,
            bar,
            stage_bars: Mutex::new(Vec::new()),
            counts: Arc::new(Counts {
                bytes: AtomicU64::new(0),
                records: AtomicU64::new(0),
                total,
                what,
                started: Instant::now(),
                stages: Mutex::new(Vec::new()),
            }),
            ticker: Mutex::new(None),
        }
    }

    /// No bar: a JSON line of progress (`progress`, `elapsed_s`, `bytes`, `total_bytes`,
    /// `records`, `mb_per_s`, `done`, and for `run` `stages`: per stage `stage`, `in`,
    /// `written`, `filtered`, `rejected`, `seconds`) on stderr every [`JSON_EVERY`], and a last
    /// one with `done: true` from [`Bar::finish`].
    pub fn json(inputs: &[String], what: &'static str) -> Bar {
        let bar = Bar::new(inputs, what, false);
        let stop = Arc::new(AtomicBool::new(false));
        let (counts, flag) = (bar.counts.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut next = JSON_EVERY;
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                if counts.started.elapsed() >= next {
                    warn(format_args!("{}", counts.line(false)));
                    next += JSON_EVERY;
                }
            }
        });
        if let Ok(mut t) = bar.ticker.lock() {
            *t = Some(Ticker { stop, thread });
        }
        bar
    }

    /// Input bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        self.counts.bytes.load(Ordering::Relaxed)
    }

    /// Removes the bar from the terminal (with `json`: stops the lines and writes the last).
    pub fn finish(&self) {
        if let Ok(bars) = self.stage_bars.lock() {
            bars.iter().for_each(ProgressBar::finish_and_clear);
        }
        self.bar.finish_and_clear();
        let _ = self.multi.clear();
        let ticker = self.ticker.lock().ok().and_then(|mut t| t.take());
        if let Some(t) = ticker {
            t.stop.store(true, Ordering::Relaxed);
            let _ = t.thread.join();
            warn(format_args!("{}", self.counts.line(true)));
        }
    }
}

impl Progress for Bar {
    fn bytes(&self, n: u64) {
        self.counts.bytes.fetch_add(n, Ordering::Relaxed);
        self.bar.inc(n);
    }

    fn records(&self, n: u64) {
        let total = self.counts.records.fetch_add(n, Ordering::Relaxed) + n;
        self.bar.set_message(format!("{total} records"));
    }

    fn stages(&self, stages: &[StageSummary]) {
        if let Ok(mut last) = self.counts.stages.lock() {
            *last = stages.to_vec();
        }
        let Ok(mut bars) = self.stage_bars.lock() else {
            return;
        };
        while bars.len() < stages.len() {
            let bar = self.multi.add(ProgressBar::new_spinner());
            if let Ok(style) = ProgressStyle::with_template("{prefix:>12} {msg}") {
                bar.set_style(style);
            }
            bars.push(bar);
        }
        for (bar, s) in bars.iter().zip(stages) {
            bar.set_prefix(s.stage.clone());
            bar.set_message(format!(
                "{} in, {} written, {} filtered, {} rejected, {:.1} s busy",
                s.records_in, s.written, s.filtered, s.rejected, s.seconds
            ));
        }
    }
}
