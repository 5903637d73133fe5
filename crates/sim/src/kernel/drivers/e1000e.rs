//! e1000e (drivers/net/e1000e/netdev.c of Linux 2.6.29, driver 0.3.3.3-k6) on the receive
//! path of an 82571/82572: its ISR and its NAPI poll as programs.
//!
//! - `e1000_intr_msi` reads ICR ("read ICR disables interrupts using IAM") and schedules NAPI;
//!   the legacy `e1000_intr` does the same after checking that the interrupt is its own
//!   (ICR.INT_ASSERTED: a shared line).
//! - `e1000_clean` (the poll) runs `e1000_clean_rx_irq`: up to the weight, each written-back
//!   descriptor is cleaned and its frame handed to the stack; every `E1000_RX_BUFFER_WRITE`
//!   (16) cleaned buffers are refilled and the tail written, and the rest at the end. With work
//!   left under the weight, it runs `e1000_set_itr`, `napi_complete` and `e1000_irq_enable`
//!   (an IMS write, then a STATUS read that flushes it).
//! - The watchdog (`e1000_watchdog` -> `e1000_watchdog_task` in `events/0`, every two seconds
//!   on a whole second): with the link steady it reads the 35 statistics registers of
//!   `e1000e_update_stats`, one non-posted read after another, then writes ICS.RXDMT0 "to
//!   ensure Rx ring is cleaned" (an interrupt, and a poll, even without traffic) and re-arms
//!   its timer.

use crate::hw::regs::e1000 as regs;
use crate::kernel::costs::{NetCosts, NetStage};
use crate::kernel::net::{NapiId, NetStep, RxLimit};
use crate::kernel::program::{Builder, Entry, Operand, Step, IRQ_HANDLED};
use crate::kernel::workqueue::DeferredStep;
use crate::kernel::Kernel;

/// The statistics registers `e1000e_update_stats` reads on an 82571/82572, in its order
/// (e1000e `hw.h`, 2.6.29): CRCERRS GPRC GORCL GORCH BPRC MPRC ROC MPC SCC ECOL MCC LATECOL DC
/// XONRXC XONTXC XOFFRXC XOFFTXC GPTC GOTCL GOTCH RNBC RUC MPTC BPTC TPT COLC ALGNERRC RXERRC
/// TNCRS (not on the 82574) CEXTERR TSCTC TSCTFC MGTPTC MGTPRC MGTPDC.
pub const STATS_REGISTERS: [u64; 35] = [
    0x04000, 0x04074, 0x04088, 0x0408C, 0x04078, 0x0407C, 0x040AC, 0x04010, 0x04014, 0x04018,
    0x0401C, 0x04020, 0x04030, 0x04048, 0x0404C, 0x04050, 0x04054, 0x04080, 0x04090, 0x04094,
    0x040A0, 0x040A4, 0x040F0, 0x040F4, 0x040D4, 0x04028, 0x04004, 0x0400C, 0x04034, 0x0403C,
    0x040F8, 0x040FC, 0x040BC, 0x040B4, 0x040B8,
];
/// The watchdog's period: `round_jiffies(jiffies + 2 * HZ)`.
pub const WATCHDOG_SECONDS: u16 = 2;

/// `E1000_RX_BUFFER_WRITE`: cleaned buffers given back at a time.
pub const RX_BUFFER_WRITE: u8 = 16;
/// `IMS_ENABLE_MASK` (RXT0 | TXDW | RXDMT0 | RXSEQ | LSC).
pub const IMS_ENABLE_MASK: u32 = 0x0000_009D;

/// The ISR for adapter `dev` (with NAPI context `napi`) whose registers start at `bar`; `msi`:
/// `e1000_intr_msi`, else the shared-line `e1000_intr`.
pub fn isr(k: &mut Kernel, c: &NetCosts, name: &str, bar: u64, napi: NapiId, msi: bool) -> Entry {
    let icr = k.code.mmio(bar + regs::ICR);
    let mut b = Builder::new();
    b.push(Step::Run(c.isr / 2)).push(Step::Read(icr));
    let test = (!msi).then(|| {
        let at = b.here();
        // "IMS will not auto-mask if INT_ASSERTED is not set, and if it is not set, then the
        // adapter didn't send an interrupt": not ours.
        b.push(Step::BranchIfClear(regs::ICR_INT_ASSERTED, 0));
        at
    });
    b.push(Step::Run(c.isr - c.isr / 2))
        .push(NetStep::NapiSchedule(napi))
        .push(Step::Return(Operand::Const(IRQ_HANDLED)));
    if let Some(at) = test {
        let none = b.here();
        b.patch(at, none);
        b.push(Step::Return(Operand::Const(0)));
    }
    let kind = if msi { "e1000_intr_msi" } else { "e1000_intr" };
    k.code.add(format!("{kind}({name})"), b)
}

/// The NAPI poll `e1000_clean` for adapter `dev`. `transmits`: frames are routed out of this
/// adapter, so its poll cleans its transmit ring first (`e1000_clean_tx_irq`), and a poll that
/// cleaned any reports its whole weight. Frames it receives are forwarded if its `forward_to`
/// says where.
#[allow(clippy::too_many_arguments)]
pub fn poll(
    k: &mut Kernel,
    c: &NetCosts,
    name: &str,
    bar: u64,
    dev: u16,
    napi: NapiId,
    transmits: bool,
) -> Entry {
    let itr_var = k.net.devs[usize::from(dev)].itr_reg;
    let rx = RxRing::of(k, bar, dev);
    let itr = k.code.mmio(bar + regs::ITR);
    let ims = k.code.mmio(bar + regs::IMS);
    let status = k.code.mmio(bar + regs::STATUS);
    let weight = u16::try_from(c.weight).unwrap_or(u16::MAX);
    let mut b = Builder::new();
    b.push(Step::Run(c.poll));
    if transmits {
        clean_tx_ring(&mut b, c, dev, false);
    }
    clean_rx_ring(&mut b, c, &rx, RxLimit::Weight, false);
    // "if (tx_cleaned) work_done = budget;"
    if transmits {
        b.push(NetStep::TxUsesBudget { weight });
    }
    // The whole weight used: stay on the poll list, interrupts still masked.
    let full = b.here();
    b.push(NetStep::RxWeightReached { weight, done: 0 })
        .push(Step::Run(c.complete));
    let set = b.here();
    b.push(NetStep::SetItr { dev, skip: 0 })
        .push(Step::Write(itr, Operand::Var(itr_var)));
    let same = b.here();
    b.patch(set, same);
    b.push(NetStep::NapiComplete(napi))
        .push(Step::Write(ims, Operand::Const(IMS_ENABLE_MASK)))
        .push(Step::Read(status));
    let out = b.here();
    b.patch(full, out);
    b.push(Step::Return(Operand::Local));
    k.code.add(format!("e1000_clean({name})"), b)
}

/// `e1000_clean_tx_irq`'s loop (e1000e and 2.4's e1000 alike): while the next descriptor is
/// written back (DD), free its buffer (`e1000_put_txbuf` / `e1000_unmap_and_free_tx_resource`:
/// unmap, `dev_kfree_skb_any`), at most `E1000_TX_WEIGHT` + 1 frames. `freed_lines`: each
/// frame freed stalls the core before its code (2.4's model: the frame's lines coming from
/// the queuing CPU, `Net::free_lines`).
pub(super) fn clean_tx_ring(b: &mut Builder, c: &NetCosts, dev: u16, freed_lines: bool) {
    let top = b.here();
    b.push(NetStep::TxNext {
        dev,
        max: crate::kernel::net::TX_CLEAN_MAX,
        done: 0,
    });
    let none = b.here();
    b.push(NetStep::CountTx {
        dev,
        none: 0,
        lines: freed_lines,
    });
    code(b, c, c.tx_clean, NetStage::TxClean);
    b.push(Step::Jump(top));
    let done = b.here();
    b.patch(top, done);
    b.patch(none, done);
}

/// An adapter's receive ring as its poll reaches it: the tail register and the variable the
/// driver keeps it in, and where its frames are forwarded.
pub(super) struct RxRing {
    pub dev: u16,
    pub rdt: crate::kernel::program::Mmio,
    pub rdt_var: crate::kernel::program::Var,
    pub forward_to: Option<u16>,
}

impl RxRing {
    /// Adapter `dev`'s ring, its registers at `bar`.
    pub fn of(k: &mut Kernel, bar: u64, dev: u16) -> RxRing {
        let d = &k.net.devs[usize::from(dev)];
        let (rdt_var, forward_to) = (d.rdt, d.forward_to);
        RxRing {
            dev,
            rdt: k.code.mmio(bar + regs::RDT),
            rdt_var,
            forward_to,
        }
    }
}

/// `e1000_clean_rx_irq`'s loop and its end (e1000e and 2.4's e1000 alike): until `limit` (a
/// test jumping out, its target patched here) each written-back descriptor is cleaned, its
/// frame handed to the stack (and forwarded: the route lookup, `ip_forward`, `ip_output`,
/// `dev_queue_xmit` and the qdisc, then the output adapter's `e1000_xmit_frame`); every
/// `E1000_RX_BUFFER_WRITE` cleaned buffers are refilled and the tail written, and at the end
/// the rest. `received_lines`: each frame stalls the core before the stack's code (2.4's
/// model: the lines the chip's DMA left in memory, `Net::rx_miss`).
pub(super) fn clean_rx_ring(
    b: &mut Builder,
    c: &NetCosts,
    r: &RxRing,
    limit: RxLimit,
    received_lines: bool,
) {
    let top = b.here();
    b.push(NetStep::RxNext {
        dev: r.dev,
        limit,
        done: 0,
    });
    let empty = b.here();
    b.push(NetStep::CountFrame {
        dev: r.dev,
        empty: 0,
        lines: received_lines,
    });
    code(b, c, c.rx_packet, NetStage::RxPacket);
    if let Some(out) = r.forward_to {
        code(b, c, c.forward, NetStage::Forward);
        b.push(NetStep::CallXmit(out));
    }
    let due = b.here();
    refill(b, c, r, RX_BUFFER_WRITE);
    let next = b.here();
    b.patch(due, next);
    b.push(Step::Jump(top));
    // The loop's end: the buffers cleaned since the last refill go back.
    let done = b.here();
    b.patch(top, done);
    b.patch(empty, done);
    let rest = b.here();
    refill(b, c, r, 1);
    let refilled = b.here();
    b.patch(rest, refilled);
}

/// A stage's serialising instructions, where the kernel file itemises any (2.4.21's; e1000e's
/// kernels keep them in the CPI, and their programs have no such step).
fn serializing(b: &mut Builder, c: &NetCosts, stage: NetStage) {
    if !c.serializing.of(stage).is_empty() {
        b.push(NetStep::Serializing(stage));
    }
}

/// A stage's `n` instructions an interrupt may cut, with its serialising instructions' stalls
/// where the kernel file itemises any.
fn code(b: &mut Builder, c: &NetCosts, n: u32, stage: NetStage) {
    if c.serializing.of(stage).is_empty() {
        b.push(Step::Code(n));
    } else {
        b.push(NetStep::CodeSerial { n, stage });
    }
}

/// `e1000_alloc_rx_buffers` once `min` buffers wait, and the tail write; its first step skips
/// the rest (target patched by the caller).
fn refill(b: &mut Builder, c: &NetCosts, r: &RxRing, min: u8) {
    b.push(NetStep::RefillDue {
        dev: r.dev,
        min,
        skip: 0,
    })
    .push(Step::Run(c.alloc_rx_buffers))
    .push(NetStep::RxRefill(r.dev))
    .push(Step::Write(r.rdt, Operand::Var(r.rdt_var)));
}

/// The watchdog of the adapter whose registers start at `bar`: its timer's callback
/// (`e1000_watchdog`, which queues the work) and the work (`e1000_watchdog_task`); returns the
/// timer. `wake`: `try_to_wake_up`'s count, for the worker's wake-up.
pub fn watchdog(k: &mut Kernel, c: &NetCosts, name: &str, bar: u64, wake: u32) -> u16 {
    let timer = k.deferred.timers.len() as u16;
    let mut b = Builder::new();
    b.push(Step::Run(c.watchdog_task / 2));
    for off in STATS_REGISTERS {
        let r = k.code.mmio(bar + off);
        b.push(Step::Read(r));
    }
    let ics = k.code.mmio(bar + regs::ICS);
    b.push(Step::Run(c.watchdog_task - c.watchdog_task / 2))
        .push(Step::Write(ics, Operand::Const(regs::ICR_RXDMT0)))
        .push(DeferredStep::ModTimerSeconds {
            timer,
            seconds: WATCHDOG_SECONDS,
        })
        .push(Step::Return(Operand::Const(0)));
    let task = k.code.add(format!("e1000_watchdog_task({name})"), b);
    let work = k.deferred.add_work(&format!("{name} watchdog_task"), task);
    let callback = k.code.add(
        format!("e1000_watchdog({name})"),
        vec![
            Step::Run(c.watchdog + wake),
            DeferredStep::QueueWork(work).into(),
            Step::Return(Operand::Const(0)),
        ]
        .into(),
    );
    let t = k.deferred.add_timer(&format!("{name} watchdog"), callback);
    debug_assert_eq!(t, timer);
    t
}

/// `e1000_xmit_frame` for adapter `dev` (registers at `bar`): one data descriptor for a
/// 64-byte frame, if `e1000_maybe_stop_tx` finds room, then the tail write (`writel` to TDT,
/// posted), all under `spin_trylock_irqsave(&adapter->tx_queue_lock)`: interrupts off from the
/// lock to its release. A frame without room is dropped and counted: the stopped queue (which
/// `e1000_xmit_frame`'s last `e1000_maybe_stop_tx(netdev, MAX_SKB_FRAGS + 2)` would stop
/// earlier) and the qdisc that would hold the frame are not modelled.
pub fn xmit(k: &mut Kernel, c: &NetCosts, name: &str, bar: u64, dev: u16) -> Entry {
    xmit_frame(k, c, name, bar, dev, None)
}

/// `e1000_xmit_frame`'s shape (e1000e and 2.4's e1000 alike): the checks before the lock,
/// then with interrupts off the descriptor and the tail write if the ring has room, else the
/// drop. `locked`: a step run as the lock is taken (2.4's model: the ring's shared lines
/// coming to this CPU).
pub(super) fn xmit_frame(
    k: &mut Kernel,
    c: &NetCosts,
    name: &str,
    bar: u64,
    dev: u16,
    locked: Option<NetStep>,
) -> Entry {
    let tdt_var = k.net.devs[usize::from(dev)].tdt;
    let tdt = k.code.mmio(bar + regs::TDT);
    let mut b = Builder::new();
    b.push(Step::Run(c.xmit / 4));
    if let Some(step) = locked {
        b.push(step);
    }
    b.push(Step::Cli).push(Step::Run(c.xmit - c.xmit / 4));
    serializing(&mut b, c, NetStage::Xmit);
    let reserve = b.here();
    b.push(NetStep::TxReserve { dev, full: 0 })
        .push(Step::Write(tdt, Operand::Var(tdt_var)))
        .push(Step::Sti)
        .push(Step::Return(Operand::Const(0)));
    let full = b.here();
    b.patch(reserve, full);
    b.push(NetStep::TxDrop(dev))
        .push(Step::Sti)
        .push(Step::Return(Operand::Const(0)));
    k.code.add(format!("e1000_xmit_frame({name})"), b)
}
