//! A memory budget for one piece of work on one thread: [`Budgeted`], a global allocator that
//! wraps another, counts the bytes a thread holds while [`with_limit`] runs on it, and stops
//! the thread for good when an allocation would take it past its limit.
//!
//! This bounds what a chat template can build where nothing else can: minijinja copies some
//! values (a list concatenated more than 32 levels deep, tuples added together) without asking
//! its fuel, and a template that doubles one in a loop would otherwise ask for billions of
//! items and abort the process. An allocator may neither fail such an allocation (the standard
//! library aborts on a null) nor unwind, so the thread over its limit never returns from the
//! allocation: it calls the limit's [`Overrun`] (which tells whoever waits for the work) and
//! sleeps forever, keeping what it holds (at most the limit). Only threads made for the
//! purpose run with a limit ([`super::render_thread`]): nothing another thread needs may be
//! locked by them while they allocate.
//!
//! The binary installs [`Budgeted`] (`src/main.rs`); without it (the library used alone, unit
//! tests) nothing is counted and [`installed`] says so.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::OnceLock;
use std::time::Duration;

/// The global allocator `A`, counting the bytes of threads that run with a limit.
pub struct Budgeted<A>(A);

impl<A> Budgeted<A> {
    /// `inner`, counted.
    pub const fn new(inner: A) -> Budgeted<A> {
        Budgeted(inner)
    }
}

/// What a thread over its limit calls before it stops: `call(data)`. It must not allocate.
#[derive(Clone, Copy)]
pub struct Overrun {
    /// The function called.
    pub call: fn(*const ()),
    /// Its argument, valid for as long as the thread may run.
    pub data: *const (),
}

thread_local! {
    /// The limit of this thread's work, in bytes; 0 when none is set.
    static LIMIT: Cell<usize> = const { Cell::new(0) };
    /// The bytes allocated less the bytes freed on this thread since its limit was set (frees
    /// of what was allocated before count too: at most what the work was given).
    static HELD: Cell<isize> = const { Cell::new(0) };
    /// What to call when the limit is passed.
    static OVERRUN: Cell<Option<Overrun>> = const { Cell::new(None) };
}

/// Runs `f` on this thread with a limit of `limit` bytes held at once (at least 1). Past it, the
/// allocation that would pass it calls `overrun` and never returns: neither does `f`.
pub fn with_limit<T>(limit: usize, overrun: Overrun, f: impl FnOnce() -> T) -> T {
    OVERRUN.set(Some(overrun));
    HELD.set(0);
    LIMIT.set(limit.max(1));
    let out = f();
    LIMIT.set(0);
    OVERRUN.set(None);
    out
}

/// True when the process's global allocator is [`Budgeted`] (so [`with_limit`] holds).
pub fn installed() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        let nothing = Overrun {
            call: |_| {},
            data: std::ptr::null(),
        };
        with_limit(usize::MAX, nothing, || {
            let probe = std::hint::black_box(Box::new([0u8; 64]));
            let held = HELD.get();
            drop(probe);
            held >= 64
        })
    })
}

/// Counts `size` more bytes held on this thread, when it has a limit; stops it past the limit.
#[inline]
fn grow(size: usize) {
    let limit = LIMIT.get();
    if limit == 0 {
        return;
    }
    let held = HELD.get().saturating_add_unsigned(size);
    if held > 0 && held as usize > limit && !std::thread::panicking() {
        stop();
    }
    HELD.set(held);
}

/// Counts `size` bytes fewer held on this thread, when it has a limit.
#[inline]
fn shrink(size: usize) {
    if LIMIT.get() != 0 {
        HELD.set(HELD.get().saturating_sub_unsigned(size));
    }
}

/// The thread is over its limit: tells its [`Overrun`], then sleeps forever. It holds no lock
/// of the inner allocator (it has not been called), and allocates nothing more.
#[cold]
#[inline(never)]
fn stop() -> ! {
    LIMIT.set(0);
    if let Some(o) = OVERRUN.take() {
        (o.call)(o.data);
    }
    loop {
        std::thread::sleep(Duration::from_secs(1 << 20));
    }
}

// SAFETY: every call is passed on to `A` unchanged; the counting around it touches only
// constant-initialized thread-locals without destructors (no allocation, usable at any time).
unsafe impl<A: GlobalAlloc> GlobalAlloc for Budgeted<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grow(layout.size());
        self.0.alloc(layout)
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grow(layout.size());
        self.0.alloc_zeroed(layout)
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        shrink(layout.size());
        self.0.dealloc(ptr, layout)
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            grow(new_size - layout.size());
        } else {
            shrink(layout.size() - new_size);
        }
        self.0.realloc(ptr, layout, new_size)
    }
}
