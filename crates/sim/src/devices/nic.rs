//! The receive side of an Intel 8257x Gigabit Ethernet controller (82571EB/82572EI; Intel
//! "PCIe GbE Controllers Open Source Software Developer's Manual", 631xESB/82571/82572/82573,
//! the register names below), with the traffic generator that feeds its port.
//!
//! A frame that arrives on the wire goes into the on-chip receive packet buffer (its receive
//! share, PBA: 38 KB on the 82571/82572, e1000e `82571.c`). While the host has given the chip
//! descriptors (the ring between RDH and RDT), the DMA engine moves the frame to host memory
//! and writes its descriptor back; each write-back sets the receive-timer cause (ICR.RXT0,
//! with RDTR = 0, e1000e's default). A frame that finds the buffer full is dropped and counted
//! (MPC). An interrupt is asserted when a cause is pending, the cause is enabled (IMS), the
//! previous interrupt has been acknowledged and the throttling interval (ITR, in 256 ns units)
//! since the previous one has passed. Reading ICR returns and clears the causes and, with
//! interrupt-acknowledge auto-mask (IAM, which e1000e sets), clears IMS: the driver enables it
//! again when its NAPI poll completes.
//!
//! The frames themselves are not events. Arrivals come at a fixed gap from the generator, so the
//! chip's state at any time follows from its state at the last access: [`Nic::advance`] runs
//! the arrivals, drops and write-backs up to the time of each access (in time order, which the
//! machine guarantees), and the machine schedules an event only for the next interrupt.
//! A frame's DMA is timed (its latency from the wire to its written-back descriptor, and the
//! link time of its data and descriptor writes, one after another) but its TLPs are not put on
//! the fabric one by one: at the flood rates of seed 003 they fill about a tenth of a Gen1 x1
//! link.

use crate::engine::{SimDuration, SimTime};
use std::collections::VecDeque;

// The register map is the datasheet's, shared with the drivers written against it.
pub use crate::hw::regs::e1000::*;

#[derive(Clone, Debug)]
pub struct NicConfig {
    /// Receive descriptors in the ring (e1000e `E1000_DEFAULT_RXD` 256).
    pub ring: u32,
    /// The receive share of the packet buffer, in bytes.
    pub buffer_bytes: u32,
    /// What one frame takes in it (the frame and its status).
    pub buffer_bytes_per_frame: u32,
    /// The frames' size on the wire, without preamble and gap.
    pub frame_bytes: u32,
    /// The generator's fixed gap between frames; `None`: no traffic.
    pub gap: Option<SimDuration>,
    /// When the first frame arrives.
    pub first_arrival: SimDuration,
    /// When the generator stops (the end of the measured run); `None`: never.
    pub traffic_end: Option<SimTime>,
    /// From a frame's last bit on the wire to its descriptor written back in host memory,
    /// when a descriptor is ready and the DMA engine is free.
    pub rx_latency: SimDuration,
    /// The link time of one frame's data write and its descriptor write-back: frames leave the
    /// buffer no faster than this.
    pub dma_per_frame: SimDuration,
    /// From a tail write to the chip having fetched the descriptors it gave.
    pub descriptor_fetch: SimDuration,
    /// The throttling interval before the driver first writes ITR.
    pub itr_interval: SimDuration,
    /// Transmit descriptors in the ring (e1000e `E1000_DEFAULT_TXD` 256).
    pub tx_ring: u32,
    /// From a tail write reaching the chip to the frame's descriptor written back, when the
    /// wire is free: the descriptor's and the data's fetch (DMA reads), the MAC.
    pub tx_latency: SimDuration,
    /// One frame's time on the wire, with its preamble and inter-frame gap: frames leave no
    /// faster.
    pub wire_per_frame: SimDuration,
    /// TIDV: a write-back's interrupt cause waits this long (e1000e sets IDE in every
    /// descriptor when TxIntDelay is not 0).
    pub tx_int_delay: SimDuration,
}

/// The chip's receive state and counters.
#[derive(Clone, Debug)]
pub struct Nic {
    pub cfg: NicConfig,
    /// The time its state was last brought to.
    clock: SimTime,
    /// The latest time the driver took a written-back descriptor without bringing the chip to
    /// it ([`Nic::take_frame`]).
    looked: SimTime,
    /// Frames that have arrived on the wire.
    pub arrived: u64,
    /// Arrival times of the frames waiting in the packet buffer.
    fifo: VecDeque<SimTime>,
    /// Frames dropped because the buffer was full (MPC).
    pub dropped: u64,
    /// Descriptors the chip owns (given by tail writes, not yet written back).
    hw_descriptors: u32,
    /// When the descriptors of the last tail write were fetched.
    descriptors_ready: SimTime,
    /// When the last write-back finished.
    last_done: SimTime,
    /// Descriptors written back.
    pub done: u64,
    /// Written-back descriptors the driver has cleaned (its `next_to_clean`; the ring lives in
    /// host memory, where both see it).
    pub cleaned: u64,
    /// The last tail value written.
    rdt: u32,
    /// Causes pending in ICR, and since when.
    icr: Option<SimTime>,
    /// Which causes: RXT0 from write-backs, others set through ICS.
    causes: u32,
    /// IMS: the receive causes are enabled.
    pub ims: bool,
    /// An interrupt was asserted and ICR not read since.
    asserted: bool,
    last_assert: Option<SimTime>,
    pub itr_interval: SimDuration,
    /// Interrupts asserted.
    pub interrupts: u64,
    /// The last transmit tail written.
    tdt: u32,
    /// Write-back times of the transmit descriptors from absolute index `tx_base` on, up to
    /// the last one given (`tx_given`).
    tx_done: VecDeque<SimTime>,
    tx_base: u64,
    tx_given: u64,
    /// Descriptors the driver has cleaned, and those whose TXDW cause has been set.
    tx_cleaned: u64,
    tx_signalled: u64,
    /// When the last transmit write-back happens.
    tx_last_done: SimTime,
    /// Frames on the wire before the traffic ended (`traffic_end`): what a run of fixed
    /// length forwarded in its time (the rings drain after it).
    pub transmitted_in_run: u64,
}

impl Nic {
    /// The chip after `e1000_configure_rx` and `e1000_alloc_rx_buffers` at `ifup`: every
    /// descriptor but one given to it (RDT = ring - 1), interrupts enabled.
    pub fn new(cfg: NicConfig) -> Nic {
        let ring = cfg.ring;
        let itr = cfg.itr_interval;
        Nic {
            cfg,
            clock: SimTime::ZERO,
            looked: SimTime::ZERO,
            arrived: 0,
            fifo: VecDeque::new(),
            dropped: 0,
            hw_descriptors: ring - 1,
            descriptors_ready: SimTime::ZERO,
            last_done: SimTime::ZERO,
            done: 0,
            cleaned: 0,
            rdt: ring - 1,
            icr: None,
            causes: 0,
            ims: true,
            asserted: false,
            last_assert: None,
            itr_interval: itr,
            interrupts: 0,
            tdt: 0,
            tx_done: VecDeque::new(),
            tx_base: 0,
            tx_given: 0,
            tx_cleaned: 0,
            tx_signalled: 0,
            tx_last_done: SimTime::ZERO,
            transmitted_in_run: 0,
        }
    }

    /// When frame `i` arrives.
    fn arrival(&self, i: u64) -> Option<SimTime> {
        let gap = self.cfg.gap?;
        let at = SimTime::ZERO + self.cfg.first_arrival + gap * i;
        self.cfg
            .traffic_end
            .is_none_or(|end| at < end)
            .then_some(at)
    }

    /// When the frame at the buffer's head (arrived at `a`) would be written back.
    fn completion(&self, a: SimTime) -> SimTime {
        (a + self.cfg.rx_latency)
            .max(self.last_done + self.cfg.dma_per_frame)
            .max(self.descriptors_ready)
    }

    /// Move frames from the buffer to host memory while descriptors last, up to `limit`.
    fn drain(&mut self, limit: SimTime) {
        while self.hw_descriptors > 0 {
            let Some(&a) = self.fifo.front() else { break };
            let t = self.completion(a);
            if t > limit {
                break;
            }
            self.fifo.pop_front();
            self.last_done = t;
            self.hw_descriptors -= 1;
            self.done += 1;
            self.icr.get_or_insert(t);
            self.causes |= ICR_RXT0;
        }
    }

    /// Bring the chip's state to `t`: arrivals in order, each finding the buffer as the
    /// write-backs before it left it.
    pub fn advance(&mut self, t: SimTime) {
        debug_assert!(t >= self.clock, "the chip is driven in time order");
        while let Some(a) = self.arrival(self.arrived).filter(|&a| a <= t) {
            self.drain(a);
            let used = (self.fifo.len() as u32 + 1) * self.cfg.buffer_bytes_per_frame;
            if used <= self.cfg.buffer_bytes {
                self.fifo.push_back(a);
            } else {
                self.dropped += 1;
            }
            self.arrived += 1;
        }
        self.drain(t);
        while let Some(c) = self.tx_cause().filter(|&c| c <= t) {
            self.icr.get_or_insert(c);
            self.causes |= ICR_TXDW;
            self.tx_signalled += 1;
        }
        self.trim_tx();
        self.clock = self.clock.max(t);
    }

    /// When the next transmit write-back's cause is set, if one is outstanding.
    fn tx_cause(&self) -> Option<SimTime> {
        let i = self.tx_signalled.checked_sub(self.tx_base)?;
        self.tx_done
            .get(i as usize)
            .map(|&d| d + self.cfg.tx_int_delay)
    }

    /// Forget write-backs both cleaned and signalled.
    fn trim_tx(&mut self) {
        while self.tx_base < self.tx_cleaned.min(self.tx_signalled) {
            self.tx_done.pop_front();
            self.tx_base += 1;
        }
    }

    /// A write of the transmit tail at `t`: each descriptor between the old and the new tail
    /// is written back after the tail's latency, and no sooner than one wire time after the
    /// previous one.
    pub fn write_tdt(&mut self, t: SimTime, tail: u32) {
        self.advance(t);
        let ring = self.cfg.tx_ring;
        let given = (tail % ring + ring - self.tdt) % ring;
        self.tdt = tail % ring;
        for _ in 0..given {
            let done = (t + self.cfg.tx_latency).max(self.tx_last_done + self.cfg.wire_per_frame);
            self.tx_last_done = done;
            if self.cfg.traffic_end.is_none_or(|end| done <= end) {
                self.transmitted_in_run += 1;
            }
            self.tx_done.push_back(done);
            self.tx_given += 1;
        }
        debug_assert!(self.tx_given - self.tx_cleaned < u64::from(ring));
    }

    /// The driver's `e1000_clean_tx_irq` looks at the next descriptor to clean at `t`: written
    /// back (DD set) or not.
    pub fn take_tx(&mut self, t: SimTime) -> bool {
        self.advance(t);
        let i = (self.tx_cleaned - self.tx_base) as usize;
        match self.tx_done.get(i) {
            Some(&d) if d <= t => {
                self.tx_cleaned += 1;
                self.trim_tx();
                true
            }
            _ => false,
        }
    }

    /// Frames on the wire by the chip's clock.
    pub fn transmitted(&self) -> u64 {
        let pending = self.tx_done.iter().filter(|&&d| d > self.clock).count();
        self.tx_given - pending as u64
    }

    /// A read of ICR at `t`: the causes, cleared; IAM clears IMS and the assertion.
    pub fn read_icr(&mut self, t: SimTime) -> u32 {
        self.advance(t);
        let v = if self.icr.take().is_some() {
            std::mem::take(&mut self.causes) | if self.asserted { ICR_INT_ASSERTED } else { 0 }
        } else {
            0
        };
        // Auto-mask applies when the read finds an interrupt asserted (ICR.INT_ASSERTED).
        if self.asserted {
            self.ims = false;
        }
        self.asserted = false;
        v
    }

    /// A write of IMS (enable) or IMC (disable) at `t`.
    pub fn write_mask(&mut self, t: SimTime, enable: bool) {
        self.advance(t);
        self.ims = enable;
    }

    /// A write of ICS at `t`: the causes named are pending from now, and interrupt as any
    /// cause does (when enabled, acknowledged and past the throttling interval).
    pub fn write_ics(&mut self, t: SimTime, causes: u32) {
        self.advance(t);
        if causes != 0 {
            self.icr.get_or_insert(t);
            self.causes |= causes;
        }
    }

    /// A write of the receive tail at `t`: the descriptors between the old and the new tail
    /// are the chip's.
    pub fn write_rdt(&mut self, t: SimTime, tail: u32) {
        self.advance(t);
        let ring = self.cfg.ring;
        let given = (tail % ring + ring - self.rdt) % ring;
        self.rdt = tail % ring;
        self.hw_descriptors += given;
        debug_assert!(self.hw_descriptors < ring);
        self.descriptors_ready = t + self.cfg.descriptor_fetch;
        self.drain(t);
    }

    /// A write of ITR at `t` (the interval in 256 ns units; 0: no throttling).
    pub fn write_itr(&mut self, t: SimTime, value: u32) {
        self.advance(t);
        self.itr_interval = SimDuration::from_ns(256) * u64::from(value);
    }

    /// The chip's state at the run's end, `end` or the driver's last look at its ring if that
    /// came later (ahead of the clock): what its counters report.
    pub fn finish(&mut self, end: SimTime) {
        self.advance(end.max(self.looked).max(self.clock));
    }

    /// The driver cleans the next descriptor at `t`, if one has been written back.
    pub fn take_frame(&mut self, t: SimTime) -> bool {
        // A descriptor already written back is there whatever the chip does meanwhile: the
        // driver takes it without bringing the chip to `t` first. Exact while no transmit
        // write-back is outstanding: the receive side's catching up is the same in one step as
        // in two (its write-backs leave in order, each no sooner than the one before), and only
        // a transmit cause, set after the receive write-backs of each catch-up, would see the
        // split. The chip's counters still run to `t` at the run's end ([`Nic::finish`]).
        if self.cleaned < self.done && self.tx_cause().is_none() {
            self.cleaned += 1;
            self.looked = self.looked.max(t);
            return true;
        }
        self.advance(t);
        if self.cleaned < self.done {
            self.cleaned += 1;
            true
        } else {
            false
        }
    }

    /// When the chip will next assert an interrupt, as things stand at its clock: `None` while
    /// the cause is masked, an interrupt awaits its acknowledgement, or nothing can set a
    /// cause (no traffic, or no descriptor until the driver gives some, and no transmit
    /// write-back to come).
    pub fn next_interrupt(&self) -> Option<SimTime> {
        if !self.ims || self.asserted {
            return None;
        }
        let rx = || {
            if self.hw_descriptors == 0 {
                return None;
            }
            Some(match self.fifo.front() {
                Some(&a) => self.completion(a),
                None => self.completion(self.arrival(self.arrived)?),
            })
        };
        let cause = match self.icr {
            Some(t) => t,
            None => match (rx(), self.tx_cause()) {
                (Some(r), Some(x)) => r.min(x),
                (r, x) => r.or(x)?,
            },
        };
        let throttle = self
            .last_assert
            .map_or(SimTime::ZERO, |l| l + self.itr_interval);
        Some(cause.max(throttle).max(self.clock))
    }

    /// Assert the interrupt at `t` if it is due then.
    pub fn assert_due(&mut self, t: SimTime) -> bool {
        self.advance(t);
        if self.next_interrupt().is_some_and(|at| at <= t) {
            self.asserted = true;
            self.last_assert = Some(t);
            self.interrupts += 1;
            true
        } else {
            false
        }
    }

    /// Is the interrupt line asserted (INTx: until ICR is read)?
    pub fn line_asserted(&self) -> bool {
        self.asserted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> SimDuration {
        SimDuration::from_ns(n * 1000)
    }

    fn at(n: u64) -> SimTime {
        SimTime::ZERO + us(n)
    }

    fn nic(gap_us: u64) -> Nic {
        Nic::new(NicConfig {
            ring: 8,
            buffer_bytes: 4 * 80,
            buffer_bytes_per_frame: 80,
            frame_bytes: 64,
            gap: Some(us(gap_us)),
            first_arrival: us(gap_us),
            traffic_end: None,
            rx_latency: us(1),
            dma_per_frame: SimDuration::from_ns(500),
            descriptor_fetch: us(1),
            itr_interval: us(50),
            tx_ring: 8,
            tx_latency: us(2),
            wire_per_frame: SimDuration::from_ns(672),
            tx_int_delay: us(8),
        })
    }

    /// What the driver does to the chip in the property test below.
    #[derive(Clone, Copy, Debug)]
    enum Act {
        Take,
        TakeTx,
        /// Give back the cleaned receive descriptors (RDT).
        Refill,
        /// Queue up to this many frames for transmission (TDT).
        Send(u32),
        ReadIcr,
        Mask(bool),
        AssertDue,
    }

    fn act() -> impl proptest::strategy::Strategy<Value = Act> {
        use proptest::prelude::*;
        prop_oneof![
            6 => Just(Act::Take),
            2 => Just(Act::TakeTx),
            2 => Just(Act::Refill),
            1 => (1u32..4).prop_map(Act::Send),
            2 => Just(Act::ReadIcr),
            1 => any::<bool>().prop_map(Act::Mask),
            2 => Just(Act::AssertDue),
        ]
    }

    proptest::proptest! {
        /// `take_frame` takes a written-back descriptor without bringing the chip to its time
        /// (while no transmit write-back is outstanding): the same answers, and the same chip at
        /// the end, as a chip brought to every look's time first.
        #[test]
        fn a_look_at_a_written_back_descriptor_equals_the_chip_brought_to_its_time(
            gap_ns in 300u64..12_000,
            rx_latency_ns in 200u64..3_000,
            dma_ns in 100u64..2_000,
            steps in proptest::collection::vec((0u64..4_000, act()), 1..300),
        ) {
            // Frames that arrive faster than the DMA engine moves them (the buffer fills and
            // overflows) and slower (it idles), behind a latency shorter or longer than the gap.
            let make = || {
                let mut n = nic(1);
                n.cfg.gap = Some(SimDuration::from_ns(gap_ns));
                n.cfg.first_arrival = SimDuration::from_ns(gap_ns);
                n.cfg.rx_latency = SimDuration::from_ns(rx_latency_ns);
                n.cfg.dma_per_frame = SimDuration::from_ns(dma_ns);
                n
            };
            let (mut lazy, mut eager) = (make(), make());
            let mut t = SimTime::ZERO;
            let (mut rdt, mut cleaned, mut tdt, mut tx_out) = (7u32, 0u32, 0u32, 0u32);
            for (dt, a) in steps {
                t += SimDuration::from_ns(dt);
                match a {
                    Act::Take => {
                        eager.advance(t);
                        let (x, y) = (lazy.take_frame(t), eager.take_frame(t));
                        proptest::prop_assert_eq!(x, y);
                        cleaned += u32::from(x);
                    }
                    Act::TakeTx => {
                        let (x, y) = (lazy.take_tx(t), eager.take_tx(t));
                        proptest::prop_assert_eq!(x, y);
                        tx_out -= u32::from(x);
                    }
                    Act::Refill => {
                        rdt += cleaned;
                        cleaned = 0;
                        lazy.write_rdt(t, rdt);
                        eager.write_rdt(t, rdt);
                    }
                    Act::Send(k) => {
                        let k = k.min(7 - tx_out);
                        tdt += k;
                        tx_out += k;
                        lazy.write_tdt(t, tdt);
                        eager.write_tdt(t, tdt);
                    }
                    Act::ReadIcr => proptest::prop_assert_eq!(lazy.read_icr(t), eager.read_icr(t)),
                    Act::Mask(on) => {
                        lazy.write_mask(t, on);
                        eager.write_mask(t, on);
                    }
                    Act::AssertDue => {
                        proptest::prop_assert_eq!(lazy.assert_due(t), eager.assert_due(t))
                    }
                }
            }
            let end = t + SimDuration::from_ns(1);
            lazy.finish(end);
            eager.finish(end);
            let state = |n: &Nic| {
                format!(
                    "{:?}",
                    (
                        (n.clock, n.arrived, &n.fifo, n.dropped, n.hw_descriptors),
                        (n.descriptors_ready, n.last_done, n.done, n.cleaned, n.rdt),
                        (n.icr, n.causes, n.ims, n.asserted, n.last_assert, n.interrupts),
                        (n.tdt, &n.tx_done, n.tx_base, n.tx_given, n.tx_cleaned),
                        (n.tx_signalled, n.tx_last_done, n.transmitted(), n.next_interrupt()),
                    )
                )
            };
            proptest::prop_assert_eq!(state(&lazy), state(&eager));
        }
    }

    #[test]
    fn frames_are_written_back_while_descriptors_last_then_buffered_then_dropped() {
        let mut n = nic(10);
        // 7 descriptors (ring - 1), then a buffer of 4 frames; frames at 10, 20, ... us.
        n.advance(at(70));
        assert_eq!(
            (n.arrived, n.done, n.dropped),
            (7, 6, 0),
            "the 7th is 1 us from done"
        );
        n.advance(at(200));
        assert_eq!(
            (n.arrived, n.done, n.dropped),
            (20, 7, 9),
            "7 done, 4 held, 9 dropped"
        );
        // The driver cleans 7 and gives them back at 200 us: the 4 held frames go at once (after
        // the descriptor fetch, 500 ns apart), the next arrivals find descriptors again.
        for _ in 0..7 {
            assert!(n.take_frame(at(200)));
        }
        assert!(!n.take_frame(at(200)));
        n.write_rdt(at(200), 7 + 7);
        n.advance(at(203));
        assert_eq!(n.done, 11, "the four held frames");
        n.advance(at(212));
        assert_eq!((n.done, n.dropped), (12, 9), "and the one at 210 us");
    }

    #[test]
    fn interrupts_are_throttled_and_masked_until_the_driver_acknowledges() {
        let mut n = nic(10);
        // The first write-back is at 11 us: the interrupt is due then.
        n.advance(at(5));
        assert_eq!(n.next_interrupt(), Some(at(11)));
        assert!(n.assert_due(at(11)));
        assert_eq!(n.next_interrupt(), None, "asserted until ICR is read");
        // The ISR reads ICR at 13 us: causes returned, IMS cleared (auto-mask).
        assert_eq!(n.read_icr(at(13)), ICR_RXT0 | ICR_INT_ASSERTED);
        assert!(!n.ims);
        assert_eq!(n.next_interrupt(), None, "masked while NAPI polls");
        // The poll completes at 30 us and enables IMS: a frame written back at 21 us is
        // pending, but the throttle holds the interrupt to 11 + 50 us.
        n.write_mask(at(30), true);
        assert_eq!(n.next_interrupt(), Some(at(61)));
        assert!(!n.assert_due(at(60)));
        assert!(n.assert_due(at(61)));
        assert_eq!(n.interrupts, 2);
        // ITR written to 0: no throttle; after an acknowledged interrupt the next follows the
        // next write-back.
        n.write_itr(at(62), 0);
        n.read_icr(at(62));
        n.write_mask(at(62), true);
        assert_eq!(n.next_interrupt(), Some(at(71)));
    }

    #[test]
    fn no_traffic_no_interrupt() {
        let mut n = nic(10);
        n.cfg.gap = None;
        n.advance(at(1000));
        assert_eq!(n.next_interrupt(), None);
        assert_eq!(n.read_icr(at(1000)), 0);
        assert!(n.ims, "a read that finds no cause masks nothing");
    }

    #[test]
    fn an_ics_write_interrupts_without_traffic_and_its_cause_reads_back_once() {
        let mut n = nic(10);
        n.cfg.gap = None;
        n.write_ics(at(1000), ICR_RXDMT0);
        assert_eq!(n.next_interrupt(), Some(at(1000)));
        assert!(n.assert_due(at(1000)));
        assert_eq!(n.read_icr(at(1001)), ICR_RXDMT0 | ICR_INT_ASSERTED);
        assert_eq!(n.read_icr(at(1002)), 0, "read clears the causes");
        assert!(!n.ims, "auto-masked by the read that found the interrupt");
        n.write_mask(at(1003), true);
        n.write_ics(at(1003), 0);
        assert_eq!(n.next_interrupt(), None, "a write of no cause sets none");
    }

    #[test]
    fn transmitted_frames_leave_at_wire_speed_are_cleaned_once_written_back_and_interrupt() {
        let mut n = nic(10);
        n.cfg.gap = None;
        // Three descriptors given at 100 us: written back 2 us later, one wire time apart.
        n.write_tdt(at(100), 3);
        assert!(!n.take_tx(at(101)), "not yet written back");
        assert!(n.take_tx(at(102)));
        assert!(
            !n.take_tx(at(102)),
            "the second leaves 672 ns after the first"
        );
        assert!(n.take_tx(at(103)));
        assert!(!n.take_tx(at(103)), "the third at 103.344 us");
        assert!(n.take_tx(at(104)));
        // Each write-back's cause comes after TIDV (8 us).
        assert_eq!(n.next_interrupt(), Some(at(110)));
        assert!(n.assert_due(at(110)));
        assert_eq!(n.read_icr(at(111)), ICR_TXDW | ICR_INT_ASSERTED);
        assert!(!n.take_tx(at(200)), "nothing more given");
        assert_eq!(n.transmitted(), 3);
        // The tail wraps around the ring: 3 -> 1 gives six descriptors.
        n.write_tdt(at(220), 1);
        assert!((0..6).all(|_| n.take_tx(at(230))));
        assert!(!n.take_tx(at(230)));
        assert_eq!(n.transmitted(), 9);
    }
}
