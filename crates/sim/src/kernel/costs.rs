//! Instruction counts of the Linux code paths the model runs, read from `kernels/*.toml`.
//! They are properties of the kernel's code (counted or estimated from the source); the CPU turns
//! them into time with its clock and cycles per instruction.

use serde::{Deserialize, Serialize};

/// Instructions per code path. Each field names the kernel function(s) it covers; the kernel
/// file documents how each was counted.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KernelInstructions {
    /// `irq_entries_start` stub + `common_interrupt` + SAVE_ALL.
    pub entry_stub: u32,
    /// `do_IRQ` up to the flow handler: `irq_enter`, the 4K-stack switch, the descriptor lookup.
    pub do_irq: u32,
    /// Flow-handler bookkeeping around the chip calls and the action chain (`__do_IRQ` or
    /// `handle_{level,fasteoi,edge}_irq`: lock, status bits, kstat).
    pub flow_handler: u32,
    /// `mask_and_ack_8259A` / `enable_8259A_irq` without their port I/Os (lock, cached mask).
    pub i8259_chip_op: u32,
    /// `ack_APIC_irq` and friends without the APIC register accesses.
    pub apic_chip_op: u32,
    /// `handle_IRQ_event` entry and exit.
    pub handle_irq_event: u32,
    /// Per action: the indirect call and the return-value accounting.
    pub per_action: u32,
    /// `note_interrupt` (spurious-IRQ accounting), run after the chain.
    pub note_interrupt: u32,
    /// A driver ISR's own code other than its device accesses.
    pub driver_isr: u32,
    /// `tasklet_schedule`: test-and-set, list append, `raise_softirq_irqoff`.
    pub tasklet_schedule: u32,
    /// `irq_exit` (preempt count, pending check).
    pub irq_exit: u32,
    /// `do_softirq` + `__do_softirq` entry (stack switch, local_irq_enable, loop setup).
    pub do_softirq: u32,
    /// `tasklet_action`: list splice, and per tasklet the trylock / state checks.
    pub tasklet_action: u32,
    /// A tasklet function's own code other than its device accesses.
    pub driver_tasklet: u32,
    /// `ret_from_intr` / RESTORE_ALL before the IRET.
    pub exit_path: u32,
    /// One pass of the idle loop before HLT (`cpu_idle` -> `default_idle` -> `safe_halt`).
    pub idle_loop: u32,
}

/// The periodic local APIC timer interrupt (the scheduler tick) of a kernel whose tick comes from
/// the Local APIC timer. `hz = 0` leaves it out.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TickCosts {
    /// CONFIG_HZ: tick interrupts per second while the CPU is busy (0: no tick modelled).
    pub hz: u32,
    /// LOCAL_TIMER_VECTOR.
    pub vector: u32,
    /// `smp_apic_timer_interrupt` and the tick's work (`tick_handle_periodic` or
    /// `hrtimer_interrupt` -> `update_process_times`, `scheduler_tick`), without the EOI write.
    pub handler: u32,
    /// `run_timer_softirq` when no timer expires, run from `irq_exit` with interrupts on.
    pub timer_softirq: u32,
    /// The spread of the handler's work from tick to tick (expired hrtimers, RCU's and the
    /// scheduler's per-tick work, cache misses): each tick runs a count drawn from a lognormal
    /// whose median is `handler` and whose logarithm has this standard deviation. 0: every tick
    /// runs exactly `handler`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub handler_sigma: f64,
    /// The same for `timer_softirq` (timers that expire in some ticks and not in others).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub timer_softirq_sigma: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// The idle path of a kernel whose idle loop enters idle states through cpuidle
/// (`do_idle` -> `cpuidle_idle_call` -> governor -> driver). Absent: the 2.6 `sti; hlt` loop.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IdleCosts {
    /// From `local_irq_disable` in `do_idle` to the MWAIT: the governor's selection, tick
    /// bookkeeping, the driver's entry.
    pub entry: u32,
    /// From leaving the idle state to `local_irq_enable`: residency accounting, the governor's
    /// update, tick restart. A pending interrupt waits for it (MWAIT is entered with interrupts
    /// off and wakes on a pending interrupt without taking it, Intel SDM vol. 2, MWAIT ECX\[0\]).
    pub exit: u32,
    /// The PM QoS CPU latency limit in microseconds (`/dev/cpu_dma_latency`): idle states whose
    /// exit latency exceeds it are not used. The kernel's default is no constraint,
    /// PM_QOS_CPU_LATENCY_DEFAULT_VALUE = 2000 s (include/linux/pm_qos.h).
    #[serde(default = "no_latency_limit")]
    pub latency_limit_us: f64,
}

fn no_latency_limit() -> f64 {
    2e9
}

/// The scheduler and the timer paths of a kernel that runs tasks besides the idle task (seed
/// 003's kernels): its preemption model and the instruction counts of the paths a task's
/// sleep and wake-up take. Absent: the idle task runs alone, and the tick (if any) is the
/// periodic Local APIC timer.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SchedCosts {
    /// `CONFIG_PREEMPT_*`: where a woken task may take the CPU.
    pub preemption: super::context::Preemption,
    /// `schedule()` -> `context_switch` -> `switch_to` and `finish_task_switch`: picking the
    /// next task, the address-space switch, the register switch.
    pub schedule: u32,
    /// `try_to_wake_up`: the run-queue lock, enqueueing, the preemption check.
    pub try_to_wake_up: u32,
    /// `smp_apic_timer_interrupt` -> `hrtimer_interrupt` without the callbacks: reading the
    /// clock, the base's lock, the expiry loop, `tick_program_event`'s arithmetic.
    pub hrtimer_interrupt: u32,
    /// `sys_clock_nanosleep` -> `hrtimer_nanosleep` -> `do_nanosleep` to `schedule()`:
    /// `hrtimer_init_sleeper`, `hrtimer_start` (the queue insert), the state change.
    pub nanosleep: u32,
    /// `sys_clock_gettime` -> `ktime_get_ts`: the clocksource read and `copy_to_user`.
    pub clock_gettime: u32,
    /// One system call's entry and exit (`sysenter_entry`, the work checks, `sysexit`).
    pub syscall: u32,
    /// keventd's `worker_thread` loop and `run_workqueue` per work besides the work's own
    /// function: `prepare_to_wait`/`finish_wait`, the list lock, `list_del_init`,
    /// `work_clear_pending`, the call.
    pub run_workqueue: u32,
    /// Real-time bandwidth (`/proc/sys/kernel/sched_rt_runtime_us` and `sched_rt_period_us`):
    /// SCHED_FIFO tasks may run `rt_runtime_us` of every `rt_period_us`, then wait for the
    /// period's end (`kernel/sched_rt.c`); -1: unlimited.
    #[serde(default = "rt_runtime_default")]
    pub rt_runtime_us: i64,
    #[serde(default = "rt_period_default")]
    pub rt_period_us: u64,
    /// `sched_rt_period_timer` besides its work: `hrtimer_forward`, the loop over the root
    /// domain's CPUs, the locks.
    #[serde(default = "rt_period_timer_default")]
    pub rt_period_timer: u32,
}

/// kernel/sched.c (2.6.25 on): `int sysctl_sched_rt_runtime = 950000;`.
fn rt_runtime_default() -> i64 {
    950_000
}

/// kernel/sched.c: `unsigned int sysctl_sched_rt_period = 1000000;`.
fn rt_period_default() -> u64 {
    1_000_000
}

fn rt_period_timer_default() -> u32 {
    150
}

/// The -rt patch's threaded interrupt handling (2.6.29-rt: `CONFIG_PREEMPT_HARDIRQS` and
/// `CONFIG_PREEMPT_SOFTIRQS`): a device's hard interrupt only acknowledges and wakes its IRQ
/// thread, which runs the driver's handler; each softirq runs in a thread of its own
/// (`sirq-net-rx/0`, ...). With `enabled = false` (mainline) handlers run in hard-IRQ context
/// and softirqs on the interrupt's exit. Whether softirq handlers are preemptible is the
/// preemption model's: `rt` (PREEMPT_RT's `local_bh_disable` is a per-thread lock), not
/// `preempt` (it raises the preempt count).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Threads {
    pub enabled: bool,
    /// SCHED_FIFO priority of the IRQ threads (`MAX_USER_RT_PRIO/2` = 50).
    pub irq_priority: u8,
    /// SCHED_FIFO priority of the softirq threads: 50 until 2.6.29.5-rt21, 49 after it.
    pub softirq_priority: u8,
    /// Where a sleeper's hrtimer (`hrtimer_wakeup`) runs: in the timer's hard interrupt, or
    /// deferred to the HRTIMER softirq's thread (-rt's softirq split).
    pub hrtimer_wakeup: HrtimerWakeup,
    /// What `hrtimer_start` does with a sleeper already past its expiry on this kernel
    /// without PREEMPT_RT (PREEMPT_RT runs it in place whatever this says):
    /// `next-event` (2.6.29.4-rt17's code) or `run` (mainline's).
    #[serde(default = "past_due_default")]
    pub past_due: super::hrtimer::PastDue,
    /// Instructions of the hard part of a threaded interrupt (`redirect_hardirq`: mark the
    /// descriptor in progress, `wake_up_process` of its thread besides `try_to_wake_up`) and
    /// of the IRQ thread's loop around the handler (`do_irqd` -> `do_hardirq`).
    pub redirect: u32,
    pub irq_thread_loop: u32,
    /// A softirq thread's loop around one handler run (`ksoftirqd` of -rt).
    pub softirq_thread_loop: u32,
}

/// 2.6.29.4-rt17 without PREEMPT_RT ([`super::hrtimer::PastDue::NextEvent`]).
fn past_due_default() -> super::hrtimer::PastDue {
    super::hrtimer::PastDue::NextEvent
}

/// Where a sleeper's hrtimer callback runs in a threaded kernel.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HrtimerWakeup {
    Hardirq,
    Softirq,
}

/// The networking core's receive path and the e1000e driver's, for a kernel with network
/// devices (seed 003): NAPI's constants and the instruction counts of each path.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NetCosts {
    /// Which NAPI interface the kernel has; absent: `napi_struct` (2.6.24 on).
    #[serde(default, skip_serializing_if = "NapiApi::is_napi_struct")]
    pub napi: NapiApi,
    /// `netdev_budget` (net/core/dev.c): packets one `net_rx_action` may process.
    pub netdev_budget: u32,
    /// The driver's NAPI weight (`netif_napi_add(..., e1000_clean, 64)`).
    pub weight: u32,
    /// e1000e's InterruptThrottleRate mode (param.c: 3, dynamic conservative, the default).
    pub itr_setting: u32,
    /// `e1000_intr_msi` / `e1000_intr` besides the ICR read, with `napi_schedule`.
    pub isr: u32,
    /// `net_rx_action`'s entry and exit.
    pub net_rx_action: u32,
    /// Per poll call in `net_rx_action`: the list handling, `netpoll_poll_lock`.
    pub napi_poll: u32,
    /// `e1000_clean`'s own work per poll: `e1000_clean_tx_irq` with nothing to clean, the
    /// receive loop's setup and end.
    pub poll: u32,
    /// Per frame received: `e1000_clean_rx_irq`'s work on one descriptor (unmap, length and
    /// status checks, `eth_type_trans`), the stack (`netif_receive_skb`, `ip_rcv`, the drop of
    /// a packet not for this host) and the refill's allocation and mapping of a new buffer.
    pub rx_packet: u32,
    /// `e1000_alloc_rx_buffers`' own work per call, besides its buffers and the tail write.
    pub alloc_rx_buffers: u32,
    /// `e1000_set_itr`, `napi_complete` and `e1000_irq_enable` besides their register
    /// accesses.
    pub complete: u32,
    /// `run_timer_softirq` per expired timer (detach, `set_running_timer`, the unlock and the
    /// call) with e1000e's callback `e1000_watchdog` -> `schedule_work` -> `queue_work`,
    /// besides the worker's wake-up.
    pub watchdog: u32,
    /// IPv4 forwarding per frame, from `ip_rcv_finish` to the driver: the route cache
    /// lookup, `ip_forward` (TTL, checksum), `ip_output`, the neighbour's cached header,
    /// `dev_queue_xmit` and the qdisc's enqueue, `qdisc_restart` and `dev_hard_start_xmit`.
    pub forward: u32,
    /// `e1000_xmit_frame` for one frame besides the tail write: its checks, the queue lock,
    /// `e1000_tx_map` (`pci_map_single`) and `e1000_tx_queue` (the descriptor, `wmb`).
    pub xmit: u32,
    /// `e1000_clean_tx_irq` per transmitted frame: the descriptor test, `e1000_put_txbuf`
    /// (`pci_unmap_single`, `dev_kfree_skb_any`).
    pub tx_clean: u32,
    /// `e1000_watchdog_task` besides its register accesses: `e1000_has_link` (no PHY access
    /// with the link steady), `e1000e_update_stats`' accumulations and `net_stats` fill,
    /// `e1000e_update_adaptive`, `mod_timer`.
    pub watchdog_task: u32,
    /// Cache lines per received frame the core reads from memory, where the chip's DMA has
    /// left them (the descriptor's share of a line, the header lines the stack reads): each
    /// costs the platform's `[cpu.coherence] memory_line_ns`. Absent: 0 (seed 003's counts
    /// fold them into `rx_packet`).
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub rx_memory_lines: f64,
    /// Cache lines per forwarded frame the core must own before a store of its own completes,
    /// where the chip's DMA took them since the core last wrote them (a transmit descriptor
    /// line the chip fetched or wrote back, a recycled buffer's lines the chip's transmit read
    /// snooped): each a request for ownership at the platform's `[cpu.coherence]
    /// memory_line_ns`, waited for at the next locked instruction, which drains the stores.
    /// Absent: 0.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub rfo_memory_lines: f64,
    /// How many of a frame's memory lines (`rx_memory_lines` and `rfo_memory_lines`) the core
    /// has in flight at once, on average; 1: one after another. Absent: 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub memory_lines_in_flight: f64,
    /// Cache lines of an output device's `struct net_device` that both the core queuing frames
    /// on it (`e1000_xmit_frame`: `netdev->trans_start`) and the core receiving from it
    /// (`e1000_clean_rx_irq`: `netdev->last_rx`) write per frame: when the two are different
    /// cores, the line moves to whichever wrote it last. Absent: 0.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub netdev_lines: u32,
    /// Cache lines of a transmit ring's shared state (its indices, the `tx_lock`, the device's
    /// queue state) that move when the core that queues frames on the ring (`xmit`) is not
    /// the one that cleans it (the transmitting adapter's poll): once each time the other core
    /// touches them, each taken by a locked RMW (`spin_lock`). Absent: 0.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub tx_shared_lines: u32,
    /// Cache lines per frame that move when a frame is freed (`e1000_clean_tx_irq`) on another
    /// core than the one that queued it, by plain loads and stores: the sk_buff the queuing
    /// core wrote, its `skb_shared_info`, the descriptor and `e1000_buffer` shares. Absent: 0.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub tx_packet_lines: u32,
    /// How many of `tx_packet_lines`' misses the freeing core has outstanding at once (the
    /// out-of-order core overlaps misses whose addresses it already has); 1: one after
    /// another. Absent: 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub tx_packet_lines_in_flight: f64,
    /// Cache lines a locked RMW moves each way per frame freed on another core than the one
    /// that queued it (the route entry's reference count: `dst_release` takes it to the
    /// freeing core, the next `dst_hold` back to the queuing one): each move overlaps
    /// nothing. The locked instruction's own cycles are its path's (`serializing`). Absent: 0.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub tx_packet_locked_lines: u32,
    /// Per frame, the instructions of each stage whose cost is the CPU's cycles for them, not
    /// the CPI. Absent: none itemised (their cost is in the CPI).
    #[serde(default, skip_serializing_if = "Serializing::is_empty")]
    pub serializing: Serializing,
}

/// `[net.serializing]`: a forwarded frame's serialising instructions by stage. Each is counted
/// once in its stage's instructions; it costs the platform's cycles for it besides (less its
/// slots at the CPI).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Serializing {
    /// The receive path (`rx_packet`).
    #[serde(default, skip_serializing_if = "Serials::is_empty")]
    pub rx_packet: Serials,
    /// The forward (`forward`).
    #[serde(default, skip_serializing_if = "Serials::is_empty")]
    pub forward: Serials,
    /// `e1000_xmit_frame` (`xmit`).
    #[serde(default, skip_serializing_if = "Serials::is_empty")]
    pub xmit: Serials,
    /// The transmit clean (`tx_clean`).
    #[serde(default, skip_serializing_if = "Serials::is_empty")]
    pub tx_clean: Serials,
}

impl Serializing {
    fn is_empty(&self) -> bool {
        self.stages().iter().all(|(_, s)| s.is_empty())
    }

    /// Each stage with its counts, in [`NetStage`] order.
    pub fn stages(&self) -> [(NetStage, Serials); 4] {
        [
            (NetStage::RxPacket, self.rx_packet),
            (NetStage::Forward, self.forward),
            (NetStage::Xmit, self.xmit),
            (NetStage::TxClean, self.tx_clean),
        ]
    }

    pub fn of(&self, stage: NetStage) -> Serials {
        self.stages()[stage as usize].1
    }
}

/// One stage's serialising instructions per frame.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Serials {
    /// Locked read-modify-writes (the CPU's `locked_rmw_cycles`).
    #[serde(default)]
    pub locked: u32,
    /// `rdtsc` (the CPU's `rdtsc_cycles`).
    #[serde(default)]
    pub rdtsc: u32,
    /// `local_irq_save` / `local_irq_restore` pairs (the CPU's `irq_save_restore_cycles`).
    #[serde(default)]
    pub irq_saves: u32,
}

impl Serials {
    pub fn is_empty(&self) -> bool {
        self.locked == 0 && self.rdtsc == 0 && self.irq_saves == 0
    }
}

/// A stage of a forwarded frame's path that has serialising instructions of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum NetStage {
    RxPacket,
    Forward,
    Xmit,
    TxClean,
}

impl NetStage {
    /// The stage's key in `[net.serializing]`.
    pub fn name(self) -> &'static str {
        match self {
            NetStage::RxPacket => "rx_packet",
            NetStage::Forward => "forward",
            NetStage::Xmit => "xmit",
            NetStage::TxClean => "tx_clean",
        }
    }
}

/// The kernel's NAPI interface: how `net_rx_action` and a driver's poll share the work. It
/// changed in 2.6.24 (the `napi_struct` rework); the three differences the model runs are
/// these.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum NapiApi {
    /// 2.6.24 and later (`struct napi_struct`): `n->poll(n, weight)` returns the work it did,
    /// and only a poll that used its whole weight stays on the list and goes to its tail;
    /// `net_rx_action` stops at `netdev_budget` packets or once `jiffies` passes its start
    /// + 2 (`time_limit = jiffies + 2`).
    #[default]
    NapiStruct,
    /// 2.4 to 2.6.23: `dev->poll(dev, &budget)` takes at most min(*budget, `dev->quota`) (the
    /// quota refilled to the weight each round), returns 1 while it has more work, and
    /// `net_rx_action` moves a device that returned 1 to the tail; it stops once `jiffies -
    /// start_time > 1` (2.4.21 net/core/dev.c; docs/research/linux-2.4.21-rhel3.md, section 3).
    DevPoll,
}

impl NapiApi {
    /// The name a kernel file gives it (`[net] napi`).
    pub fn name(self) -> &'static str {
        match self {
            NapiApi::NapiStruct => "napi-struct",
            NapiApi::DevPoll => "dev-poll",
        }
    }

    fn is_napi_struct(&self) -> bool {
        *self == NapiApi::NapiStruct
    }

    /// How many jiffies past its start `net_rx_action` may run.
    pub fn time_limit_jiffies(self) -> u64 {
        match self {
            NapiApi::NapiStruct => 2,
            NapiApi::DevPoll => 1,
        }
    }
}

fn one() -> f64 {
    1.0
}

fn is_one(v: &f64) -> bool {
    *v == 1.0
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}
