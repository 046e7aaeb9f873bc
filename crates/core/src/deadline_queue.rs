//! The registry's deadline index: a hashed timer wheel with an exact near heap (crate-private).
//!
//! Every slot has at most one live entry, filed at or before the slot's next timed event. The
//! caller remembers where it filed each slot (`Session::queued`): a line that moves a deadline
//! later touches nothing here (no memory access, O(1)); if the entry is already in the near
//! heap, the caller marks the slot itself ([`Slots::raised`]) and the queue re-files the entry
//! when it reaches the heap's top. When the wheel reaches an entry, it asks the caller for the
//! slot's true deadline ([`Slots::due`], which also notes the new filing instant) and
//! re-files it: internal bookkeeping, not a wake-up of the host. A deadline that moves earlier
//! is re-filed at once ([`DeadlineQueue::set`], O(1) in the wheel).
//!
//! - Entries filed before `horizon` live in `near`, a small binary heap ordered by
//!   `(at, slot)`. After every [`DeadlineQueue::settle`], its top is valid (`at == due`), so
//!   [`DeadlineQueue::peek`] is the exact earliest deadline.
//! - Heap entries are deleted lazily: a slot's live heap entry carries the slot's current
//!   ticket; others are dropped when they surface, or all at once when they outnumber the live
//!   ones.
//! - Entries within [`SPAN`] after `horizon` live in a wheel of [`BUCKETS`] buckets of
//!   [`WIDTH`] ns each (a bucket holds exactly one absolute interval). A bucket is a doubly
//!   linked list threaded through the slots' entries by index, so filing and removal are O(1)
//!   and the wheel never allocates.
//! - Later entries wait in `far`, a lazy heap, until the wheel's span reaches them.
//!
//! Indices, not pointers; no `unsafe`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::session::NEVER;

/// log2 of the bucket width in ns (2^30 ns ≈ 1.07 s).
const SHIFT: u32 = 30;
/// Bucket width in ns.
const WIDTH: u64 = 1 << SHIFT;
/// Number of wheel buckets (a power of two).
const BUCKETS: usize = 4096;
/// The wheel's span in ns (≈ 73 min).
const SPAN: u64 = WIDTH * BUCKETS as u64;

/// The end of a bucket's list.
const NIL: u32 = u32::MAX;
/// `pos` of an entry in the near heap, in the far heap, or nowhere.
const IN_NEAR: u32 = u32::MAX - 1;
const IN_FAR: u32 = u32::MAX - 2;
const NOWHERE: u32 = u32::MAX - 3;
/// `pos` of the first entry of bucket `b` is `HEAD + b`. Any `pos` below is the previous slot
/// in the bucket (slots stay below `HEAD`: the registry retires slots long before).
const HEAD: u32 = NOWHERE - BUCKETS as u32;

/// One slot's queue state (16 bytes).
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// In the near heap: a lower bound of the slot's next timed event, never below the instant
    /// the entry is filed at. Elsewhere: the filing instant.
    due: u64,
    /// The previous slot in its bucket, `HEAD + bucket`, [`IN_NEAR`], [`IN_FAR`] or
    /// [`NOWHERE`] (not queued).
    pos: u32,
    /// The next slot in its bucket, or [`NIL`]; in a heap, the ticket of its live entry.
    next: u32,
}

const EMPTY: Entry = Entry {
    due: NEVER,
    pos: NOWHERE,
    next: NIL,
};

/// What the queue asks its caller about slots.
pub(crate) trait Slots {
    /// The slot's true next deadline ([`NEVER`]: none); the caller notes it as the slot's new
    /// filing instant.
    fn due(&mut self, slot: u32) -> u64;

    /// Whether the slot's deadline may have moved later than its entry says (the caller
    /// keeps that mark itself, so that a line need not touch the queue). A near-heap top so
    /// marked is re-filed, not reported.
    fn raised(&self, slot: u32) -> bool {
        let _ = slot;
        false
    }
}

impl<F: FnMut(u32) -> u64> Slots for F {
    fn due(&mut self, slot: u32) -> u64 {
        self(slot)
    }
}

/// A heap entry: `(at, slot, ticket)`.
type HeapEntry = Reverse<(u64, u32, u32)>;

/// The deadline index of all slots.
#[derive(Debug)]
pub(crate) struct DeadlineQueue {
    entries: Vec<Entry>,
    /// Start of the first bucket not yet drained into `near`.
    horizon: u64,
    /// Each bucket's first slot, or [`NIL`].
    heads: Vec<u32>,
    wheel_len: usize,
    near: BinaryHeap<HeapEntry>,
    far: BinaryHeap<HeapEntry>,
    /// The last ticket handed out.
    ticket: u32,
    /// Scratch space of `drain_bucket` (kept for its capacity).
    batch: Vec<HeapEntry>,
    /// Live entries in `near` and `far` (the rest are stale, dropped when they surface or when
    /// they outnumber the live ones).
    near_live: usize,
    far_live: usize,
}

/// A heap is compacted when it holds more than twice its live entries plus this many.
const SLACK: usize = 1024;

impl Default for DeadlineQueue {
    fn default() -> Self {
        DeadlineQueue {
            entries: Vec::new(),
            horizon: 0,
            heads: vec![NIL; BUCKETS],
            wheel_len: 0,
            near: BinaryHeap::new(),
            far: BinaryHeap::new(),
            near_live: 0,
            far_live: 0,
            ticket: 0,
            batch: Vec::new(),
        }
    }
}

/// Whether `(slot, ticket)` is slot's live entry in the heap `place`.
fn is_live(entries: &[Entry], slot: u32, ticket: u32, place: u32) -> bool {
    entries
        .get(slot as usize)
        .is_some_and(|e| e.pos == place && e.next == ticket)
}

/// A burst (many deadlines in one bucket) leaves heap capacity behind: give most of it back.
fn shrink(heap: &mut BinaryHeap<HeapEntry>) {
    if heap.capacity() > 4 * heap.len() + 4 * SLACK {
        heap.shrink_to(2 * heap.len() + SLACK);
    }
}

fn bucket_of(t: u64) -> usize {
    (t >> SHIFT) as usize & (BUCKETS - 1)
}

impl DeadlineQueue {
    /// File slot's entry at `due`, replacing any entry it has ([`NEVER`]: just remove it). For
    /// a deadline earlier than the slot's entry, or a first one. Call
    /// [`DeadlineQueue::settle`] after a batch of changes.
    pub(crate) fn set(&mut self, slot: u32, due: u64) {
        let i = slot as usize;
        if i >= self.entries.len() {
            self.entries.resize(i + 1, EMPTY);
        }
        self.remove(slot);
        if due != NEVER {
            self.file(slot, due);
        }
    }

    /// Entries filed before this instant are in the near heap: when such a slot's deadline
    /// moves later, the caller marks it ([`Slots::raised`]) so the heap's top stays exact.
    pub(crate) fn horizon(&self) -> u64 {
        self.horizon
    }

    /// Forget slot's entry. Wheel entries go at once; heap entries are dropped when they surface.
    pub(crate) fn remove(&mut self, slot: u32) {
        let Some(e) = self.entries.get_mut(slot as usize) else {
            return;
        };
        let (pos, next) = (e.pos, e.next);
        *e = EMPTY;
        if pos == NOWHERE {
            return;
        }
        if pos == IN_NEAR {
            self.near_live -= 1; // its heap entry is dropped when it surfaces
            return;
        }
        if pos == IN_FAR {
            self.far_live -= 1;
            if self.far.len() > 2 * self.far_live + SLACK {
                let entries = &self.entries;
                self.far
                    .retain(|&Reverse((_, s, k))| is_live(entries, s, k, IN_FAR));
            }
            return;
        }
        if pos >= HEAD {
            self.heads[(pos - HEAD) as usize] = next;
        } else {
            self.entries[pos as usize].next = next;
        }
        if next != NIL {
            self.entries[next as usize].pos = pos;
        }
        self.wheel_len -= 1;
    }

    /// File slot's entry at `t` (the slot is not queued anywhere live).
    fn file(&mut self, slot: u32, t: u64) {
        self.entries[slot as usize].due = t;
        if t < self.horizon {
            let h = self.mark_near(slot, t);
            self.compact_near(1);
            self.near.push(h);
            return;
        }
        let e = &mut self.entries[slot as usize];
        if t - self.horizon < SPAN {
            let b = bucket_of(t);
            let next = std::mem::replace(&mut self.heads[b], slot);
            e.pos = HEAD + b as u32;
            e.next = next;
            if next != NIL {
                self.entries[next as usize].pos = slot;
            }
            self.wheel_len += 1;
        } else {
            self.ticket = self.ticket.wrapping_add(1);
            e.pos = IN_FAR;
            e.next = self.ticket;
            self.far_live += 1;
            self.far.push(Reverse((t, slot, self.ticket)));
        }
    }

    /// Mark slot's entry as in the near heap at `t`; returns the heap entry to push.
    fn mark_near(&mut self, slot: u32, t: u64) -> HeapEntry {
        self.ticket = self.ticket.wrapping_add(1);
        let e = &mut self.entries[slot as usize];
        e.pos = IN_NEAR;
        e.next = self.ticket;
        self.near_live += 1;
        Reverse((t, slot, self.ticket))
    }

    /// Drop the near heap's stale entries when they (with `more` to come) outnumber the live.
    fn compact_near(&mut self, more: usize) {
        if self.near.len() + more > 2 * self.near_live + SLACK {
            let entries = &self.entries;
            self.near
                .retain(|&Reverse((_, s, k))| is_live(entries, s, k, IN_NEAR));
        }
    }

    /// Re-file the entries of the wheel's first bucket and move the horizon past it. Those now
    /// before the horizon join the near heap in one batch (`extend` re-heapifies in O(n) when
    /// that is cheaper than n pushes: a bucket may hold thousands of equal deadlines).
    fn drain_bucket<F: Slots>(&mut self, due_of: &mut F) {
        let i = bucket_of(self.horizon);
        let mut slot = std::mem::replace(&mut self.heads[i], NIL);
        self.horizon = self.horizon.saturating_add(WIDTH);
        let mut batch = std::mem::take(&mut self.batch);
        while slot != NIL {
            let next = self.entries[slot as usize].next;
            self.wheel_len -= 1;
            let due = due_of.due(slot);
            if due == NEVER {
                self.entries[slot as usize] = EMPTY;
            } else if due < self.horizon {
                self.entries[slot as usize].due = due;
                batch.push(self.mark_near(slot, due));
            } else {
                self.file(slot, due);
            }
            slot = next;
        }
        if !batch.is_empty() {
            self.compact_near(batch.len());
            self.near.extend(batch.drain(..));
            if batch.capacity() > 4 * SLACK {
                batch.shrink_to(SLACK); // after a burst
            }
        }
        self.batch = batch;
        self.pull_far(due_of);
    }

    /// Far entries that the wheel's span now covers join the wheel.
    fn pull_far<F: Slots>(&mut self, due_of: &mut F) {
        while let Some(&Reverse((t, slot, k))) = self.far.peek() {
            if t.saturating_sub(self.horizon) >= SPAN {
                break;
            }
            self.far.pop();
            if is_live(&self.entries, slot, k, IN_FAR) {
                self.far_live -= 1;
                self.refile(slot, due_of.due(slot));
            }
        }
    }

    /// File slot's entry (taken out of its heap) at `due`, or drop it for [`NEVER`].
    fn refile(&mut self, slot: u32, due: u64) {
        if due == NEVER {
            self.entries[slot as usize] = EMPTY;
        } else {
            self.file(slot, due);
        }
    }

    /// Restore the invariant that [`DeadlineQueue::peek`] is the exact earliest deadline:
    /// the near heap's top is valid, or, when the near heap and the wheel are empty, the far
    /// heap's top is. `now` is the caller's clock (nothing is due before it). `due_of.due(slot)`
    /// is the slot's true next deadline ([`NEVER`]: none); the entry is re-filed there.
    pub(crate) fn settle<F: Slots>(&mut self, now: u64, due_of: &mut F) {
        loop {
            while let Some(&Reverse((t, slot, k))) = self.near.peek() {
                let e = self.entries[slot as usize];
                if e.pos == IN_NEAR && e.next == k {
                    if e.due == t && !due_of.raised(slot) {
                        return;
                    }
                    self.near.pop();
                    self.near_live -= 1;
                    self.refile(slot, due_of.due(slot)); // moved later since it was filed
                } else {
                    self.near.pop(); // removed or re-filed
                }
                shrink(&mut self.near);
            }
            if self.wheel_len > 0 {
                self.drain_bucket(due_of);
                continue;
            }
            // Nothing lies before the far heap: the horizon may follow the clock.
            let start = now & !(WIDTH - 1);
            if start > self.horizon {
                self.horizon = start;
                self.pull_far(due_of);
                if self.wheel_len > 0 || !self.near.is_empty() {
                    continue;
                }
            }
            loop {
                let Some(&Reverse((t, slot, k))) = self.far.peek() else {
                    return;
                };
                let e = self.entries[slot as usize];
                if e.pos != IN_FAR || e.next != k {
                    self.far.pop(); // removed or re-filed
                    continue;
                }
                let due = due_of.due(slot);
                if due == t {
                    return;
                }
                self.far.pop();
                self.far_live -= 1;
                self.refile(slot, due);
                if self.entries[slot as usize].pos != IN_FAR {
                    break; // into the wheel or the near heap: settle those first
                }
            }
        }
    }

    /// The earliest deadline, exact after [`DeadlineQueue::settle`].
    pub(crate) fn peek(&self) -> Option<u64> {
        self.near
            .peek()
            .or(self.far.peek())
            .map(|&Reverse((t, _, _))| t)
    }

    /// Take the earliest entry if it is due at or before `t` (call after
    /// [`DeadlineQueue::settle`]; settle again before the next call).
    pub(crate) fn pop_due(&mut self, t: u64) -> Option<u32> {
        let heap = if self.near.is_empty() {
            &mut self.far
        } else {
            &mut self.near
        };
        let &Reverse((at, slot, _)) = heap.peek()?;
        if at > t {
            return None;
        }
        heap.pop();
        shrink(heap);
        match self.entries[slot as usize].pos {
            IN_NEAR => self.near_live -= 1,
            _ => self.far_live -= 1,
        }
        self.entries[slot as usize] = EMPTY;
        Some(slot)
    }

    /// Forget everything.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.heads.fill(NIL);
        self.wheel_len = 0;
        self.near.clear();
        self.far.clear();
        self.near_live = 0;
        self.far_live = 0;
    }

    /// Number of entries in all three parts, stale heap entries included (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.wheel_len + self.near.len() + self.far.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registry's side of the queue: each slot's true deadline, where it is filed, and
    /// the mark of a deadline moved later while filed in the near heap.
    struct Model {
        due: Vec<u64>,
        queued: Vec<u64>,
        raised: Vec<bool>,
    }

    impl Slots for Model {
        fn due(&mut self, slot: u32) -> u64 {
            let i = slot as usize;
            self.queued[i] = self.due[i];
            self.raised[i] = false;
            self.due[i]
        }

        fn raised(&self, slot: u32) -> bool {
            self.raised[slot as usize]
        }
    }

    /// Drive the queue like the registry does, against a brute-force minimum.
    #[test]
    fn matches_a_brute_force_minimum() {
        let mut q = DeadlineQueue::default();
        let mut m = Model {
            due: vec![NEVER; 64],
            queued: vec![NEVER; 64],
            raised: vec![false; 64],
        };
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut now = 0u64;
        for _ in 0..20_000 {
            let slot = (rnd() % 64) as u32;
            let r = rnd();
            let d = match r % 5 {
                0 => NEVER,
                1 => now + r % (WIDTH * 3),
                2 => now + r % (SPAN * 3),
                _ => now + r % (WIDTH * 600),
            };
            let i = slot as usize;
            m.due[i] = d;
            if m.queued[i] != NEVER && d >= m.queued[i] {
                // Later: the queue is not touched; a near-heap entry is marked.
                if m.queued[i] < q.horizon() {
                    m.raised[i] = true;
                }
            } else {
                m.queued[i] = d;
                m.raised[i] = false;
                q.set(slot, d);
            }
            q.settle(now, &mut m);
            let min = m.due.iter().copied().min().unwrap();
            assert_eq!(q.peek(), (min != NEVER).then_some(min));
            if rnd() % 4 == 0 {
                now = q.peek().unwrap_or(now).max(now);
                while let Some(s) = q.pop_due(now) {
                    let s = s as usize;
                    assert!(m.due[s] <= now);
                    assert_eq!(Some(m.due[s]), m.due.iter().copied().min());
                    m.due[s] = NEVER;
                    m.queued[s] = NEVER;
                    m.raised[s] = false;
                    q.settle(now, &mut m);
                }
            }
        }
        assert!(q.len() <= 64 * 3 + 2 * SLACK);
    }

    #[test]
    fn removal_keeps_positions_consistent() {
        let mut q = DeadlineQueue::default();
        for s in 0..10 {
            q.set(s, 5 * WIDTH + u64::from(s));
        }
        q.remove(3);
        q.remove(0);
        let mut due_of = |s: u32| 5 * WIDTH + u64::from(s);
        q.settle(0, &mut due_of);
        assert_eq!(q.peek(), Some(5 * WIDTH + 1));
        for s in [1, 2, 4, 5, 6, 7, 8, 9] {
            assert_eq!(q.pop_due(NEVER), Some(s));
            q.settle(0, &mut due_of);
        }
        assert_eq!(q.peek(), None);
    }
}
