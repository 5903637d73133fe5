//! Softirqs and tasklets (Linux `kernel/softirq.c`): `raise_softirq` sets a pending bit;
//! `irq_exit` runs pending softirqs when not nested in another interrupt; `__do_softirq` runs
//! with interrupts enabled and restarts up to `MAX_SOFTIRQ_RESTART` (10) times before leaving
//! the rest to ksoftirqd.

use std::collections::VecDeque;

pub const HI_SOFTIRQ: u32 = 0;
pub const TIMER_SOFTIRQ: u32 = 1;
pub const NET_TX_SOFTIRQ: u32 = 2;
pub const NET_RX_SOFTIRQ: u32 = 3;
pub const TASKLET_SOFTIRQ: u32 = 6;
/// 2.6.29's `HRTIMER_SOFTIRQ` (-rt's deferred hrtimer callbacks).
pub const HRTIMER_SOFTIRQ: u32 = 7;
/// Softirq numbers this model uses a thread slot for.
pub const NR_SOFTIRQS: usize = 8;
/// `kernel/softirq.c`: restarts of the softirq loop before deferring to ksoftirqd.
pub const MAX_SOFTIRQ_RESTART: u8 = 10;

/// A softirq's name as -rt names its thread (`softirq_names` of kernel/softirq.c).
pub fn name(nr: u32) -> &'static str {
    match nr {
        HI_SOFTIRQ => "high",
        TIMER_SOFTIRQ => "timer",
        NET_TX_SOFTIRQ => "net-tx",
        NET_RX_SOFTIRQ => "net-rx",
        TASKLET_SOFTIRQ => "tasklet",
        HRTIMER_SOFTIRQ => "hrtimer",
        _ => "other",
    }
}

/// Index of a tasklet in the kernel's tasklet table.
pub type TaskletId = u16;

/// A tasklet: `func` is code a driver registered.
#[derive(Clone, Debug)]
pub struct Tasklet {
    /// TASKLET_STATE_SCHED: queued and not yet run (scheduling again is a no-op).
    pub scheduled: bool,
    /// The tasklet function: a program a driver registered.
    pub func: super::Entry,
}

/// Per-CPU softirq state.
#[derive(Clone, Debug, Default)]
pub struct SoftirqState {
    pub pending: u32,
    /// `tasklet_vec`: tasklets scheduled on this CPU, in order.
    pub tasklet_vec: VecDeque<TaskletId>,
    /// The list `tasklet_action` spliced off and is running.
    pub tasklet_running: VecDeque<TaskletId>,
    /// `softnet_data.poll_list`: NAPI contexts scheduled on this CPU, in order.
    pub poll_list: VecDeque<super::context::NapiId>,
    /// `net_rx_action`'s budget left and its time limit (in jiffies, the tick count).
    pub net_budget: i64,
    pub net_time_limit: u64,
}

impl SoftirqState {
    pub fn raise(&mut self, nr: u32) {
        self.pending |= 1 << nr;
    }
}
