//! The exercises' counters, support code and not a lesson: how many times the
//! lesson's functions that an exercise replaces ran, on this thread, while a test
//! watched. A function is counted by
//! putting `#[counted]` (the `counted` crate) on it; the exercises' tests run a
//! solution inside [`watch`] and fail it when it reached the course's own version
//! of what it was asked to write, through whatever path (a closure, a helper
//! module, a re-export).
//!
//! The counts are per thread, so tests running side by side do not see each
//! other's calls. Outside `watch`, [`count`] reads one thread-local flag and
//! returns: nothing to measure next to a tensor operation in training.
use std::cell::RefCell;

pub use counted_macro::counted;

thread_local! {
    /// The counts of the innermost `watch` running on this thread, if any.
    static WATCHED: RefCell<Option<Vec<(&'static str, usize)>>> =
        const { RefCell::new(None) };
}

/// One call of the function `name`. Called by the code `#[counted]` adds.
pub fn count(name: &'static str) {
    WATCHED.with_borrow_mut(|watched| {
        if let Some(counts) = watched {
            add(counts, name, 1);
        }
    });
}

fn add(counts: &mut Vec<(&'static str, usize)>, name: &'static str, n: usize) {
    match counts.iter_mut().find(|(seen, _)| *seen == name) {
        Some((_, c)) => *c += n,
        None => counts.push((name, n)),
    }
}

/// The calls counted during one `watch`, by function name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts(Vec<(&'static str, usize)>);

impl Counts {
    /// How many times `name` ran (0 if never).
    pub fn of(&self, name: &str) -> usize {
        self.0
            .iter()
            .find(|(seen, _)| *seen == name)
            .map_or(0, |(_, c)| *c)
    }

    /// Every function that ran, with its count, in the order of their first call.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, usize)> + '_ {
        self.0.iter().copied()
    }
}

/// Runs `f` and counts the counted functions it calls on this thread. A `watch`
/// inside another one counts for both.
pub fn watch<R>(f: impl FnOnce() -> R) -> (R, Counts) {
    /// Puts the outer watch back, even when `f` panics, and hands it the inner
    /// counts too.
    struct Restore(Option<Option<Vec<(&'static str, usize)>>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let outer = self.0.take().expect("restored once");
            let inner = WATCHED.replace(outer);
            WATCHED.with_borrow_mut(|watched| {
                if let (Some(outer), Some(inner)) = (watched, inner) {
                    for (name, n) in inner {
                        add(outer, name, n);
                    }
                }
            });
        }
    }
    let restore = Restore(Some(WATCHED.replace(Some(Vec::new()))));
    let out = f();
    let counts = WATCHED.with_borrow(|w| w.clone().unwrap_or_default());
    drop(restore);
    (out, Counts(counts))
}
