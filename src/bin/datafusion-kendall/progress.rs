//! A progress bar on stderr for queries that compute pairs, drawn by
//! indicatif (as datafusion-cli's).
//!
//! Fed by the Kendall plan nodes' own counters ([`plan_progress`]): pairs
//! done of pairs to do, with indicatif's rate and ETA. The shell starts one
//! only when stderr is a terminal and it is not quiet; it appears after
//! [`DELAY`], is erased while results are written ([`ProgressBar::suspend`])
//! and when the query ends.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use datafusion::physical_plan::ExecutionPlan;
use datafusion_kendall::exec::plan_progress;
use indicatif::{ProgressDrawTarget, ProgressState, ProgressStyle};
use tokio::task::JoinHandle;

/// How often the plan's counters are read.
const TICK: Duration = Duration::from_millis(200);

/// Queries shorter than this never show a bar (no flicker).
const DELAY: Duration = Duration::from_millis(500);

/// Before the pairs are counted (the input is being read and ranked).
const LOADING: &str = "{spinner} loading and ranking the input... {elapsed}";

/// `[#####.....]  42%  1.05e8 / 2.48e8 pairs  3.10e7 pairs/s  ETA 5s`.
const PAIRS: &str = "[{bar:30}] {percent:>3}%  {done} / {total} pairs  {rate} pairs/s  ETA {eta}";

/// A running progress bar; dropping it (or [`ProgressBar::finish`]) stops
/// and erases it.
pub struct ProgressBar {
    bar: indicatif::ProgressBar,
    /// Set once printing has finished for good: the ticker draws no more.
    stopped: Arc<Mutex<bool>>,
    ticker: Option<JoinHandle<()>>,
}

impl ProgressBar {
    /// Starts a bar for `plan` when it has a Kendall scan; `None` otherwise.
    pub fn start(plan: &Arc<dyn ExecutionPlan>) -> Option<ProgressBar> {
        plan_progress(plan)?;
        // Hidden until DELAY has passed; its clock starts with the query.
        let bar = indicatif::ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        bar.set_style(style(LOADING));
        let stopped = Arc::new(Mutex::new(false));
        let ticker = tokio::spawn(tick(bar.clone(), Arc::clone(plan), Arc::clone(&stopped)));
        Some(ProgressBar {
            bar,
            stopped,
            ticker: Some(ticker),
        })
    }

    /// Runs `write` with the bar erased (so that output starts on a clean
    /// line), then draws it again.
    pub fn suspend<R>(&self, write: impl FnOnce() -> R) -> R {
        self.bar.suspend(write)
    }

    /// Stops and erases the bar.
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let mut stopped = self.stopped.lock().unwrap_or_else(|e| e.into_inner());
        *stopped = true;
        if let Some(t) = self.ticker.take() {
            t.abort();
        }
        self.bar.finish_and_clear();
    }
}

impl Drop for ProgressBar {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Shows `bar` after [`DELAY`], then hands it the plan's counters every
/// [`TICK`] until stopped.
async fn tick(
    bar: indicatif::ProgressBar,
    plan: Arc<dyn ExecutionPlan>,
    stopped: Arc<Mutex<bool>>,
) {
    tokio::time::sleep(DELAY).await;
    let (mut shown, mut counting) = (false, false);
    loop {
        if let Some(progress) = plan_progress(&plan) {
            let stopped = stopped.lock().unwrap_or_else(|e| e.into_inner());
            if *stopped {
                return;
            }
            if !shown {
                bar.set_draw_target(ProgressDrawTarget::stderr());
                shown = true;
            }
            match progress.total {
                None => bar.tick(),
                Some(total) => {
                    if !counting {
                        bar.set_style(style(PAIRS));
                        counting = true;
                    }
                    bar.set_length(total);
                    bar.set_position(progress.done.min(total));
                }
            }
        }
        tokio::time::sleep(TICK).await;
    }
}

/// The bar's style for `template`, with the pair counts written as
/// [`count`] writes them.
fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .expect("a valid progress template")
        .progress_chars("#.")
        .with_key("done", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(&count(s.pos() as f64));
        })
        .with_key("total", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(&count(s.len().unwrap_or(0) as f64));
        })
        .with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{}", count(s.per_sec()));
        })
}

/// `999`, `1.20e3`, ... (pair counts span many orders of magnitude).
fn count(x: f64) -> String {
    if x < 1000.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_and_counts() {
        // The templates parse (style panics otherwise) and use our keys.
        let _ = (style(LOADING), style(PAIRS));
        for key in ["{done}", "{total}", "{rate} pairs/s", "ETA {eta}"] {
            assert!(PAIRS.contains(key), "{key}");
        }
        assert_eq!(count(999.0), "999");
        assert_eq!(count(1_000_000.0), "1.00e6");
        assert_eq!(count(3.1e7), "3.10e7");
    }
}
