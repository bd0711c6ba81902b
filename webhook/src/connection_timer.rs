//! The timer hyper's connections run on: the header-read deadline (`--header-read-timeout`,
//! which also ends idle keep-alive connections) and HTTP/2 keep-alive pings.
//!
//! Why not hyper-util's `TokioTimer`: hyper (1.x, `proto/h1/conn.rs`, `poll_read_head`) starts
//! a new header-read sleep every time a keep-alive connection waits for its next request, and
//! drops it when the head has arrived. On tokio's timer every such sleep is inserted into the
//! runtime's timer wheel, and when the worker parked on the I/O driver has no earlier timer, the
//! insertion wakes it (an eventfd write, a thread woken on the other core). Under load the
//! webhook made 0.124-0.152 `write` calls per request on tokio's timer and 0.055-0.094 on this
//! one, the parse floor 0.040-0.045 (`scripts/webhook-syscalls.sh`; webhook/README.md,
//! "Performance notes").
//!
//! Here starting a sleep takes a slot in the current thread's list (no allocation once the list
//! has grown, no count shared by the cores) and dropping it frees the slot. One thread sweeps the lists every
//! [`GRANULARITY`] while sleeps are being started or wait, waking the ones whose deadline has
//! passed; when a sweep finds nothing waiting and nothing started since the last, it waits
//! until a sleep is started, so an idle server wakes for nothing. A sleep therefore never ends
//! before its deadline and ends at most [`GRANULARITY`] after it, far finer than the timeouts
//! it serves (seconds).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use hyper::rt::{Sleep, Timer};

use crate::per_thread::Sharded;

/// How often the sweeping thread looks, while anything waits: the most a sleep can end late.
pub const GRANULARITY: Duration = Duration::from_millis(100);

/// A [`Timer`] for hyper's connection builders. Clones share one sweeping thread. When the
/// last clone is dropped (the server has stopped) the thread ends and whatever still waits is
/// woken, so that nothing waits forever.
#[derive(Clone)]
pub struct ConnectionTimer {
    handle: std::sync::Arc<Handle>,
}

/// Closes the timer when the last [`ConnectionTimer`] goes. The lists themselves live as long
/// as the process (a few kilobytes per server started), so a sleep refers to them without a
/// reference count that every request would change.
struct Handle {
    timers: &'static Timers,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.timers.close();
    }
}

impl ConnectionTimer {
    /// Starts the sweeping thread.
    pub fn start() -> std::io::Result<Self> {
        let timers: &'static Timers = Box::leak(Box::new(Timers::new()));
        std::thread::Builder::new()
            .name("connection-timer".into())
            .spawn(move || timers.run())?;
        Ok(ConnectionTimer {
            handle: std::sync::Arc::new(Handle { timers }),
        })
    }
}

impl Timer for ConnectionTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Sleep>> {
        // A duration too long to add never ends, as tokio's `sleep` treats it (about 30 years).
        let deadline = Instant::now()
            .checked_add(duration)
            .unwrap_or_else(far_future);
        self.sleep_until(deadline)
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn Sleep>> {
        Box::pin(ConnectionSleep {
            deadline,
            slot: None,
            timers: self.handle.timers,
        })
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn Sleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<ConnectionSleep>() {
            Some(sleep) => sleep.get_mut().reset(new_deadline),
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86400 * 365 * 30)
}

/// One sleep. Nothing is registered until it is first polled (hyper creates sleeps it may never
/// poll); from then until it is dropped or reset it holds a slot.
pub struct ConnectionSleep {
    deadline: Instant,
    slot: Option<SlotId>,
    timers: &'static Timers,
}

impl ConnectionSleep {
    fn reset(&mut self, deadline: Instant) {
        // The new deadline takes a slot when polled, as a new sleep would.
        self.release();
        self.deadline = deadline;
    }

    fn release(&mut self) {
        if let Some(id) = self.slot.take() {
            self.timers.free(id);
        }
    }
}

impl Drop for ConnectionSleep {
    fn drop(&mut self) {
        self.release();
    }
}

impl Future for ConnectionSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if let Some(id) = this.slot {
            return this.timers.poll(id, cx);
        }
        if Instant::now() >= this.deadline {
            return Poll::Ready(());
        }
        let id = this.timers.take_slot(this.deadline, cx.waker());
        this.slot = Some(id);
        if this.timers.closed.load(Ordering::SeqCst) {
            // Closed while the slot was taken: the close may have passed this list already.
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

impl Sleep for ConnectionSleep {}

#[derive(Clone, Copy, Debug, PartialEq)]
struct SlotId {
    shard: u16,
    index: u32,
}

#[derive(Clone, Copy, PartialEq)]
enum SlotState {
    Free,
    Waiting,
    Fired,
}

struct Slot {
    deadline: Instant,
    waker: Option<Waker>,
    state: SlotState,
}

#[derive(Default)]
struct Slots {
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// A slot was taken since the last sweep: keeps the sweeper from going idle while sleeps
    /// come and go between its looks.
    taken_since_sweep: bool,
}

struct Timers {
    /// One list per thread; a sleep moved to another thread still frees its slot in the list
    /// it took it from.
    shards: Sharded<Mutex<Slots>>,
    closed: AtomicBool,
    /// Held by the sweeper between looks; the condition variable wakes it early.
    sweeper: Mutex<()>,
    /// Set by the sweeper, under `sweeper`, before it waits for the next sleep: the sleep that
    /// sees it clears it and wakes the sweeper. Read whenever a slot is taken, written only on
    /// those transitions, so it stays in every core's cache.
    idle: AtomicBool,
    wake: Condvar,
}

impl Timers {
    fn new() -> Self {
        Timers {
            shards: Sharded::default(),
            closed: AtomicBool::new(false),
            sweeper: Mutex::new(()),
            idle: AtomicBool::new(false),
            wake: Condvar::new(),
        }
    }

    fn take_slot(&self, deadline: Instant, waker: &Waker) -> SlotId {
        let shard = self.shards.index();
        let slot = Slot {
            deadline,
            waker: Some(waker.clone()),
            state: SlotState::Waiting,
        };
        let index = {
            let mut slots = lock(self.shards.get(shard));
            slots.taken_since_sweep = true;
            match slots.free.pop() {
                Some(index) => {
                    slots.slots[index as usize] = slot;
                    index
                }
                None => {
                    slots.slots.push(slot);
                    // More slots than u32 can count would be more sleeps than memory holds.
                    u32::try_from(slots.slots.len() - 1).unwrap_or(u32::MAX)
                }
            }
        };
        // After the slot is visible (the list's lock released): either the sweeper's last look
        // saw it, or it had set `idle` before looking and we see that here.
        if self.idle.load(Ordering::SeqCst) {
            let _sweeper = lock(&self.sweeper);
            self.idle.store(false, Ordering::SeqCst);
            self.wake.notify_one();
        }
        SlotId {
            shard: shard as u16,
            index,
        }
    }

    fn poll(&self, id: SlotId, cx: &mut Context<'_>) -> Poll<()> {
        let mut slots = lock(self.shards.get(usize::from(id.shard)));
        let slot = &mut slots.slots[id.index as usize];
        match slot.state {
            SlotState::Waiting => {
                match &mut slot.waker {
                    Some(waker) if waker.will_wake(cx.waker()) => {}
                    other => *other = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
            SlotState::Fired | SlotState::Free => Poll::Ready(()),
        }
    }

    fn free(&self, id: SlotId) {
        let waker = {
            let mut slots = lock(self.shards.get(usize::from(id.shard)));
            let slot = &mut slots.slots[id.index as usize];
            slot.state = SlotState::Free;
            let waker = slot.waker.take();
            slots.free.push(id.index);
            waker
        };
        drop(waker);
    }

    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.fire(|_| true);
        let _sweeper = lock(&self.sweeper);
        self.wake.notify_one();
    }

    /// Fires the waiting slots `due` picks, and says how many still wait and whether a slot
    /// was taken since the last sweep.
    fn fire(&self, due: impl Fn(Instant) -> bool) -> (usize, bool) {
        let mut waiting = 0;
        let mut taken = false;
        let mut wakers = Vec::new();
        for shard in self.shards.iter() {
            let mut slots = lock(shard);
            taken |= std::mem::take(&mut slots.taken_since_sweep);
            for slot in slots.slots.iter_mut() {
                if slot.state != SlotState::Waiting {
                    continue;
                }
                if due(slot.deadline) {
                    slot.state = SlotState::Fired;
                    wakers.extend(slot.waker.take());
                } else {
                    waiting += 1;
                }
            }
        }
        // Woken outside the locks: a waker may run code that starts another sleep.
        for waker in wakers {
            waker.wake();
        }
        (waiting, taken)
    }

    fn sweep(&self, now: Instant) -> (usize, bool) {
        self.fire(|deadline| deadline <= now)
    }

    /// Whether any list has a waiting slot or a slot taken since the last sweep.
    fn busy(&self) -> bool {
        self.shards.iter().any(|shard| {
            let slots = lock(shard);
            slots.taken_since_sweep || slots.slots.iter().any(|s| s.state == SlotState::Waiting)
        })
    }

    /// The sweeping thread.
    fn run(&self) {
        loop {
            let (waiting, taken) = self.sweep(Instant::now());
            let guard = lock(&self.sweeper);
            if self.closed.load(Ordering::SeqCst) {
                return;
            }
            if waiting == 0 && !taken {
                self.idle.store(true, Ordering::SeqCst);
                if !self.busy() {
                    let guard = self
                        .wake
                        .wait_while(guard, |_| {
                            self.idle.load(Ordering::SeqCst) && !self.closed.load(Ordering::SeqCst)
                        })
                        .unwrap_or_else(PoisonError::into_inner);
                    drop(guard);
                    continue;
                }
                self.idle.store(false, Ordering::SeqCst);
            }
            let (guard, _) = self
                .wake
                .wait_timeout_while(guard, GRANULARITY, |_| !self.closed.load(Ordering::SeqCst))
                .unwrap_or_else(PoisonError::into_inner);
            drop(guard);
        }
    }
}

/// The locks here guard plain lists; a panic elsewhere cannot leave them half changed, so a
/// poisoned lock is used as it is.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::per_thread::SHARDS;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    /// Polls a sleep with a waker that counts its wakes.
    struct Probe {
        wakes: Arc<AtomicUsize>,
        waker: Waker,
    }

    impl Probe {
        fn new() -> Self {
            struct Count(Arc<AtomicUsize>);
            impl std::task::Wake for Count {
                fn wake(self: Arc<Self>) {
                    self.0.fetch_add(1, Ordering::SeqCst);
                }
            }
            let wakes = Arc::new(AtomicUsize::new(0));
            let waker = Waker::from(Arc::new(Count(Arc::clone(&wakes))));
            Probe { wakes, waker }
        }

        fn poll(&self, sleep: &mut Pin<Box<dyn Sleep>>) -> Poll<()> {
            sleep.as_mut().poll(&mut Context::from_waker(&self.waker))
        }

        fn wakes(&self) -> usize {
            self.wakes.load(Ordering::SeqCst)
        }
    }

    /// A timer whose sweeps the test makes, at instants it chooses: no thread, no real waiting.
    fn unswept() -> (ConnectionTimer, &'static Timers) {
        let timers: &'static Timers = Box::leak(Box::new(Timers::new()));
        let timer = ConnectionTimer {
            handle: Arc::new(Handle { timers }),
        };
        (timer, timers)
    }

    /// Waiting slots, counted without sweeping.
    fn waiting(timers: &Timers) -> usize {
        let slots = timers.shards.iter().map(|shard| {
            let slots = lock(shard);
            slots
                .slots
                .iter()
                .filter(|s| s.state == SlotState::Waiting)
                .count()
        });
        slots.sum()
    }

    #[test]
    fn a_sleep_ends_at_the_first_sweep_at_or_after_its_deadline_and_not_before() {
        let (timer, timers) = unswept();
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut sleep = timer.sleep_until(deadline);
        let probe = Probe::new();
        assert!(probe.poll(&mut sleep).is_pending());
        assert_eq!(timers.sweep(deadline - Duration::from_nanos(1)), (1, true));
        assert_eq!(probe.wakes(), 0);
        assert!(probe.poll(&mut sleep).is_pending());
        assert_eq!(timers.sweep(deadline), (0, false));
        assert_eq!(probe.wakes(), 1);
        assert!(probe.poll(&mut sleep).is_ready());
    }

    #[test]
    fn nothing_is_registered_until_polled_and_a_past_deadline_is_ready_at_once() {
        let (timer, timers) = unswept();
        let _never_polled = timer.sleep(Duration::from_secs(60));
        let mut past = timer.sleep_until(Instant::now());
        assert!(Probe::new().poll(&mut past).is_ready());
        assert!(!timers.busy());
    }

    #[test]
    fn a_dropped_sleep_frees_its_slot_for_the_next_and_is_never_woken() {
        let (timer, timers) = unswept();
        let probe = Probe::new();
        let mut sleep = timer.sleep(Duration::from_secs(60));
        assert!(probe.poll(&mut sleep).is_pending());
        assert_eq!(waiting(timers), 1);
        drop(sleep);
        assert_eq!(waiting(timers), 0);
        assert_eq!(timers.sweep(far_future()), (0, true));
        assert_eq!(probe.wakes(), 0);

        // A thousand sleeps one after another, as one keep-alive connection's requests: one
        // slot, reused.
        for _ in 0..1000 {
            let mut sleep = timer.sleep(Duration::from_secs(60));
            assert!(probe.poll(&mut sleep).is_pending());
        }
        let lengths: usize = timers.shards.iter().map(|s| lock(s).slots.len()).sum();
        assert_eq!(lengths, 1);
        assert!(timers.busy(), "a slot was taken since the last sweep");
        assert_eq!(timers.sweep(Instant::now()), (0, true));
        assert!(!timers.busy());
    }

    #[test]
    fn reset_moves_the_deadline_either_way() {
        let (timer, timers) = unswept();
        let probe = Probe::new();
        let start = Instant::now();
        let mut sleep = timer.sleep_until(start + Duration::from_secs(60));
        assert!(probe.poll(&mut sleep).is_pending());

        // Later: the first deadline passes without ending it.
        timer.reset(&mut sleep, start + Duration::from_secs(120));
        assert!(probe.poll(&mut sleep).is_pending());
        assert_eq!(timers.sweep(start + Duration::from_secs(90)).0, 1);
        assert!(probe.poll(&mut sleep).is_pending());

        // Earlier: it ends at the new deadline.
        timer.reset(&mut sleep, start + Duration::from_secs(100));
        assert!(probe.poll(&mut sleep).is_pending());
        assert_eq!(waiting(timers), 1);
        timers.sweep(start + Duration::from_secs(100));
        assert!(probe.poll(&mut sleep).is_ready());
        assert_eq!(probe.wakes(), 1);
    }

    #[test]
    fn the_latest_waker_is_the_one_woken() {
        let (timer, timers) = unswept();
        let (first, second) = (Probe::new(), Probe::new());
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut sleep = timer.sleep_until(deadline);
        assert!(first.poll(&mut sleep).is_pending());
        assert!(second.poll(&mut sleep).is_pending());
        timers.sweep(deadline);
        assert_eq!((first.wakes(), second.wakes()), (0, 1));
    }

    #[test]
    fn sleeps_started_on_many_threads_are_swept_and_freed_from_any_thread() {
        let (timer, timers) = unswept();
        let deadline = Instant::now() + Duration::from_secs(60);
        let probes: Vec<Probe> = (0..SHARDS + 3).map(|_| Probe::new()).collect();
        let mut sleeps: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = probes
                .iter()
                .map(|probe| {
                    let timer = timer.clone();
                    scope.spawn(move || {
                        let mut sleep = timer.sleep_until(deadline);
                        assert!(probe.poll(&mut sleep).is_pending());
                        sleep
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(
            timers.sweep(deadline - Duration::from_nanos(1)).0,
            SHARDS + 3
        );
        // Three dropped here, on this thread, not the ones that took the slots.
        sleeps.truncate(SHARDS);
        assert_eq!(timers.sweep(deadline), (0, false));
        assert!(probes[..SHARDS].iter().all(|p| p.wakes() == 1));
        assert!(probes[SHARDS..].iter().all(|p| p.wakes() == 0));
    }

    #[test]
    fn closing_wakes_every_waiting_sleep_and_ends_those_started_after() {
        let (timer, timers) = unswept();
        let probe = Probe::new();
        let mut waiting_sleep = timer.sleep(Duration::from_secs(3600));
        assert!(probe.poll(&mut waiting_sleep).is_pending());
        let clone = timer.clone();
        drop(timer);
        assert_eq!(probe.wakes(), 0, "a clone still holds the timer open");
        let mut late = clone.sleep(Duration::from_secs(3600));
        drop(clone);
        assert_eq!(probe.wakes(), 1);
        assert!(probe.poll(&mut waiting_sleep).is_ready());
        assert!(probe.poll(&mut late).is_ready());
        assert!(timers.closed.load(Ordering::SeqCst));
    }

    /// The sweeping thread, for real: sleeps end, not before their deadline, also after the
    /// thread found nothing to do and waited for the next sleep; closing ends the thread.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_sweeping_thread_ends_sleeps_after_idling() {
        let timer = ConnectionTimer::start().unwrap();
        let timers = timer.handle.timers;
        // A bound only so that a broken timer fails instead of hanging the test.
        let bound = Duration::from_secs(30);
        for _ in 0..2 {
            let started = Instant::now();
            let sleeps: Vec<_> = (0..50)
                .map(|i| timer.sleep(Duration::from_millis(150 + i)))
                .collect();
            let ended = tokio::time::timeout(bound, all(sleeps)).await;
            assert!(ended.is_ok(), "a sleep did not end");
            assert!(started.elapsed() >= Duration::from_millis(199));
            // Nothing waits: the thread goes idle, and the next round's first sleep must wake
            // it.
            let idle = tokio::time::timeout(bound, async {
                while !timers.idle.load(Ordering::SeqCst) {
                    tokio::task::yield_now().await;
                }
            })
            .await;
            assert!(idle.is_ok(), "the sweeper never went idle");
        }
    }

    async fn all(sleeps: Vec<Pin<Box<dyn Sleep>>>) {
        for sleep in sleeps {
            sleep.await;
        }
    }
}
