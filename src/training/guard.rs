//! Calls into libraries that a user's file can make panic (the `tokenizers` library on some
//! tokenizer files, the template engine): [`call`] turns a panic into an error carrying its
//! message and place, so that the record is rejected with a reason and the run goes on.
//!
//! This relies on panics unwinding, Rust's default, which trajkit's profiles keep (no
//! `panic = "abort"` in Cargo.toml). While a guarded call runs, the process's panic hook
//! stays quiet for panics on that thread: the message goes into the error, not to stderr.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// Guarded calls running on this thread.
    static GUARDED: Cell<usize> = const { Cell::new(0) };
    /// Where the last guarded panic on this thread happened.
    static PLACE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `f`; a panic inside it is `Err` with its message (and where it happened).
pub fn call<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    install_hook();
    GUARDED.with(|g| g.set(g.get() + 1));
    let out = panic::catch_unwind(AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(g.get() - 1));
    out.map_err(|payload| {
        let place = PLACE.with_borrow_mut(Option::take);
        let message = message(&*payload);
        match place {
            Some(at) => format!("panicked at {at}: {message}"),
            None => format!("panicked: {message}"),
        }
    })
}

/// The text of a panic's payload.
fn message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "a panic without a message"
    }
}

/// Wraps the process's panic hook (once): a panic inside a guarded call records its place
/// and prints nothing; any other goes to the hook there was.
fn install_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if GUARDED.with(Cell::get) > 0 {
                let place = info
                    .location()
                    .map(|l| format!("{}:{}", l.file(), l.line()));
                PLACE.with_borrow_mut(|p| *p = place);
            } else {
                previous(info);
            }
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_with_its_message() {
        assert_eq!(call(|| 7), Ok(7));
        let e = call(|| -> u8 { panic!("boom {}", 1) }).expect_err("panics");
        assert!(
            e.starts_with("panicked at ") && e.ends_with(": boom 1"),
            "{e}"
        );
        let v: Vec<u8> = Vec::new();
        let e = call(|| v[3]).expect_err("out of bounds");
        assert!(e.contains("index out of bounds"), "{e}");
    }
}
