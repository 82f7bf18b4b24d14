//! A progress bar on stderr for queries that compute pairs.
//!
//! Fed by the Kendall plan nodes' own counters ([`plan_progress`]): pairs
//! done, pairs to do, rate and ETA. Drawn only when stderr is a terminal and
//! the shell is not quiet; erased before any result is printed and when the
//! query ends.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use datafusion::physical_plan::ExecutionPlan;
use datafusion_kendall::exec::{Progress, plan_progress};
use tokio::task::JoinHandle;

/// How often the bar is redrawn.
const TICK: Duration = Duration::from_millis(200);

/// Queries shorter than this never show a bar (no flicker).
const DELAY: Duration = Duration::from_millis(500);

/// Width of the bar itself, in characters.
const WIDTH: usize = 30;

/// A running progress display; dropping it (or [`ProgressBar::finish`])
/// stops and erases it.
pub struct ProgressBar {
    state: Arc<Mutex<State>>,
    ticker: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct State {
    /// The bar is on screen (a line to erase).
    shown: bool,
    /// Printing has finished for good: never draw again.
    stopped: bool,
}

impl ProgressBar {
    /// Starts a bar for `plan` when it has a Kendall scan; `None` otherwise.
    pub fn start(plan: &Arc<dyn ExecutionPlan>) -> Option<ProgressBar> {
        plan_progress(plan)?;
        let state = Arc::new(Mutex::new(State::default()));
        let plan = Arc::clone(plan);
        let shared = Arc::clone(&state);
        let ticker = tokio::spawn(async move {
            let started = Instant::now();
            tokio::time::sleep(DELAY).await;
            loop {
                if let Some(progress) = plan_progress(&plan) {
                    let line = render(progress, started.elapsed());
                    let mut state = shared.lock().unwrap_or_else(|e| e.into_inner());
                    if state.stopped {
                        return;
                    }
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "\r\x1b[2K{line}");
                    let _ = err.flush();
                    state.shown = true;
                }
                tokio::time::sleep(TICK).await;
            }
        });
        Some(ProgressBar {
            state,
            ticker: Some(ticker),
        })
    }

    /// Erases the bar (if drawn) so that other output starts on a clean
    /// line; the next tick draws it again.
    pub fn clear(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.shown {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            state.shown = false;
        }
    }

    /// Stops and erases the bar.
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .stopped = true;
        if let Some(t) = self.ticker.take() {
            t.abort();
        }
        self.clear();
    }
}

impl Drop for ProgressBar {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One line: `[#####.....]  42.0%  1.05e8 / 2.48e8 pairs  3.1e7 pairs/s  ETA 5s`.
pub fn render(p: Progress, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64().max(1e-9);
    let rate = p.done as f64 / secs;
    match p.total {
        None => format!("loading and ranking the input... {:.0}s", secs),
        Some(total) => {
            let fraction = if total == 0 {
                1.0
            } else {
                (p.done as f64 / total as f64).min(1.0)
            };
            let filled = (fraction * WIDTH as f64).round() as usize;
            let eta = if rate > 0.0 && p.done < total {
                format!("ETA {}", duration((total - p.done) as f64 / rate))
            } else {
                "ETA -".to_string()
            };
            format!(
                "[{}{}] {:5.1}%  {} / {} pairs  {} pairs/s  {eta}",
                "#".repeat(filled),
                ".".repeat(WIDTH - filled),
                fraction * 100.0,
                count(p.done as f64),
                count(total as f64),
                count(rate),
            )
        }
    }
}

/// `999`, `1.2e3`, ... (pair counts span many orders of magnitude).
fn count(x: f64) -> String {
    if x < 1000.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2e}")
    }
}

/// `42s`, `3m05s`, `2h01m`.
fn duration(secs: f64) -> String {
    let s = secs.round() as u64;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_done_total_rate_and_eta() {
        let line = render(
            Progress {
                done: 1_000_000,
                total: Some(4_000_000),
            },
            Duration::from_secs(2),
        );
        assert!(line.starts_with("[########......................]"), "{line}");
        assert!(line.contains(" 25.0%"), "{line}");
        assert!(line.contains("1.00e6 / 4.00e6 pairs"), "{line}");
        assert!(line.contains("5.00e5 pairs/s"), "{line}");
        assert!(line.contains("ETA 6s"), "{line}");
        let loading = render(Progress::default(), Duration::from_secs(3));
        assert!(loading.contains("loading"), "{loading}");
        assert_eq!(duration(185.0), "3m05s");
        assert_eq!(duration(7260.0), "2h01m");
    }
}
