//! The receive path of Linux 2.6.29's networking core: NAPI (`struct napi_struct`, the
//! per-CPU poll list, `net_rx_action` with its budget of `netdev_budget` packets and two
//! jiffies) and the e1000e driver's state that its programs keep (`drivers/e1000e.rs`): the
//! receive ring's tail, the buffers cleaned since the last refill, and the dynamic interrupt
//! throttling of `e1000_set_itr`.

pub use super::context::NapiId;
use super::costs::NetStage;
use super::ops::{After, Entry, Frame, Op, Var};
use super::softirq::SoftirqState;
use crate::engine::SimDuration;

/// `struct napi_struct`.
#[derive(Clone, Debug)]
pub struct Napi {
    /// NAPI_STATE_SCHED: on a poll list (scheduled and not completed).
    pub scheduled: bool,
    /// The driver's poll function.
    pub poll: Entry,
    /// `n->weight`: the most packets one poll may take.
    pub weight: u32,
    /// The network device it polls (an index into [`Net::devs`]).
    pub dev: u16,
    /// The kernel's `dev->poll` contract (`NapiApi::DevPoll`, 2.4 to 2.6.23): a poll that
    /// leaves the device scheduled returned 1 ("more work") whatever work it did, and
    /// `net_rx_action` moves it to the tail. With `napi_struct` (2.6.24 on) a poll stays
    /// scheduled only when it used its whole weight.
    pub rotate_while_scheduled: bool,
}

/// e1000e's latency classes (`enum latency_range`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Latency {
    Lowest = 0,
    Low = 1,
    Bulk = 2,
}

/// What the e1000e driver keeps of one adapter (`struct e1000_adapter`).
#[derive(Clone, Debug)]
pub struct NetDev {
    pub name: String,
    pub napi: NapiId,
    /// The machine's device the adapter is (for the core's accesses to its ring).
    pub device: u8,
    /// Receive descriptors in the ring.
    pub ring: u32,
    /// The tail the driver last wrote (`rx_ring->next_to_use`), in a variable the RDT write
    /// reads.
    pub rdt: Var,
    /// Buffers cleaned since the last refill (`cleaned_count`).
    pub cleaned: u32,
    /// The frames' bytes (what `total_rx_bytes` adds per packet).
    pub frame_bytes: u32,
    /// `total_rx_packets` / `total_rx_bytes` since the ISR last scheduled the poll.
    pub total_packets: u32,
    pub total_bytes: u32,
    /// InterruptThrottleRate's mode (3: dynamic conservative), `adapter->itr` (interrupts per
    /// second), `adapter->rx_itr`, and the ITR register value the driver writes, in a
    /// variable.
    pub itr_setting: u32,
    pub itr: u32,
    pub rx_itr: Latency,
    pub itr_reg: Var,
    /// Packets the stack received from it.
    pub received: u64,
    /// Transmit descriptors in the ring; the tail the driver last wrote
    /// (`tx_ring->next_to_use`), in a variable the TDT write reads; descriptors given to the
    /// chip and not yet cleaned.
    pub tx_ring: u32,
    pub tdt: Var,
    pub tx_in_use: u32,
    /// `total_tx_packets` / `total_tx_bytes` since the ISR last scheduled the poll (what
    /// `e1000_clean_tx_irq` cleaned), and `adapter->tx_itr`.
    pub tx_total_packets: u32,
    pub tx_total_bytes: u32,
    pub tx_itr: Latency,
    /// Frames `e1000_xmit_frame` found no room for in the ring (dropped: the qdisc that would
    /// hold them is not modelled).
    pub tx_dropped: u64,
    /// IPv4 forwarding: the adapter (index into [`Net::devs`]) every frame received here is
    /// routed out of; `None`: received only (the stack drops what is not for this host).
    pub forward_to: Option<u16>,
    /// `e1000_xmit_frame`'s program for this adapter.
    pub xmit: Entry,
    /// The CPU whose cache last wrote the transmit ring's shared state (`None`: none yet), the
    /// CPU that queued the frames now on the ring (where the lines a frame's free touches come
    /// from), and the CPU whose cache last wrote the route entry's reference count (`dst_hold`
    /// on the queuing CPU, `dst_release` on the freeing one: the line is where it was written
    /// last, and moves only when the other side writes it next).
    pub tx_owner: Option<u8>,
    pub xmit_cpu: Option<u8>,
    pub refcnt_owner: Option<u8>,
    /// The CPU that last wrote the adapter's `struct net_device` line holding `trans_start`
    /// (written by `e1000_xmit_frame` on the queuing CPU) and `last_rx` (written by
    /// `e1000_clean_rx_irq` on the CPU polling the adapter): `None`, nobody yet.
    pub netdev_owner: Option<u8>,
}

/// `e1000_maybe_stop_tx(netdev, count + 2)` for a 64-byte frame without a checksum context
/// (a forwarded frame is CHECKSUM_UNNECESSARY): `count` is 2 (one data descriptor and the
/// one `e1000_xmit_frame` always adds), so four descriptors must be unused.
pub const TX_DESCRIPTORS_NEEDED: u32 = 4;
/// `E1000_TX_WEIGHT` (64): `e1000_clean_tx_irq` stops after `count++ == 64`, 65 frames.
pub const TX_CLEAN_MAX: u8 = 65;

/// `e1000_update_itr` (drivers/net/e1000e/netdev.c, 2.6.29): the next latency class from
/// the packets and bytes of the last interrupt's poll.
pub fn update_itr(itr_setting: Latency, packets: u32, bytes: u32) -> Latency {
    if packets == 0 {
        return itr_setting;
    }
    let per = bytes / packets;
    match itr_setting {
        Latency::Lowest => {
            // "handle TSO and jumbo frames"
            if per > 8000 {
                Latency::Bulk
            } else if packets < 5 && bytes > 512 {
                Latency::Low
            } else {
                itr_setting
            }
        }
        // "50 usec aka 20000 ints/s"
        Latency::Low => {
            if bytes > 10000 {
                if per > 8000 || packets < 10 || per > 1200 {
                    Latency::Bulk
                } else if packets > 35 {
                    Latency::Lowest
                } else {
                    itr_setting
                }
            } else if per > 2000 {
                Latency::Bulk
            } else if packets <= 2 && bytes < 512 {
                Latency::Lowest
            } else {
                itr_setting
            }
        }
        // "250 usec aka 4000 ints/s"
        Latency::Bulk => {
            if bytes > 25000 {
                if packets > 35 {
                    Latency::Low
                } else {
                    itr_setting
                }
            } else if bytes < 6000 {
                Latency::Low
            } else {
                itr_setting
            }
        }
    }
}

/// `adapter->itr` at probe for InterruptThrottleRate 3 (param.c: 20,000 interrupts/s), which
/// `e1000_configure_rx` writes to ITR.
pub const INITIAL_ITR: u32 = 20_000;

/// The ITR register value for `itr` interrupts per second (`1000000000 / (itr * 256)`, in
/// 256 ns units).
pub fn itr_register(itr: u32) -> u32 {
    1_000_000_000 / (itr * 256)
}

impl NetDev {
    /// `e1000_maybe_stop_tx` and the descriptor `e1000_tx_queue` fills: `false` if fewer than
    /// [`TX_DESCRIPTORS_NEEDED`] are unused (`e1000_desc_unused`: the ring less those in use,
    /// less one); else one is taken and the tail variable in `vars` moves on.
    pub fn reserve_tx(&mut self, vars: &mut [u64]) -> bool {
        if self.tx_ring - self.tx_in_use - 1 < TX_DESCRIPTORS_NEEDED {
            return false;
        }
        self.tx_in_use += 1;
        let tdt = &mut vars[usize::from(self.tdt.0)];
        *tdt = (*tdt + 1) % u64::from(self.tx_ring);
        true
    }

    /// `e1000_set_itr` at the end of a poll: the transmit and receive classes from what was
    /// cleaned since the interrupt (with nothing transmitted the transmit class stays at its
    /// start, `lowest_latency`, which conservative mode makes `low_latency`): the new rate, if
    /// it changed (the driver then writes ITR).
    pub fn set_itr(&mut self) -> Option<u32> {
        let conservative = self.itr_setting == 3;
        self.tx_itr = update_itr(self.tx_itr, self.tx_total_packets, self.tx_total_bytes);
        if conservative && self.tx_itr == Latency::Lowest {
            self.tx_itr = Latency::Low;
        }
        self.rx_itr = update_itr(self.rx_itr, self.total_packets, self.total_bytes);
        if conservative && self.rx_itr == Latency::Lowest {
            self.rx_itr = Latency::Low;
        }
        let new_itr = match self.rx_itr.max(self.tx_itr) {
            Latency::Lowest => 70_000,
            Latency::Low => 20_000,
            Latency::Bulk => 4_000,
        };
        if new_itr == self.itr {
            return None;
        }
        // "bias the interrupt rate towards Bulk by adding intermediate steps when interrupt
        // rate is increasing"
        let new_itr = if new_itr > self.itr {
            (self.itr + (new_itr >> 2)).min(new_itr)
        } else {
            new_itr
        };
        self.itr = new_itr;
        Some(itr_register(new_itr))
    }
}

/// The networking core's state.
#[derive(Clone, Debug, Default)]
pub struct Net {
    pub napi: Vec<Napi>,
    pub devs: Vec<NetDev>,
    /// `netdev_budget`: packets one `net_rx_action` may process.
    pub budget: u32,
    /// `net_rx_action` stops once `jiffies` is more than this past its start: 2 with
    /// `napi_struct` (2.6.29: `time_limit = jiffies + 2`, `time_after(jiffies, time_limit)`),
    /// 1 with `dev->poll` (2.4.21: `jiffies - start_time > 1`).
    pub time_limit_jiffies: u64,
    /// Cache lines between CPUs, each a table indexed `from * cpus + to` (zero where `from`
    /// is `to`), built from the platform's `[cpu.coherence]` and the kernel's `[net]` counts:
    /// `free` is what one frame queued on `from` and freed on `to` moves
    /// ([`NetCosts::tx_packet_lines`] overlapped [`NetCosts::tx_packet_lines_in_flight`] at a
    /// time), `hold` what the route entry's reference count costs when a locked RMW on `to`
    /// (`dst_hold` or `dst_release`) finds it last written on `from`
    /// ([`NetCosts::tx_packet_locked_lines`], one after another: a locked operation overlaps no
    /// other miss), `ring` what the transmit ring's shared lines cost when they come to `to`
    /// ([`NetCosts::tx_shared_lines`], taken by `spin_lock`). Only the moves: a locked
    /// instruction's own cycles are its path's (`serializing`). Empty: nothing moves (one CPU,
    /// or no `[cpu.coherence]`).
    ///
    /// [`NetCosts::tx_packet_lines`]: super::costs::NetCosts::tx_packet_lines
    /// [`NetCosts::tx_packet_lines_in_flight`]: super::costs::NetCosts::tx_packet_lines_in_flight
    /// [`NetCosts::tx_packet_locked_lines`]: super::costs::NetCosts::tx_packet_locked_lines
    /// [`NetCosts::tx_shared_lines`]: super::costs::NetCosts::tx_shared_lines
    pub free: Vec<SimDuration>,
    /// What the transmit ring's shared lines cost when they come to `to` from `from` (see
    /// `free` above).
    pub ring: Vec<SimDuration>,
    /// What the route entry's reference count costs when it comes to `to` from `from` (see
    /// `free` above).
    pub hold: Vec<SimDuration>,
    /// What an adapter's `net_device` line (`trans_start`, `last_rx`) costs when it comes to
    /// `to` from `from` ([`NetCosts::netdev_lines`](super::costs::NetCosts::netdev_lines)).
    pub netdev: Vec<SimDuration>,
    pub cpus: usize,
    /// The receive path's reads of lines the chip's DMA left in memory, per frame.
    pub rx_miss: SimDuration,
    /// Per frame, each stage's serialising instructions beyond their slots at the CPI (the
    /// kernel's `[net.serializing]` counts at the CPU's cycles), indexed by
    /// [`super::costs::NetStage`].
    pub serializing: [SimDuration; 4],
}

impl Net {
    /// `table`'s cost of lines last written on `from` coming to `to` (nothing if they are
    /// there, or if nobody wrote them).
    fn moved(&self, table: &[SimDuration], from: Option<u8>, to: u8) -> SimDuration {
        match from {
            Some(f) if f != to && !table.is_empty() => {
                table[usize::from(f) * self.cpus + usize::from(to)]
            }
            _ => SimDuration::ZERO,
        }
    }

    /// A frame queued on `cpu` for adapter `dev` (`e1000_xmit_frame`, and the forward's
    /// `dst_hold` before it): the ring's shared lines come to this CPU if another wrote them
    /// last, the route entry's reference count if another CPU's `dst_release` wrote it last,
    /// and the frames queued are this CPU's.
    pub fn xmit_lines(&mut self, dev: u16, cpu: u8) -> SimDuration {
        let d = &mut self.devs[usize::from(dev)];
        d.xmit_cpu = Some(cpu);
        self.take_refcnt(dev, cpu) + self.take_ring(dev, cpu) + self.take_netdev(dev, cpu)
    }

    /// A frame received from adapter `dev` on `cpu` (`netdev->last_rx = jiffies`): the
    /// adapter's `net_device` line comes to this CPU if another (queuing frames on the
    /// adapter: `trans_start`) wrote it last.
    pub fn rx_lines(&mut self, dev: u16, cpu: u8) -> SimDuration {
        self.take_netdev(dev, cpu)
    }

    /// The adapter's `net_device` line to `cpu`, which now wrote it last: its move's cost.
    fn take_netdev(&mut self, dev: u16, cpu: u8) -> SimDuration {
        let owner = self.devs[usize::from(dev)].netdev_owner.replace(cpu);
        self.moved(&self.netdev, owner, cpu)
    }

    /// `e1000_clean_tx_irq` on `cpu` frees one frame of adapter `dev`: its lines come from
    /// the CPU that queued it, and `dst_release`'s locked decrement takes the route entry's
    /// reference count from whichever CPU wrote it last.
    pub fn free_lines(&mut self, dev: u16, cpu: u8) -> SimDuration {
        let queued_by = self.devs[usize::from(dev)].xmit_cpu;
        self.moved(&self.free, queued_by, cpu) + self.take_refcnt(dev, cpu)
    }

    /// The route entry's reference count to `cpu`, which now wrote it last: its move's cost.
    fn take_refcnt(&mut self, dev: u16, cpu: u8) -> SimDuration {
        let owner = self.devs[usize::from(dev)].refcnt_owner.replace(cpu);
        self.moved(&self.hold, owner, cpu)
    }

    /// Stage `stage`'s serialising instructions for one frame.
    pub fn serializing(&self, stage: super::costs::NetStage) -> SimDuration {
        self.serializing[stage as usize]
    }

    /// The end of `e1000_clean_tx_irq` on `cpu` (`next_to_clean`, the `tx_lock`): the ring's
    /// shared lines come to this CPU if another wrote them last.
    pub fn clean_lines(&mut self, dev: u16, cpu: u8) -> SimDuration {
        self.take_ring(dev, cpu)
    }

    /// The ring's shared lines to `cpu`, which now owns them: their move's cost.
    fn take_ring(&mut self, dev: u16, cpu: u8) -> SimDuration {
        let owner = self.devs[usize::from(dev)].tx_owner.replace(cpu);
        self.moved(&self.ring, owner, cpu)
    }
}

/// One table of [`Net::free`], [`Net::hold`] or [`Net::ring`]: `cost(from, to)` for every pair of `cpus`
/// CPUs, zero on the diagonal.
pub fn line_table(cpus: usize, cost: impl Fn(usize, usize) -> SimDuration) -> Vec<SimDuration> {
    (0..cpus * cpus)
        .map(|i| {
            let (from, to) = (i / cpus, i % cpus);
            if from == to {
                SimDuration::ZERO
            } else {
                cost(from, to)
            }
        })
        .collect()
}

// ---- the operations the networking core's and drivers' programs run -----------------------

/// An operation of the networking core and its drivers (NAPI, the receive and transmit rings)
/// in a program of the step language (`Step::Net`), interpreted here by [`Net::step`]: the
/// step interpreter knows none of them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum NetStep {
    /// `napi_schedule`: unless already scheduled, put the NAPI context on this CPU's poll list
    /// and raise NET_RX_SOFTIRQ; the driver's per-interrupt totals start again (e1000e resets
    /// them when `napi_schedule_prep` succeeds).
    NapiSchedule(NapiId),
    /// `net_rx_action`'s start: the budget of `netdev_budget` packets and the time limit (two
    /// jiffies past the start with `napi_struct`, one with 2.4's `dev->poll`: [`Net::time_limit_jiffies`]).
    ///
    /// [`Net::time_limit_jiffies`]: super::net::Net::time_limit_jiffies
    NetRxBegin,
    /// `net_rx_action`'s loop: the first NAPI context on the poll list into the frame's first
    /// local; none left: go to `done`; budget or time spent: raise NET_RX_SOFTIRQ again and go
    /// to `done` (`softnet_break`).
    NextNapi { done: Entry },
    /// Call the poll function of the NAPI context in the frame's first local.
    CallPoll,
    /// After a poll: the work it returned (the last value) comes off the budget; a context
    /// that used its whole weight goes to the tail of the list.
    AfterPoll,
    /// `napi_complete`: off the poll list, no longer scheduled.
    NapiComplete(NapiId),
    /// The receive loop's test: the poll's work (the frame's first local) has reached the
    /// weight: go to `done`.
    RxWeightReached { weight: u16, done: Entry },
    /// The head of `e1000_clean_rx_irq`'s loop: once the poll's work (the frame's first local)
    /// has reached its `limit`, go to `done`; else the next descriptor of adapter `dev`'s
    /// receive ring, if the chip has written it back (the value: 1 if one was taken, 0 if
    /// not). The ring is host memory that the chip writes by DMA; the core asks the chip how
    /// far it has got.
    RxNext {
        dev: u16,
        limit: RxLimit,
        done: Entry,
    },
    /// The frame [`NetStep::RxNext`] asked for: none written back (the value 0), go to `empty`;
    /// else one frame taken, counted by the poll's work and the adapter's totals. `lines`
    /// (2.4's model): then the core stalls while the lines the chip's DMA took from the
    /// caches come back as the frame's path reads or writes them (`Net::rx_miss`), and the
    /// adapter's `net_device` line if another CPU wrote it last (`Net::rx_lines`).
    CountFrame { dev: u16, empty: Entry, lines: bool },
    /// Go to `skip` unless adapter `dev` has at least `min` cleaned buffers to give back.
    RefillDue { dev: u16, min: u8, skip: Entry },
    /// `e1000_alloc_rx_buffers`' tail update: the cleaned buffers go back to the ring (the new
    /// tail into the adapter's RDT variable, which the next step writes to the chip).
    RxRefill(u16),
    /// `e1000_set_itr`: the new throttle rate into the adapter's ITR variable; unchanged: go to
    /// `skip` (no register write).
    SetItr { dev: u16, skip: Entry },
    /// The head of `e1000_clean_tx_irq`'s loop: `max` frames cleaned (`E1000_TX_WEIGHT`, the
    /// frame's second local), go to `done`; else the next transmit descriptor of adapter
    /// `dev`, if the chip has written it back (the value: 1 or 0).
    TxNext { dev: u16, max: u8, done: Entry },
    /// The descriptor [`NetStep::TxNext`] asked for: not written back (the value 0), go to
    /// `none`; else one transmitted frame cleaned: counted in the frame's second local and the
    /// adapter's totals, its descriptor free again. `lines` (2.4's model): then the core
    /// stalls while the lines of the frame that the queuing CPU wrote come to this one
    /// (`Net::free_lines`).
    CountTx { dev: u16, none: Entry, lines: bool },
    /// `if (tx_cleaned) work_done = budget;` (`e1000_clean`): a poll that cleaned any
    /// transmitted frame reports its whole weight, and so stays on the poll list.
    TxUsesBudget { weight: u16 },
    /// IPv4 forwarding's `dev_hard_start_xmit`: call adapter `dev`'s `e1000_xmit_frame`.
    CallXmit(u16),
    /// `e1000_maybe_stop_tx`: unless enough descriptors are unused (go to `full`), take one:
    /// the adapter's tail variable moves on.
    TxReserve { dev: u16, full: Entry },
    /// A frame `e1000_xmit_frame` had no room for: dropped and counted.
    TxDrop(u16),
    /// `e1000_xmit_frame`'s accesses to adapter `dev`'s transmit ring on this CPU: the core
    /// stalls while the ring's shared lines come from the cache of the CPU that last wrote
    /// them (`Net::xmit_lines`).
    XmitLines(u16),
    /// `e1000_clean_tx_irq`'s end on this CPU: the ring's shared lines (`Net::clean_lines`).
    CleanLines(u16),
    /// A stage's serialising instructions for one frame, beyond their slots at the CPI
    /// (`Net::serializing`): locked RMWs, `rdtsc`, interrupt-flag saves; a stall of the core.
    Serializing(NetStage),
    /// As `Step::Code(n)`, a stage's block whose serialising instructions take
    /// `Net::serializing(stage)` besides (they are among its `n`, and an interrupt cuts them
    /// as it cuts the rest).
    CodeSerial { n: u32, stage: NetStage },
    /// Go to `to` if NAPI context `napi` is scheduled (its adapter is being polled).
    BranchIfNapiScheduled { napi: NapiId, to: Entry },
    /// Linux 2.4 e1000's `e1000_clean` test: a poll that cleaned a transmitted frame (the
    /// frame's second local) or received one (its first) goes to `to` and stays in polling
    /// mode.
    BranchIfPollWorked(Entry),
}

/// What ends a poll's receive loop ([`NetStep::RxNext`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RxLimit {
    /// The NAPI context's weight (`e1000_clean_rx_irq`'s `*work_done >= work_to_do`, e1000e).
    Weight,
    /// 2.4's quota (`e1000_clean`: `work_to_do = min(*budget, dev->quota)`, the quota refilled
    /// to the weight each round): the weight or what is left of `net_rx_action`'s budget.
    Quota,
}

impl NetStep {
    /// Where the operation may go instead of the next step, if it branches.
    pub fn target_mut(&mut self) -> Option<&mut Entry> {
        match self {
            NetStep::TxNext { done: to, .. }
            | NetStep::CountTx { none: to, .. }
            | NetStep::RxNext { done: to, .. }
            | NetStep::CountFrame { empty: to, .. }
            | NetStep::TxReserve { full: to, .. }
            | NetStep::NextNapi { done: to }
            | NetStep::RxWeightReached { done: to, .. }
            | NetStep::RefillDue { skip: to, .. }
            | NetStep::SetItr { skip: to, .. }
            | NetStep::BranchIfNapiScheduled { to, .. }
            | NetStep::BranchIfPollWorked(to) => Some(to),
            _ => None,
        }
    }
}

impl Net {
    /// Run operation `op` of the frame `frame` (its locals), with the kernel's variables, this
    /// CPU's softirq state, the last value read or returned and this CPU's number.
    #[inline(always)]
    pub fn step(
        &mut self,
        op: NetStep,
        frame: &mut Frame,
        vars: &mut [u64],
        softirq: &mut SoftirqState,
        value: u32,
        cpu: u8,
    ) -> After {
        match op {
            NetStep::NapiSchedule(n) => {
                let napi = &mut self.napi[usize::from(n)];
                if !napi.scheduled {
                    napi.scheduled = true;
                    let d = &mut self.devs[usize::from(napi.dev)];
                    (d.total_packets, d.total_bytes) = (0, 0);
                    (d.tx_total_packets, d.tx_total_bytes) = (0, 0);
                    softirq.poll_list.push_back(n);
                    softirq.raise(super::softirq::NET_RX_SOFTIRQ);
                }
            }
            NetStep::NetRxBegin => {
                softirq.net_budget = i64::from(self.budget);
                softirq.net_time_limit =
                    vars[usize::from(super::TICKS.0)] + self.time_limit_jiffies;
            }
            NetStep::NextNapi { done } => match softirq.poll_list.front() {
                None => return After::Goto(done),
                Some(&n) => {
                    let jiffies = vars[usize::from(super::TICKS.0)];
                    if softirq.net_budget <= 0 || jiffies > softirq.net_time_limit {
                        softirq.raise(super::softirq::NET_RX_SOFTIRQ);
                        return After::Goto(done);
                    } else {
                        frame.a = u32::from(n);
                    }
                }
            },
            NetStep::CallPoll => return After::Call(self.napi[frame.a as usize].poll),
            NetStep::AfterPoll => {
                let n = frame.a as u16;
                softirq.net_budget -= i64::from(value);
                let napi = &self.napi[usize::from(n)];
                if napi.scheduled && (value >= napi.weight || napi.rotate_while_scheduled) {
                    unlist(&mut softirq.poll_list, n);
                    softirq.poll_list.push_back(n);
                }
            }
            NetStep::NapiComplete(n) => {
                self.napi[usize::from(n)].scheduled = false;
                unlist(&mut softirq.poll_list, n);
            }
            NetStep::RxWeightReached { weight, done } => {
                if frame.a >= u32::from(weight) {
                    return After::Goto(done);
                }
            }
            NetStep::RxNext { dev, limit, done } => {
                let d = &self.devs[usize::from(dev)];
                let weight = self.napi[usize::from(d.napi)]
                    .weight
                    .min(u32::from(u16::MAX));
                let quota = match limit {
                    RxLimit::Weight => weight,
                    // `work_to_do = min(*budget, dev->quota)`
                    RxLimit::Quota => {
                        weight.min(u32::try_from(softirq.net_budget.max(0)).unwrap_or(u32::MAX))
                    }
                };
                if frame.a >= quota {
                    return After::Goto(done);
                }
                return After::Ask(Op::RxNext(d.device));
            }
            NetStep::CountFrame { dev, empty, lines } => {
                if value & 1 == 0 {
                    return After::Goto(empty);
                }
                frame.a += 1;
                let d = &mut self.devs[usize::from(dev)];
                d.total_packets = d.total_packets.wrapping_add(1);
                d.total_bytes = d.total_bytes.wrapping_add(d.frame_bytes);
                d.cleaned += 1;
                d.received += 1;
                if lines {
                    return After::Stall(self.rx_miss + self.rx_lines(dev, cpu));
                }
            }
            NetStep::RefillDue { dev, min, skip } => {
                if self.devs[usize::from(dev)].cleaned < u32::from(min).max(1) {
                    return After::Goto(skip);
                }
            }
            NetStep::RxRefill(dev) => {
                let d = &mut self.devs[usize::from(dev)];
                let rdt = &mut vars[usize::from(d.rdt.0)];
                *rdt = (*rdt + u64::from(d.cleaned)) % u64::from(d.ring);
                d.cleaned = 0;
            }
            NetStep::SetItr { dev, skip } => {
                let d = &mut self.devs[usize::from(dev)];
                match d.set_itr() {
                    Some(v) => vars[usize::from(d.itr_reg.0)] = u64::from(v),
                    None => return After::Goto(skip),
                }
            }
            NetStep::TxNext { dev, max, done } => {
                if frame.b >= u32::from(max) {
                    return After::Goto(done);
                }
                return After::Ask(Op::TxNext(self.devs[usize::from(dev)].device));
            }
            NetStep::CountTx { dev, none, lines } => {
                if value & 1 == 0 {
                    return After::Goto(none);
                }
                frame.b += 1;
                let d = &mut self.devs[usize::from(dev)];
                d.tx_in_use -= 1;
                // `unsigned int` in the adapter: they wrap as the C does.
                d.tx_total_packets = d.tx_total_packets.wrapping_add(1);
                d.tx_total_bytes = d.tx_total_bytes.wrapping_add(d.frame_bytes);
                if lines {
                    return After::Stall(self.free_lines(dev, cpu));
                }
            }
            NetStep::TxUsesBudget { weight } => {
                if frame.b > 0 {
                    frame.a = u32::from(weight);
                }
            }
            NetStep::CallXmit(dev) => return After::Call(self.devs[usize::from(dev)].xmit),
            NetStep::TxReserve { dev, full } => {
                if !self.devs[usize::from(dev)].reserve_tx(vars) {
                    return After::Goto(full);
                }
            }
            NetStep::TxDrop(dev) => self.devs[usize::from(dev)].tx_dropped += 1,
            // The core stalls on these (lines coming, serialising instructions): folded where
            // nothing can come before the stall ends, as a `Run` is, else an op of their own.
            NetStep::XmitLines(dev) => return After::Stall(self.xmit_lines(dev, cpu)),
            NetStep::CleanLines(dev) => return After::Stall(self.clean_lines(dev, cpu)),
            NetStep::Serializing(stage) => return After::Stall(self.serializing(stage)),
            NetStep::CodeSerial { n, stage } => {
                return After::Ask(Op::CodeStall {
                    n,
                    stall: self.serializing(stage),
                })
            }
            NetStep::BranchIfNapiScheduled { napi, to } => {
                if self.napi[usize::from(napi)].scheduled {
                    return After::Goto(to);
                }
            }
            NetStep::BranchIfPollWorked(to) => {
                if frame.a > 0 || frame.b > 0 {
                    return After::Goto(to);
                }
            }
        }
        After::Next
    }
}

/// Take NAPI context `n` off a poll list (`list_del`).
fn unlist(l: &mut std::collections::VecDeque<NapiId>, n: NapiId) {
    if let Some(i) = l.iter().position(|&x| x == n) {
        l.remove(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An adapter at probe, in dynamic conservative mode at 20,000/s.
    fn adapter() -> NetDev {
        NetDev {
            name: "eth0".into(),
            napi: 0,
            device: 0,
            ring: 256,
            rdt: Var(0),
            cleaned: 0,
            frame_bytes: 64,
            total_packets: 0,
            total_bytes: 0,
            itr_setting: 3,
            itr: 20_000,
            rx_itr: Latency::Low,
            itr_reg: Var(0),
            received: 0,
            tx_ring: 256,
            tdt: Var(0),
            tx_in_use: 0,
            tx_total_packets: 0,
            tx_total_bytes: 0,
            tx_itr: Latency::Lowest,
            tx_dropped: 0,
            forward_to: None,
            xmit: 0,
            tx_owner: None,
            xmit_cpu: None,
            refcnt_owner: None,
            netdev_owner: None,
        }
    }

    #[test]
    fn lines_move_only_between_cpus_per_frame_freed_and_per_batch_handed_over() {
        let ns = SimDuration::from_ns;
        // Two packages of two CPUs: a frame's lines 70 ns within one, 700 ns across; the
        // ring's 10 and 100.
        let across = |a: usize, b: usize| a / 2 != b / 2;
        let mut net = Net {
            devs: vec![adapter()],
            free: line_table(4, |a, b| if across(a, b) { ns(700) } else { ns(70) }),
            ring: line_table(4, |a, b| if across(a, b) { ns(100) } else { ns(10) }),
            cpus: 4,
            ..Net::default()
        };
        assert_eq!(net.free[0], ns(0), "the diagonal is free");
        // A batch of 5 frames queued on cpu0, freed on cpu1: the shared line once each way
        // (the first xmit finds no owner), a frame's lines each.
        let queued = (0..5).fold(ns(0), |t, _| t + net.xmit_lines(0, 0));
        assert_eq!(queued, ns(0), "nobody held the ring before");
        let freed = (0..5).fold(ns(0), |t, _| t + net.free_lines(0, 1));
        assert_eq!(freed, ns(5 * 70));
        assert_eq!(net.clean_lines(0, 1), ns(10));
        assert_eq!(net.xmit_lines(0, 0), ns(10), "the ring's line comes back");
        assert_eq!(net.xmit_lines(0, 0), ns(0), "and stays");
        // Across packages, ten times the cost; on one CPU, nothing.
        assert_eq!(net.free_lines(0, 2), ns(700));
        assert_eq!(net.free_lines(0, 0), ns(0));
        // Without [cpu.coherence], nothing moves.
        net.free.clear();
        assert_eq!(net.free_lines(0, 3), ns(0));
    }

    #[test]
    fn the_route_entrys_count_moves_only_when_the_other_side_wrote_it_last() {
        let ns = SimDuration::from_ns;
        // A one-way flow: frames queued on cpu0, freed on cpu1. The count's line is where it
        // was written last: dst_release on cpu1 takes it there, the next dst_hold on cpu0
        // brings it back; writes in a row on one side move nothing.
        let mut net = Net {
            devs: vec![adapter()],
            free: line_table(2, |_, _| ns(50)),
            hold: line_table(2, |_, _| ns(20)),
            cpus: 2,
            ..Net::default()
        };
        assert_eq!(net.xmit_lines(0, 0), ns(0), "nobody wrote it before");
        assert_eq!(net.xmit_lines(0, 0), ns(0), "cpu0 wrote it last");
        assert_eq!(
            net.free_lines(0, 1),
            ns(50 + 20),
            "the frame's lines and the count"
        );
        assert_eq!(net.free_lines(0, 1), ns(50), "the count stays on cpu1");
        assert_eq!(net.xmit_lines(0, 0), ns(20), "and comes back to cpu0");
        assert_eq!(net.xmit_lines(0, 0), ns(0), "once");
        assert_eq!(net.free_lines(0, 0), ns(0), "queued and freed on cpu0");
        assert_eq!(net.xmit_lines(0, 0), ns(0), "and it stays");
    }

    #[test]
    fn a_net_device_line_moves_to_whichever_core_wrote_it_last() {
        let ns = SimDuration::from_ns;
        // A split flow: cpu0 queues on adapter 0 (trans_start), cpu1 receives from it
        // (last_rx). The line moves on each change of writer, and never on one core.
        let mut net = Net {
            devs: vec![adapter()],
            netdev: line_table(2, |_, _| ns(12)),
            cpus: 2,
            ..Net::default()
        };
        assert_eq!(net.xmit_lines(0, 0), ns(0), "nobody wrote it before");
        assert_eq!(net.rx_lines(0, 1), ns(12), "to the receiving core");
        assert_eq!(net.rx_lines(0, 1), ns(0), "and stays");
        assert_eq!(net.xmit_lines(0, 0), ns(12), "back to the queuing core");
        assert_eq!(
            net.rx_lines(0, 0),
            ns(0),
            "a flow on one core moves nothing"
        );
    }

    #[test]
    fn a_small_frame_flood_holds_at_twenty_thousand_interrupts_a_second_in_conservative_mode() {
        // 64-byte frames, any number per poll: every branch of low_latency keeps or lowers the
        // class, and conservative mode turns lowest into low.
        for packets in [1, 2, 5, 36, 64] {
            let bytes = 64 * packets;
            let class = update_itr(Latency::Low, packets, bytes);
            assert!(class <= Latency::Low, "{packets} packets: {class:?}");
        }
        assert_eq!(update_itr(Latency::Low, 200, 200 * 64), Latency::Lowest);
        assert_eq!(update_itr(Latency::Low, 8, 8 * 1500), Latency::Bulk);
        assert_eq!(update_itr(Latency::Bulk, 4, 4 * 64), Latency::Low);
        assert_eq!(itr_register(20_000), 195, "49.92 us");
        let mut d = NetDev {
            total_packets: 40,
            total_bytes: 40 * 64,
            itr_setting: 3,
            itr: 20_000,
            tx_itr: Latency::Lowest,
            ..adapter()
        };
        assert_eq!(d.set_itr(), None, "stays at 20,000");
        // Dynamic mode (1) lets it climb towards 70,000, a quarter step at a time (an adapter
        // probed in that mode: its transmit class was never raised to low).
        d.itr_setting = 1;
        d.tx_itr = Latency::Lowest;
        d.total_packets = 1;
        d.total_bytes = 64;
        d.rx_itr = Latency::Low;
        assert_eq!(d.set_itr(), Some(itr_register(20_000 + 70_000 / 4)));
    }
}
