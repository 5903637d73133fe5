//! The event queue: earliest time first, and events at the same instant in the order they were
//! scheduled (FIFO tie-break with a sequence counter, as nexosim's `util/priority_queue.rs`
//! does), so a run is a pure function of its inputs.

use super::time::{SimDuration, SimTime};

struct Entry<E> {
    /// (time in ps, sequence number): the order events are taken in.
    key: (u64, u64),
    event: E,
}

/// A deterministic future-event list with its clock. Models see time only through it.
///
/// The interrupt path keeps only a handful of events pending at once (a packet or two in flight,
/// the CPU's next step, the next interrupt), so the list is a vector sorted latest-first: taking
/// the next event is a `pop` from the end and inserting walks the new event in from the end,
/// which beats a binary heap's sifting at these sizes (`cargo bench`).
pub struct EventQueue<E> {
    entries: Vec<Entry<E>>,
    next_seq: u64,
    now: SimTime,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            entries: Vec::with_capacity(64),
            next_seq: 0,
            now: SimTime::ZERO,
        }
    }

    /// The time of the event being processed (or of the last one popped).
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Schedule `event` at `time`, which must not be in the past.
    pub fn schedule_at(&mut self, time: SimTime, event: E) {
        let seq = self.reserve();
        self.schedule_reserved(time, seq, event);
    }

    /// A sequence number for an event to be scheduled later with
    /// [`EventQueue::schedule_reserved`]: it is taken in the order of the moment of reserving,
    /// among events at the same time, as if scheduled then.
    pub fn reserve(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq - 1
    }

    /// Schedule `event` at `time` with a sequence number from [`EventQueue::reserve`].
    pub fn schedule_reserved(&mut self, time: SimTime, seq: u64, event: E) {
        assert!(
            time >= self.now,
            "event scheduled in the past ({time} < {})",
            self.now
        );
        let key = (time.as_ps(), seq);
        // Latest first. A new event is nearly always among the earliest pending, so walk it in
        // from the end; it stops behind (is taken after) every earlier-scheduled event at the
        // same time with a smaller sequence number.
        self.entries.push(Entry { key, event });
        let mut i = self.entries.len() - 1;
        while i > 0 && self.entries[i - 1].key < key {
            self.entries.swap(i - 1, i);
            i -= 1;
        }
    }

    /// Schedule `event` `delay` after now.
    pub fn schedule_in(&mut self, delay: SimDuration, event: E) {
        self.schedule_at(self.now + delay, event);
    }

    /// Take the next event and advance the clock to it.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let e = self.entries.pop()?;
        self.now = SimTime::from_ps(e.key.0);
        Some((self.now, e.event))
    }

    pub fn peek_time(&self) -> Option<SimTime> {
        self.entries.last().map(|e| SimTime::from_ps(e.key.0))
    }

    /// The pending events, in no particular order.
    pub fn pending(&self) -> impl Iterator<Item = (SimTime, &E)> {
        (self.entries.iter()).map(|e| (SimTime::from_ps(e.key.0), &e.event))
    }

    /// Take every pending event, earliest first (in the order `pop` would give them), leaving
    /// the queue empty and its clock where it is: the machine's skip between two windows
    /// reschedules what it keeps ([`EventQueue::jump_to`]).
    pub fn drain(&mut self) -> Vec<(SimTime, E)> {
        (self.entries.drain(..).rev())
            .map(|e| (SimTime::from_ps(e.key.0), e.event))
            .collect()
    }

    /// Move the clock forward to `time` with nothing pending (nothing may happen in between:
    /// the caller drained the queue and reschedules what is left at or after `time`).
    pub fn jump_to(&mut self, time: SimTime) {
        assert!(self.entries.is_empty(), "a jump over pending events");
        assert!(
            time >= self.now,
            "a jump back in time ({time} < {})",
            self.now
        );
        self.now = time;
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Events come out sorted by time, and events with equal times in scheduling order.
        #[test]
        fn pops_in_time_then_fifo_order(times in proptest::collection::vec(0u64..50, 0..300)) {
            let mut q = EventQueue::new();
            for (i, t) in times.iter().enumerate() {
                q.schedule_at(SimTime::from_ps(*t), i);
            }
            let mut out = Vec::new();
            while let Some((t, i)) = q.pop() {
                out.push((t.as_ps(), i));
            }
            let mut expected: Vec<(u64, usize)> = times.iter().copied().zip(0..).collect();
            expected.sort(); // (time, insertion index) is exactly the contract
            prop_assert_eq!(out, expected);
        }

        /// Scheduling while draining (as a model does) never lets time run backwards and keeps
        /// FIFO among equal times.
        #[test]
        fn interleaved_scheduling_is_monotone(delays in proptest::collection::vec(0u64..5, 1..200)) {
            let mut q = EventQueue::new();
            q.schedule_at(SimTime::ZERO, 0usize);
            let mut next = 1usize;
            let mut last = (SimTime::ZERO, 0usize);
            let mut popped = 0;
            while let Some((t, id)) = q.pop() {
                prop_assert!(t >= last.0);
                if t == last.0 && popped > 0 { prop_assert!(id > last.1); }
                last = (t, id);
                popped += 1;
                if next < delays.len() {
                    q.schedule_in(SimDuration::from_ps(delays[next]), next);
                    next += 1;
                    if next < delays.len() {
                        q.schedule_in(SimDuration::from_ps(delays[next]), next);
                        next += 1;
                    }
                }
            }
            prop_assert_eq!(popped, next);
        }
    }

    /// A drain gives what `pop` would, in its order; a jump moves the clock with nothing lost.
    #[test]
    fn drain_gives_pop_order_and_jump_moves_the_clock() {
        let mut q = EventQueue::new();
        for (t, e) in [(5, 'a'), (3, 'b'), (5, 'c'), (1, 'd')] {
            q.schedule_at(SimTime::from_ps(t), e);
        }
        let drained: Vec<(u64, char)> =
            q.drain().into_iter().map(|(t, e)| (t.as_ps(), e)).collect();
        assert_eq!(drained, [(1, 'd'), (3, 'b'), (5, 'a'), (5, 'c')]);
        assert!(q.is_empty());
        q.jump_to(SimTime::from_ps(4));
        assert_eq!(q.now(), SimTime::from_ps(4));
        q.schedule_at(SimTime::from_ps(4), 'e');
        assert_eq!(q.pop(), Some((SimTime::from_ps(4), 'e')));
    }

    #[test]
    #[should_panic(expected = "past")]
    fn scheduling_in_the_past_is_refused() {
        let mut q = EventQueue::new();
        q.schedule_at(SimTime::from_ps(10), ());
        q.pop();
        q.schedule_at(SimTime::from_ps(5), ());
    }
}
