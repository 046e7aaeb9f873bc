//! The module's state: the objects the host created, and the buffers calls exchange through.

use std::cell::RefCell;

use crate::rate_limit::RateLimitCore;
use crate::watchdog::{Record, Watchdog};

/// Objects of one kind, named by indices that are never used again while the module lives
/// (a call with the index of a dropped object finds nothing, even after others were made).
/// A dropped object leaves one empty word behind.
#[derive(Debug)]
pub struct Table<T> {
    items: Vec<Option<Box<T>>>,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Table { items: Vec::new() }
    }
}

impl<T> Table<T> {
    /// Keep `item`; returns its index (`None` once 2^31 were made: the host's indices are
    /// non-negative `i32`s).
    pub fn insert(&mut self, item: T) -> Option<u32> {
        let i = u32::try_from(self.items.len())
            .ok()
            .filter(|&i| i <= i32::MAX as u32)?;
        self.items.push(Some(Box::new(item)));
        Some(i)
    }

    /// The item at `i`, if any.
    pub fn get_mut(&mut self, i: u32) -> Option<&mut T> {
        self.items.get_mut(i as usize)?.as_deref_mut()
    }

    /// Drop the item at `i`, if any.
    pub fn remove(&mut self, i: u32) {
        if let Some(item) = self.items.get_mut(i as usize) {
            *item = None;
        }
    }
}

/// Everything the module holds.
#[derive(Debug, Default)]
pub struct State {
    /// `createWatchdog()`s.
    pub watchdogs: Table<Watchdog>,
    /// `createRateLimitMonitor()`s.
    pub monitors: Table<RateLimitCore>,
    /// Bytes the host wrote for the next call.
    pub input: Vec<u8>,
    /// Bytes the last call wrote for the host.
    pub output: Vec<u8>,
    /// What the last tick found, as numbers.
    pub records: Vec<f64>,
    /// The last tick's records (reused).
    pub scratch: Vec<Record>,
}

impl State {
    /// The first `len` bytes the host wrote (fewer if it wrote fewer).
    pub fn input(&self, len: u32) -> &[u8] {
        &self.input[..(len as usize).min(self.input.len())]
    }

    /// Text for the host: its length in bytes.
    pub fn answer(&mut self, text: &str) -> u32 {
        self.output.clear();
        self.output.extend_from_slice(text.as_bytes());
        self.output.len() as u32
    }
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// Run `f` on the state. No call re-enters (the module calls nothing of the host's), so the
/// state is never borrowed twice.
pub fn with<R>(f: impl FnOnce(&mut State) -> R) -> R {
    STATE.with(|s| f(&mut s.borrow_mut()))
}
