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
use std::any::Any;
use std::cell::RefCell;

pub use counted_macro::counted;

thread_local! {
    /// The counts of the innermost `watch` running on this thread, if any.
    static WATCHED: RefCell<Option<Vec<(&'static str, usize)>>> =
        const { RefCell::new(None) };
    /// The values of the innermost `keeping` running on this thread, if any.
    static KEPT: RefCell<Option<Values>> =
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

/// A value the function `name` was given, made by `make` only while a
/// [`keeping`] runs on this thread. Called by the code `#[counted(keep = …)]` adds.
pub fn keep<T: Any>(name: &'static str, make: impl FnOnce() -> T) {
    let keeping = KEPT.with_borrow(Option::is_some);
    if keeping {
        let value: Box<dyn Any> = Box::new(make());
        KEPT.with_borrow_mut(|kept| {
            if let Some(kept) = kept {
                kept.push((name, value));
            }
        });
    }
}

/// The values kept during one [`keeping`], in the order they came.
#[derive(Default)]
pub struct Kept(Values);

/// What was kept, by the name of the function that kept it.
type Values = Vec<(&'static str, Box<dyn Any>)>;

impl Kept {
    /// What `name` kept, as `T` (values of another type are left out).
    pub fn of<T: Any>(&self, name: &str) -> Vec<&T> {
        self.0
            .iter()
            .filter(|(seen, _)| *seen == name)
            .filter_map(|(_, value)| value.downcast_ref::<T>())
            .collect()
    }
}

/// Runs `f` and keeps what the functions marked `#[counted(keep = …)]` were given
/// on this thread. A `keeping` inside another one keeps for the inner one only.
pub fn keeping<R>(f: impl FnOnce() -> R) -> (R, Kept) {
    /// Puts the outer keeping back, even when `f` panics.
    struct Restore(Option<Option<Values>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            KEPT.replace(self.0.take().expect("restored once"));
        }
    }
    let restore = Restore(Some(KEPT.replace(Some(Vec::new()))));
    let out = f();
    let kept = KEPT.with_borrow_mut(|k| k.take().unwrap_or_default());
    drop(restore);
    (out, Kept(kept))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeping_holds_what_was_kept_inside_it_only() {
        let mut made = 0;
        keep("f", || {
            made += 1;
            1u8
        });
        assert_eq!(made, 0, "nothing is made outside `keeping`");
        let ((), kept) = keeping(|| {
            keep("f", || 2u8);
            keep("g", || 3u8);
            keep("f", || "not a u8");
            let ((), inner) = keeping(|| keep("f", || 4u8));
            assert_eq!(inner.of::<u8>("f"), [&4]);
            keep("f", || 5u8);
        });
        assert_eq!(kept.of::<u8>("f"), [&2, &5]);
        assert_eq!(kept.of::<u8>("g"), [&3]);
        assert!(kept.of::<u8>("h").is_empty());
        keep("f", || 6u8);
        let ((), after) = keeping(|| ());
        assert!(after.of::<u8>("f").is_empty(), "the scope ended");
    }
}
