//! A query's one load of its input, shared by all its partitions.
//!
//! The first partition that needs the input starts the load on a blocking
//! thread; the others wait for that same load. Its outcome is kept, error
//! included: an input whose problem shows late (a duplicate gene id in the
//! last row) is read once per query, not once per waiting partition.
//!
//! When every partition stream that could use the load is dropped while it
//! runs (the query was cancelled, or ended before any row was needed), the
//! load is asked to stop: it checks [`checkpoint`] between stages and between
//! the record batches it reads, and frees what it holds. A partition that
//! asks afterwards starts a new load once the stopped one has ended, so
//! two loads never run side by side.

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use datafusion::error::{DataFusionError, Result};
use datafusion::physical_plan::metrics::Count;
use tokio::sync::watch;

use crate::input::FN_NAME;

/// The kept outcome of a load.
type Outcome<T> = std::result::Result<Arc<T>, Arc<DataFusionError>>;

/// What waiters of one run of the load learn when it ends.
#[derive(Debug)]
enum Ended<T> {
    /// Loaded, or failed: kept for the query.
    Finished(Outcome<T>),
    /// Stopped because nobody wanted it any more: not kept.
    Stopped,
}

impl<T> Clone for Ended<T> {
    fn clone(&self) -> Self {
        match self {
            Ended::Finished(outcome) => Ended::Finished(outcome.clone()),
            Ended::Stopped => Ended::Stopped,
        }
    }
}

#[derive(Debug)]
struct Run<T> {
    stop: Arc<AtomicBool>,
    ended: watch::Receiver<Option<Ended<T>>>,
}

#[derive(Debug)]
struct State<T> {
    outcome: Option<Outcome<T>>,
    running: Option<Run<T>>,
    /// Live [`Interest`]s.
    interested: usize,
}

/// One query's load of a `T`, shared (see the module docs).
#[derive(Debug)]
pub struct SharedLoad<T> {
    state: Mutex<State<T>>,
    /// Loads started (`input_loads` in `EXPLAIN ANALYZE`).
    started: Count,
    /// Loads stopped before they ended (`input_loads_stopped`).
    stopped: Count,
}

/// A partition's claim on a [`SharedLoad`]: while any is alive, a running
/// load goes on; when the last is dropped, it is asked to stop.
#[derive(Debug)]
pub struct Interest<T> {
    load: Arc<SharedLoad<T>>,
}

impl<T> Drop for Interest<T> {
    fn drop(&mut self) {
        let mut state = self.load.lock();
        state.interested -= 1;
        if state.interested == 0
            && let Some(run) = &state.running
        {
            run.stop.store(true, Ordering::Relaxed);
        }
    }
}

impl<T> SharedLoad<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A panic while holding the lock cannot leave the state half-updated
        // (every update is one assignment), so a poisoned lock is still good.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T: Send + Sync + 'static> SharedLoad<T> {
    /// A load not yet started, counting starts and stops in the given metrics.
    pub fn new(started: Count, stopped: Count) -> Self {
        Self {
            state: Mutex::new(State {
                outcome: None,
                running: None,
                interested: 0,
            }),
            started,
            stopped,
        }
    }

    /// Registers a partition that will (or may) call [`SharedLoad::get`].
    pub fn interest(self: &Arc<Self>) -> Interest<T> {
        self.lock().interested += 1;
        Interest {
            load: Arc::clone(self),
        }
    }

    /// The loaded value, when a load has succeeded.
    pub fn loaded(&self) -> Option<Arc<T>> {
        match &self.lock().outcome {
            Some(Ok(v)) => Some(Arc::clone(v)),
            _ => None,
        }
    }

    /// The value: the kept outcome, else the running load's, else a new
    /// load's (`make` gives the blocking work; it is called once per load
    /// started). `_interest` proves the caller is counted as interested.
    pub async fn get<F, W>(self: &Arc<Self>, _interest: &Interest<T>, make: F) -> Result<Arc<T>>
    where
        F: Fn() -> W,
        W: FnOnce() -> Result<T> + Send + 'static,
    {
        loop {
            let mut ended = {
                let mut state = self.lock();
                if let Some(outcome) = &state.outcome {
                    return outcome.clone().map_err(DataFusionError::Shared);
                }
                match &state.running {
                    Some(run) => run.ended.clone(),
                    None => {
                        let (tx, rx) = watch::channel(None);
                        let stop = Arc::new(AtomicBool::new(false));
                        state.running = Some(Run {
                            stop: Arc::clone(&stop),
                            ended: rx.clone(),
                        });
                        self.started.add(1);
                        let this = Arc::clone(self);
                        let work = make();
                        tokio::task::spawn_blocking(move || this.run(work, stop, tx));
                        rx
                    }
                }
            };
            let ended = ended
                .wait_for(Option::is_some)
                .await
                .map(|e| e.clone())
                .ok()
                .flatten();
            match ended {
                Some(Ended::Finished(outcome)) => {
                    return outcome.map_err(DataFusionError::Shared);
                }
                Some(Ended::Stopped) => continue,
                None => {
                    // The blocking task was dropped unrun (the runtime is
                    // shutting down): nothing to wait for any more.
                    self.lock().running = None;
                    return Err(DataFusionError::Execution(format!(
                        "{FN_NAME}: the input load ended without a result (runtime shutting down?)"
                    )));
                }
            }
        }
    }

    /// Runs one load on this (blocking) thread and publishes how it ended.
    fn run<W>(&self, work: W, stop: Arc<AtomicBool>, tx: watch::Sender<Option<Ended<T>>>)
    where
        W: FnOnce() -> Result<T>,
    {
        let result = with_stop_flag(&stop, || {
            catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|panic| {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                Err(DataFusionError::Execution(format!(
                    "{FN_NAME}: loading the input panicked: {what}"
                )))
            })
        });
        let ended = if result.is_err() && stop.load(Ordering::Relaxed) {
            self.stopped.add(1);
            Ended::Stopped
        } else {
            Ended::Finished(result.map(Arc::new).map_err(Arc::new))
        };
        {
            let mut state = self.lock();
            if let Ended::Finished(outcome) = &ended {
                state.outcome = Some(outcome.clone());
            }
            state.running = None;
        }
        // Nobody may be waiting any more: fine.
        let _ = tx.send(Some(ended));
    }
}

thread_local! {
    /// The stop flag of the load running on this thread, if any.
    static STOP: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Runs `f` with `flag` as this thread's stop flag (read by [`checkpoint`]).
fn with_stop_flag<R>(flag: &Arc<AtomicBool>, f: impl FnOnce() -> R) -> R {
    struct Reset(Option<Arc<AtomicBool>>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let previous = self.0.take();
            STOP.with(|s| *s.borrow_mut() = previous);
        }
    }
    let _reset = Reset(STOP.with(|s| s.borrow_mut().replace(Arc::clone(flag))));
    f()
}

/// Whether the load running on this thread has been asked to stop (false
/// outside a load, e.g. on a query's streams).
pub fn stop_requested() -> bool {
    STOP.with(|s| {
        s.borrow()
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    })
}

/// An error when the load running on this thread has been asked to stop:
/// call it between the stages of a load and between the batches it reads.
pub fn checkpoint() -> Result<()> {
    if stop_requested() {
        return Err(DataFusionError::Execution(format!(
            "{FN_NAME}: input load stopped: the query was cancelled"
        )));
    }
    Ok(())
}
