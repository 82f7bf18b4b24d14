//! How far Kendall scans have come: summed over a plan
//! ([`plan_progress`]) or over every scan this process runs
//! ([`live_progress`], [`live_progress_of`]), for progress displays.

use std::sync::Arc;

use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;

use super::KendallExec;

/// Progress of the pair computation of a query (see [`KendallExec::progress`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Pairs computed so far.
    pub done: u64,
    /// Pairs to compute; `None` while the input is still being loaded.
    pub total: Option<u64>,
}

/// The summed progress of every `kendall_all_pairs` scan in a physical plan,
/// or `None` when the plan has none (e.g. `SELECT 1`). A progress display
/// polls this while the plan runs; a scan whose input is still loading makes
/// the total `None`.
pub fn plan_progress(plan: &Arc<dyn ExecutionPlan>) -> Option<Progress> {
    let mut found: Option<Progress> = None;
    let mut stack = vec![plan];
    while let Some(node) = stack.pop() {
        if let Some(exec) = node.downcast_ref::<KendallExec>() {
            let p = exec.progress();
            found = Some(match found {
                None => p,
                Some(f) => Progress {
                    done: f.done + p.done,
                    total: f.total.zip(p.total).map(|(a, b)| a + b),
                },
            });
        }
        stack.extend(node.children());
    }
    found
}

/// A scan plan of this process not yet dropped (or with a stream still
/// running): its total (weakly, held by the plan and its streams, so that a
/// scan gone is pruned), its metrics (where the pairs computed are counted)
/// and how messages name its source ([`InputSpec::what`]).
pub(super) struct LiveScan {
    pub(super) total: std::sync::Weak<std::sync::OnceLock<u64>>,
    pub(super) metrics: ExecutionPlanMetricsSet,
    pub(super) what: String,
}

impl LiveScan {
    fn progress(&self) -> Progress {
        Progress {
            done: self
                .metrics
                .clone_inner()
                .sum_by_name("pairs_computed")
                .map_or(0, |m| m.as_usize() as u64),
            total: self.total.upgrade().and_then(|t| t.get().copied()),
        }
    }
}

/// The registry behind [`live_progress`], pruned of dropped plans.
pub(super) fn live_scans() -> std::sync::MutexGuard<'static, Vec<LiveScan>> {
    static LIVE: std::sync::Mutex<Vec<LiveScan>> = std::sync::Mutex::new(Vec::new());
    let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    live.retain(|scan| scan.total.strong_count() > 0);
    live
}

/// Summed progress of `scans`, or `None` when there is none.
fn sum_progress<'a>(scans: impl Iterator<Item = &'a LiveScan>) -> Option<Progress> {
    scans.map(LiveScan::progress).reduce(|f, p| Progress {
        done: f.done + p.done,
        total: f.total.zip(p.total).map(|(a, b)| a + b),
    })
}

/// The summed progress of every Kendall scan plan of this process that has
/// not been dropped (or still has a stream running), or `None` when there is
/// none: for a host that cannot
/// walk the plan it runs ([`plan_progress`] needs the plan), such as the
/// Python package, whose plans are foreign objects. Several queries running
/// at once are summed together: a progress display of one query among
/// others should use [`live_progress_of`] instead.
pub fn live_progress() -> Option<Progress> {
    sum_progress(live_scans().iter())
}

/// As [`live_progress`], over only the scans whose source is `source`
/// exactly as the query named it (a registered table or view, or a
/// location; for `kendall_cross_pairs`, the left source), or `None` when
/// there is none. Queries running at once on other sources are not counted:
/// the Python package's `corr()` registers its input under a name of its
/// own for each call, so that its progress bar counts its own pairs only.
pub fn live_progress_of(source: &str) -> Option<Progress> {
    let names = [
        format!("table '{source}'"),
        format!("'{source}'"),
        format!("10x directory '{source}'"),
    ];
    sum_progress(live_scans().iter().filter(|s| names.contains(&s.what)))
}
