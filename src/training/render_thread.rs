//! Work run on a thread of its own with a memory limit ([`super::memory`]): each thread that
//! asks ([`run`]) gets a render thread, reached through a channel, and waits for its answer. A
//! render thread that passes its limit stops for good ([`super::memory::with_limit`]); the
//! thread that waited gets [`Refused::OverBudget`] and starts a fresh render thread the next
//! time. A stopped thread keeps what it held (at most its limit), so at most
//! [`MAX_STOPPED`] may stop in one process: past that, [`run`] refuses every piece of work
//! ([`Refused::TooManyStopped`]).
//!
//! The work is `'static`: a stopped thread never drops what it was given, and holds no
//! reference into the caller's data. What it may lock while it allocates is its own: the
//! chat template's rendering touches no lock another thread takes (minijinja's environment
//! has no loader, and a namespace's lock belongs to the rendering that made it).
//!
//! Without [`super::memory::Budgeted`] installed as the global allocator, [`run`] runs the
//! work in place: there is nothing to bound it with.

use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, Thread};

use super::memory::{self, Overrun};

/// How many render threads may stop over their limits in one process (each other thread
/// rendering at that moment may stop one more before it sees the count).
pub const MAX_STOPPED: usize = 8;

/// The stack of a render thread: a template nests macro calls and loops up to minijinja's
/// limits (500 calls deep).
const STACK: usize = 16 << 20;

/// Why [`run`] gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The work held more than its limit of bytes at once.
    OverBudget(usize),
    /// [`MAX_STOPPED`] render threads already stopped over their limits.
    TooManyStopped,
    /// No render thread could be started (what the system said).
    NoThread(String),
}

/// Render threads stopped over their limits so far.
static STOPPED: AtomicUsize = AtomicUsize::new(0);

/// The work is running.
const RUNNING: u8 = 0;
/// The work is done; its answer is in the slot.
const DONE: u8 = 1;
/// The render thread passed its limit and stopped.
const OVER: u8 = 2;

/// What a render thread and the thread waiting for it share.
struct Shared {
    state: AtomicU8,
    /// The thread that waits.
    waiter: Thread,
}

/// A piece of work and its limit.
struct Job {
    limit: usize,
    work: Box<dyn FnOnce() + Send>,
}

/// The render thread of the thread that owns it.
struct RenderThread {
    jobs: Sender<Job>,
    shared: Arc<Shared>,
}

thread_local! {
    /// This thread's render thread, once it has one.
    static MINE: RefCell<Option<RenderThread>> = const { RefCell::new(None) };
}

/// Runs `work` on this thread's render thread, holding at most `limit` bytes at once, and
/// returns its answer. A panic in `work` is resumed here.
pub fn run<T: Send + 'static>(
    limit: usize,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Refused> {
    if !memory::installed() {
        return Ok(work());
    }
    if STOPPED.load(Ordering::Relaxed) >= MAX_STOPPED {
        return Err(Refused::TooManyStopped);
    }
    MINE.with_borrow_mut(|mine| {
        let r = match mine {
            Some(r) => r,
            None => {
                mine.insert(RenderThread::start().map_err(|e| Refused::NoThread(e.to_string()))?)
            }
        };
        match r.run(limit, work) {
            Some(answer) => Ok(answer),
            None => {
                // Stopped (or gone): the next piece of work gets a fresh thread.
                *mine = None;
                STOPPED.fetch_add(1, Ordering::Relaxed);
                Err(Refused::OverBudget(limit))
            }
        }
    })
    .map(|answer: thread::Result<T>| answer.unwrap_or_else(|p| panic::resume_unwind(p)))
}

impl RenderThread {
    fn start() -> std::io::Result<RenderThread> {
        let shared = Arc::new(Shared {
            state: AtomicU8::new(DONE),
            waiter: thread::current(),
        });
        let (jobs, inbox) = mpsc::channel();
        let theirs = Arc::clone(&shared);
        thread::Builder::new()
            .name("trajkit-render".into())
            .stack_size(STACK)
            .spawn(move || serve(&inbox, &theirs))?;
        Ok(RenderThread { jobs, shared })
    }

    /// The answer of `work` (or its panic), or `None` when the thread stopped over its limit
    /// (or is gone).
    fn run<T: Send + 'static>(
        &self,
        limit: usize,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Option<thread::Result<T>> {
        let slot = Arc::new(Mutex::new(None));
        let theirs = Arc::clone(&slot);
        let work = Box::new(move || {
            let answer = panic::catch_unwind(AssertUnwindSafe(work));
            *theirs.lock().unwrap_or_else(PoisonError::into_inner) = Some(answer);
        });
        self.shared.state.store(RUNNING, Ordering::Release);
        self.jobs.send(Job { limit, work }).ok()?;
        loop {
            match self.shared.state.load(Ordering::Acquire) {
                DONE => return slot.lock().unwrap_or_else(PoisonError::into_inner).take(),
                OVER => return None,
                _ => thread::park(),
            }
        }
    }
}

/// A render thread: each job with its limit, until its owner is gone.
fn serve(inbox: &Receiver<Job>, shared: &Arc<Shared>) {
    let overrun = Overrun {
        call: over,
        data: Arc::as_ptr(shared).cast(),
    };
    while let Ok(job) = inbox.recv() {
        memory::with_limit(job.limit, overrun, job.work);
        shared.state.store(DONE, Ordering::Release);
        shared.waiter.unpark();
    }
}

/// The [`Overrun`] of a render thread: tells the waiting thread (allocating nothing).
fn over(data: *const ()) {
    // SAFETY: `data` is the `Shared` of `serve`, whose `Arc` the stopping thread holds forever.
    let shared = unsafe { &*data.cast::<Shared>() };
    shared.state.store(OVER, Ordering::Release);
    shared.waiter.unpark();
}
