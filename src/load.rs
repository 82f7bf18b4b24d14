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
//!
//! The load reads its inputs on its blocking thread, except a plan made by
//! another copy of DataFusion (a table or view of a Python
//! `SessionContext`, reached through `datafusion-ffi`): its operators may
//! start tasks on *their* Tokio runtime, which only the host's own threads
//! are inside, so its partitions are executed and polled by the partition
//! streams waiting for the load, which the host polls on its threads
//! ([`Relay`]).
//!
//! A loaded value is held until each of the plan's partitions has taken it,
//! then only by the partitions' streams: it is freed (its memory
//! reservations with it) when the last stream ends, even while the plan
//! lives on; a plan executed again loads again. A failure is kept for good.

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use datafusion::error::{DataFusionError, Result};
use datafusion::physical_plan::metrics::Count;
use std::future::Future;
use tokio::sync::{mpsc, watch};

use crate::error::{Panicked, data_error, panicked};

/// What waiters of one run of the load learn when it ends.
#[derive(Debug, Clone)]
enum Ended {
    /// Loaded (the value is in [`State::outcome`]), or failed: kept for
    /// the query.
    Finished(std::result::Result<(), Arc<DataFusionError>>),
    /// Stopped because nobody wanted it any more: not kept.
    Stopped,
}

#[derive(Debug)]
struct Run {
    stop: Arc<AtomicBool>,
    ended: watch::Receiver<Option<Ended>>,
    /// The work the load relays to its waiting partitions ([`Relay`]).
    jobs: Arc<Jobs>,
}

/// A piece of a load's work run by a partition waiting for it ([`Relay`]).
type Job = futures::future::BoxFuture<'static, ()>;

/// The jobs a load relayed, taken by one waiting partition at a time.
type Jobs = tokio::sync::Mutex<mpsc::UnboundedReceiver<Job>>;

/// Runs work of a load in the async context of the partition streams
/// waiting for it, rather than on the load's blocking thread.
///
/// The streams are polled by whoever runs the query: through
/// `datafusion-ffi`, the host (Python's `datafusion`) on its own threads,
/// inside its own Tokio runtime. A plan of the host's (a view of one of its
/// tables) must be executed there: its operators (a `RepartitionExec`)
/// start tasks on the Tokio runtime of the thread they run on, and on the
/// load's thread there is none of the host's, a panic that cannot unwind
/// through the FFI and aborts the process. The input's batches (the
/// input module's `InputBatches`) hand each
/// `execute` and each batch of such a plan to the load's relay
/// ([`relay`]); every partition waiting in [`SharedLoad::get`] serves the
/// relay, one at a time, while it waits.
#[derive(Debug, Clone)]
pub struct Relay {
    jobs: mpsc::UnboundedSender<Job>,
}

impl Relay {
    /// The output of the future `make` makes, run by a partition waiting
    /// for the load. Waits (checking the load's stop flags, [`checkpoint`])
    /// until a partition has run it; a future dropped before it ended (its
    /// partition's stream was dropped) is made again and sent again, for
    /// another partition. An error when the load is stopped or nobody
    /// serves the relay any more.
    pub fn run<T, F>(&self, mut make: impl FnMut() -> F) -> Result<T>
    where
        T: Send + 'static,
        F: Future<Output = T> + Send + 'static,
    {
        loop {
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            let job = make();
            let job: Job = Box::pin(async move {
                let _ = tx.send(job.await);
            });
            self.jobs.send(job).map_err(|_| relay_closed())?;
            loop {
                match rx.recv_timeout(RELAY_CHECK) {
                    Ok(out) => return Ok(out),
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => checkpoint()?,
                    // Dropped unfinished: made again and sent again.
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                }
            }
            checkpoint()?;
        }
    }
}

/// How often a load waiting for a relayed job checks whether it must stop.
const RELAY_CHECK: std::time::Duration = std::time::Duration::from_millis(20);

fn relay_closed() -> DataFusionError {
    DataFusionError::Execution(
        "input load stopped: no query stream is waiting for it any more".to_string(),
    )
}

/// Runs the jobs relayed to a load, while it runs (as one waiting
/// partition at a time); never returns.
async fn serve(jobs: &Jobs) -> std::convert::Infallible {
    let mut jobs = jobs.lock().await;
    while let Some(job) = jobs.recv().await {
        job.await;
    }
    drop(jobs);
    std::future::pending().await
}

/// What a finished load left for the partitions still to come.
#[derive(Debug)]
enum Kept<T> {
    /// The value: `held` until every partition has taken it, then only
    /// reachable through `shared` while a stream holds it.
    Value {
        held: Option<Arc<T>>,
        shared: Weak<T>,
        taken: usize,
    },
    /// The error, for every partition.
    Failed(Arc<DataFusionError>),
}

#[derive(Debug)]
struct State<T> {
    outcome: Option<Kept<T>>,
    running: Option<Run>,
    /// Live [`Interest`]s.
    interested: usize,
}

/// One query's load of a `T`, shared (see the module docs).
#[derive(Debug)]
pub struct SharedLoad<T> {
    state: Mutex<State<T>>,
    /// Partitions of the plan: the value is held until this many took it.
    partitions: usize,
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
    /// A load not yet started for a plan of `partitions` partitions,
    /// counting starts and stops in the given metrics.
    pub fn new(partitions: usize, started: Count, stopped: Count) -> Self {
        Self {
            partitions: partitions.max(1),
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

    /// The loaded value, when a load has succeeded and the value is alive.
    pub fn loaded(&self) -> Option<Arc<T>> {
        match &self.lock().outcome {
            Some(Kept::Value { held, shared, .. }) => held.clone().or_else(|| shared.upgrade()),
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
            let (mut ended, jobs) = {
                let mut state = self.lock();
                match &mut state.outcome {
                    Some(Kept::Failed(e)) => return Err(DataFusionError::Shared(Arc::clone(e))),
                    Some(Kept::Value {
                        held,
                        shared,
                        taken,
                    }) => {
                        if let Some(value) = held.clone().or_else(|| shared.upgrade()) {
                            *taken += 1;
                            if *taken >= self.partitions {
                                *held = None;
                            }
                            return Ok(value);
                        }
                        // Every partition took it and every stream has
                        // ended: the plan runs again, so load again.
                        state.outcome = None;
                    }
                    None => {}
                }
                match &state.running {
                    Some(run) => (run.ended.clone(), Arc::clone(&run.jobs)),
                    None => {
                        let (tx, rx) = watch::channel(None);
                        let stop = Arc::new(AtomicBool::new(false));
                        let (relay, jobs) = mpsc::unbounded_channel();
                        let jobs = Arc::new(tokio::sync::Mutex::new(jobs));
                        state.running = Some(Run {
                            stop: Arc::clone(&stop),
                            ended: rx.clone(),
                            jobs: Arc::clone(&jobs),
                        });
                        self.started.add(1);
                        let this = Arc::clone(self);
                        let work = make();
                        let relay = Relay { jobs: relay };
                        tokio::task::spawn_blocking(move || this.run(work, stop, relay, tx));
                        (rx, jobs)
                    }
                }
            };
            // Waits for the load, serving its relay meanwhile.
            let ended = tokio::select! {
                ended = ended.wait_for(Option::is_some) => ended.map(|e| e.clone()).ok().flatten(),
                never = serve(&jobs) => match never {},
            };
            match ended {
                Some(Ended::Finished(Err(e))) => return Err(DataFusionError::Shared(e)),
                // Taken from the kept value, so that this partition counts.
                Some(Ended::Finished(Ok(()))) | Some(Ended::Stopped) => continue,
                None => {
                    // The blocking task was dropped unrun (the runtime is
                    // shutting down): nothing to wait for any more.
                    self.lock().running = None;
                    return Err(DataFusionError::Execution(
                        "the input load ended without a result (runtime shutting down?)"
                            .to_string(),
                    ));
                }
            }
        }
    }

    /// Runs one load on this (blocking) thread, with `relay` as the
    /// thread's [`relay`], and publishes how it ended.
    fn run<W>(&self, work: W, stop: Arc<AtomicBool>, relay: Relay, tx: watch::Sender<Option<Ended>>)
    where
        W: FnOnce() -> Result<T>,
    {
        let result = with_relay(Some(relay), || {
            with_stop_flag(&stop, || {
                catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|panic| {
                    Err(data_error(panicked(
                        Panicked::Loading("the input"),
                        &*panic,
                    )))
                })
            })
        });
        let (ended, kept) = match result {
            Err(_) if stop.load(Ordering::Relaxed) => {
                self.stopped.add(1);
                (Ended::Stopped, None)
            }
            Err(e) => {
                let e = Arc::new(e);
                (Ended::Finished(Err(Arc::clone(&e))), Some(Kept::Failed(e)))
            }
            Ok(value) => {
                let value = Arc::new(value);
                let kept = Kept::Value {
                    shared: Arc::downgrade(&value),
                    held: Some(value),
                    taken: 0,
                };
                (Ended::Finished(Ok(())), Some(kept))
            }
        };
        {
            let mut state = self.lock();
            if kept.is_some() {
                state.outcome = kept;
            }
            state.running = None;
        }
        // Nobody may be waiting any more: fine.
        let _ = tx.send(Some(ended));
    }
}

thread_local! {
    /// The stop flags of the load running on this thread, if any: the
    /// load's own, then (on the threads of [`join`]) the flag the two
    /// halves share.
    static STOP: RefCell<Vec<Arc<AtomicBool>>> = const { RefCell::new(Vec::new()) };

    /// The relay of the load running on this thread, if any.
    static RELAY: RefCell<Option<Relay>> = const { RefCell::new(None) };
}

/// Runs `f` with `relay` as this thread's [`relay`].
fn with_relay<R>(relay: Option<Relay>, f: impl FnOnce() -> R) -> R {
    struct Reset(Option<Relay>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let previous = self.0.take();
            RELAY.with(|r| *r.borrow_mut() = previous);
        }
    }
    let _reset = Reset(RELAY.with(|r| std::mem::replace(&mut *r.borrow_mut(), relay)));
    f()
}

/// The [`Relay`] of the load running on this thread (`None` outside a
/// load): work to run in the async context of the streams waiting for it.
pub fn relay() -> Option<Relay> {
    RELAY.with(|r| r.borrow().clone())
}

/// Runs `f` with `flags` as this thread's stop flags (read by [`checkpoint`]).
fn with_stop_flags<R>(flags: Vec<Arc<AtomicBool>>, f: impl FnOnce() -> R) -> R {
    struct Reset(Vec<Arc<AtomicBool>>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let previous = std::mem::take(&mut self.0);
            STOP.with(|s| *s.borrow_mut() = previous);
        }
    }
    let _reset = Reset(STOP.with(|s| std::mem::replace(&mut *s.borrow_mut(), flags)));
    f()
}

/// Runs `f` with `flag` as this thread's stop flag (read by [`checkpoint`]).
fn with_stop_flag<R>(flag: &Arc<AtomicBool>, f: impl FnOnce() -> R) -> R {
    with_stop_flags(vec![Arc::clone(flag)], f)
}

/// Whether the load running on this thread has been asked to stop (false
/// outside a load, e.g. on a query's streams).
pub fn stop_requested() -> bool {
    STOP.with(|s| s.borrow().iter().any(|f| f.load(Ordering::Relaxed)))
}

/// The stop flag of the load running on this thread (`None` outside a
/// load), for work the load hands to other threads (rayon's).
pub fn stop_flag() -> Option<Arc<AtomicBool>> {
    STOP.with(|s| s.borrow().first().cloned())
}

/// An error when the load running on this thread has been asked to stop:
/// call it between the stages of a load and between the batches it reads.
pub fn checkpoint() -> Result<()> {
    if stop_requested() {
        return Err(DataFusionError::Execution(
            "input load stopped: the query was cancelled".to_string(),
        ));
    }
    Ok(())
}

/// Runs `a` on this thread and `b` at the same time on a thread of its own
/// (two inputs of one query read side by side), both under this thread's
/// stop flags and [`relay`], `b` inside this thread's Tokio runtime (when it is in one),
/// so that plans that start tasks when they are executed can. When one
/// fails, the other is asked to stop at its next [`checkpoint`], and the
/// first failure is returned; a panic in either is an error. Returns when
/// both have ended, so that nothing `b` holds outlives the call. When no
/// thread can be started, `b` runs after `a` here (not at all if `a`
/// failed).
pub fn join<A, B>(
    a: impl FnOnce() -> Result<A>,
    b: impl FnOnce() -> Result<B> + Send,
) -> Result<(A, B)>
where
    B: Send,
{
    // Set by the first of the two to fail: the other stops.
    let failed = Arc::new(AtomicBool::new(false));
    let mut flags = STOP.with(|s| s.borrow().clone());
    flags.push(Arc::clone(&failed));
    let runtime = tokio::runtime::Handle::try_current().ok();
    let b_flags = flags.clone();
    let b_relay = relay();
    let run_b = move || {
        let _runtime = runtime.as_ref().map(|r| r.enter());
        with_relay(b_relay, || guarded(b_flags, b))
    };
    // `b` is kept in a slot it is taken from, so that it can still run
    // here when the thread cannot be started.
    let slot = Mutex::new(Some(run_b));
    let take = || slot.lock().unwrap_or_else(|e| e.into_inner()).take();
    let ((a, a_first), (b, _)) = std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("kendall-load".to_string())
            .spawn_scoped(scope, || take().map(|run| settle(&failed, run())));
        let a = settle(&failed, guarded(flags, a));
        let b = match spawned {
            Ok(handle) => handle.join().ok().flatten(),
            Err(_) => None,
        };
        let b = b.unwrap_or_else(|| match take() {
            Some(run) if !failed.load(Ordering::Relaxed) => settle(&failed, run()),
            _ => settle(
                &failed,
                Err(DataFusionError::Execution(
                    "loading an input ended without a result".to_string(),
                )),
            ),
        });
        (a, b)
    });
    match (a, b) {
        (Ok(a), Ok(b)) => Ok((a, b)),
        (Err(e), Ok(_)) | (Ok(_), Err(e)) => Err(e),
        (Err(a), Err(b)) => Err(if a_first { a } else { b }),
    }
}

/// `f` under the stop flags `flags`, a panic in it an error.
fn guarded<T>(flags: Vec<Arc<AtomicBool>>, f: impl FnOnce() -> Result<T>) -> Result<T> {
    with_stop_flags(flags, || {
        catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
            Err(data_error(panicked(Panicked::Loading("an input"), &*panic)))
        })
    })
}

/// `result`, and whether it is the first failure of a [`join`] (`failed`
/// set by this call: the other half is then asked to stop).
fn settle<T>(failed: &AtomicBool, result: Result<T>) -> (Result<T>, bool) {
    let first = result.is_err()
        && failed
            .compare_exchange(false, true, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
    (result, first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn counted(
        builds: &Arc<AtomicUsize>,
        value: Result<u8>,
    ) -> impl Fn() -> Box<dyn FnOnce() -> Result<u8> + Send> {
        let builds = Arc::clone(builds);
        let value = value.map_err(|e| e.to_string());
        move || {
            let (builds, value) = (Arc::clone(&builds), value.clone());
            Box::new(move || {
                builds.fetch_add(1, Ordering::Relaxed);
                value.map_err(DataFusionError::Execution)
            })
        }
    }

    #[tokio::test]
    async fn a_value_is_freed_with_the_last_stream_and_an_error_kept() {
        let load = Arc::new(SharedLoad::new(2, Count::new(), Count::new()));
        let builds = Arc::new(AtomicUsize::new(0));
        let make = counted(&builds, Ok(7));
        let (i1, i2) = (load.interest(), load.interest());
        let a = load.get(&i1, &make).await.unwrap();
        let b = load.get(&i2, &make).await.unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(builds.load(Ordering::Relaxed), 1);
        drop(a);
        assert!(load.loaded().is_some(), "partition 2 still holds it");
        drop(b);
        assert!(load.loaded().is_none(), "freed with the last stream");
        // The plan executed again: loaded again.
        let i3 = load.interest();
        assert_eq!(*load.get(&i3, &make).await.unwrap(), 7);
        assert_eq!(builds.load(Ordering::Relaxed), 2);

        let failing = Arc::new(SharedLoad::new(3, Count::new(), Count::new()));
        let builds = Arc::new(AtomicUsize::new(0));
        let make = counted(&builds, Err(DataFusionError::Execution("bad row".into())));
        for _ in 0..3 {
            let interest = failing.interest();
            let err = failing.get(&interest, &make).await.unwrap_err();
            assert!(err.to_string().contains("bad row"), "{err}");
        }
        assert_eq!(builds.load(Ordering::Relaxed), 1, "the error is kept");
    }

    /// Waits (checking the stop flags) until this half is asked to stop;
    /// fails the test after 10 s.
    fn until_stopped() -> Result<u8> {
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_secs(10) {
            checkpoint()?;
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        panic!("never asked to stop");
    }

    tokio::task_local! {
        /// Set only in the task of the partition waiting for the load.
        static WAITING: u8;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn relayed_work_runs_in_the_waiting_partitions_task() {
        let load = Arc::new(SharedLoad::new(1, Count::new(), Count::new()));
        let make = || {
            || -> Result<(Option<u8>, Option<u8>)> {
                let here = WAITING.try_with(|w| *w).ok();
                let here_relay = relay().expect("a load has a relay");
                // Both halves of a join relay to the same partitions.
                let (a, b) = join(
                    || here_relay.run(|| async { WAITING.try_with(|w| *w).ok() }),
                    || {
                        relay()
                            .expect("the other half too")
                            .run(|| async { WAITING.try_with(|w| *w).ok() })
                    },
                )?;
                assert_eq!(a, b);
                Ok((here, a))
            }
        };
        let interest = load.interest();
        let got = WAITING.scope(7, load.get(&interest, make)).await.unwrap();
        assert_eq!(
            *got,
            (None, Some(7)),
            "on the load's thread, then in the task"
        );
        assert!(relay().is_none(), "no relay outside a load");
    }

    #[test]
    fn join_runs_both_halves_and_reports_the_first_failure() {
        let both = join(|| Ok(1u8), || Ok("two")).unwrap();
        assert_eq!(both, (1, "two"));
        // The second half runs on a thread of its own.
        let here = std::thread::current().id();
        let (_, there) = join(|| Ok(()), || Ok(std::thread::current().id())).unwrap();
        assert_ne!(here, there);

        // One half fails: the other is stopped, and the failure reported.
        let err = join(until_stopped, || -> Result<u8> {
            Err(DataFusionError::Execution("bad right row".into()))
        })
        .unwrap_err();
        assert!(err.to_string().contains("bad right row"), "{err}");
        let err = join(
            || -> Result<u8> { Err(DataFusionError::Execution("bad left row".into())) },
            until_stopped,
        )
        .unwrap_err();
        assert!(err.to_string().contains("bad left row"), "{err}");

        // A panic in either half is an error, and stops the other.
        let err = join(|| Ok(1u8), || -> Result<u8> { panic!("torn file") }).unwrap_err();
        assert!(err.to_string().contains("torn file"), "{err}");
        let err = join(|| -> Result<u8> { panic!("torn left file") }, until_stopped).unwrap_err();
        assert!(err.to_string().contains("torn left file"), "{err}");

        // The second half runs inside this thread's runtime, if any.
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let inside = runtime.block_on(async {
            tokio::task::spawn_blocking(|| {
                join(
                    || Ok(()),
                    || Ok(tokio::runtime::Handle::try_current().is_ok()),
                )
            })
            .await
            .unwrap()
        });
        assert!(inside.unwrap().1);
    }

    #[test]
    fn join_passes_the_load_stop_flag_to_both_halves() {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let err = with_stop_flag(&stop, || {
            join(
                || {
                    // This thread's flag is the load's own.
                    assert!(Arc::ptr_eq(&stop_flag().unwrap(), &flag));
                    flag.store(true, Ordering::Relaxed);
                    until_stopped()
                },
                until_stopped,
            )
        })
        .unwrap_err();
        assert!(err.to_string().contains("cancelled"), "{err}");
        // Outside, nothing is left of the flags.
        assert!(stop_flag().is_none() && !stop_requested());
    }
}
