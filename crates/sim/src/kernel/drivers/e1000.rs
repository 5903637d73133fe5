//! e1000 7.0.33-k2-NAPI, the driver of Linux 2.4.21-47.EL (RHEL3 U8, mid-2006) for the 82571EB
//! (`drivers/net/e1000/e1000_main.c` of `dduval/kernel-rhel3` at ca67b392; the reading is in
//! `docs/research/linux-2.4.21-rhel3.md`, sections 2 and 4): seed 001's forwarding driver. It
//! shares the chip (`devices/nic.rs`) and the transmit routine's shape with e1000e
//! (`drivers/e1000e.rs`); what differs:
//!
//! - `e1000_intr` on a shared level line: every action on the line runs on every interrupt
//!   (2.4's `handle_IRQ_event`), and each reads its ICR. With interrupt auto-mask (IAM, set for
//!   82571 under CONFIG_E1000_NAPI) a read that finds the interrupt masks the chip;
//!   `atomic_inc(&adapter->irq_sem)` then `__netif_rx_schedule`. A read that finds nothing
//!   ("Not our interrupt") calls `e1000_irq_enable`, whose `atomic_dec_and_test(&irq_sem)`
//!   writes IMS and flushes it (a STATUS read) only while the adapter is not being polled.
//! - `e1000_clean(poll_dev, budget)`: the transmit ring first, then the receive ring up to the
//!   quota; "If no Tx and not enough Rx work done, exit the polling mode": only a poll that
//!   found neither transmitted nor received frames completes and enables interrupts; any other
//!   returns 1 and `net_rx_action` moves it to the tail of the list (2.4's `dev->poll`).
//! - InterruptThrottleRate 8000 (static, `DEFAULT_ITR`, e1000_param.c): ITR = 488, once at
//!   configuration; no dynamic moderation (that came with the November 2006 driver).
//! - No watchdog here: its 35 statistics reads every two seconds per port are ~2e-5 of a core
//!   at seed 001's rates, and 2.4's runs it from the timer softirq, which the model's kernel
//!   does not have without a workqueue.
//!
//! Where the rings' cache lines live: with a flow's receiving and transmitting adapters polled
//! on different CPUs, `e1000_xmit_frame` writes the transmit ring on one and
//! `e1000_clean_tx_irq` frees its frames on the other, so those lines move between the CPUs'
//! caches ([`NetStep::XmitLines`], [`NetStep::CountTx`], [`NetStep::CleanLines`]; the counts in the
//! kernel file's `[net]`, the costs in the platform's `[cpu.coherence]`).

use crate::hw::regs::e1000 as regs;
use crate::kernel::costs::NetCosts;
use crate::kernel::drivers::e1000e::{
    clean_rx_ring, clean_tx_ring, xmit_frame, RxRing, IMS_ENABLE_MASK,
};
use crate::kernel::net::{NapiId, NetStep, RxLimit};
use crate::kernel::program::{Builder, Entry, Operand, Step, IRQ_HANDLED};
use crate::kernel::Kernel;

/// e1000_param.c: `#define DEFAULT_ITR 8000` interrupts a second, static.
pub const DEFAULT_ITR: u32 = 8000;

/// `e1000_intr` for adapter `dev` (NAPI context `napi`, registers at `bar`) on a shared line.
pub fn isr(k: &mut Kernel, c: &NetCosts, name: &str, bar: u64, napi: NapiId) -> Entry {
    let icr = k.code.mmio(bar + regs::ICR);
    let ims = k.code.mmio(bar + regs::IMS);
    let status = k.code.mmio(bar + regs::STATUS);
    let mut b = Builder::new();
    b.push(Step::Run(c.isr / 2)).push(Step::Read(icr));
    let none = b.here();
    // `if (unlikely(!icr))`: not ours.
    b.push(Step::BranchIfClear(u32::MAX, 0))
        .push(Step::Run(c.isr - c.isr / 2))
        .push(NetStep::NapiSchedule(napi))
        .push(Step::Return(Operand::Const(IRQ_HANDLED)));
    let not_ours = b.here();
    b.patch(none, not_ours);
    // e1000_irq_enable: irq_sem back to 0 only if no poll holds it.
    let polled = b.here();
    b.push(NetStep::BranchIfNapiScheduled { napi, to: 0 })
        .push(Step::Write(ims, Operand::Const(IMS_ENABLE_MASK)))
        .push(Step::Read(status));
    let out = b.here();
    b.patch(polled, out);
    b.push(Step::Return(Operand::Const(0)));
    k.code.add(format!("e1000_intr({name})"), b)
}

/// `e1000_clean` for adapter `dev`. `transmits`: frames are routed out of this adapter, so its
/// poll cleans its transmit ring (`e1000_clean_tx_irq`, at most `E1000_TX_WEIGHT` + 1 frames).
/// Frames it receives are forwarded if its `forward_to` says where.
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
    let rx = RxRing::of(k, bar, dev);
    let ims = k.code.mmio(bar + regs::IMS);
    let status = k.code.mmio(bar + regs::STATUS);
    let mut b = Builder::new();
    b.push(Step::Run(c.poll));
    if transmits {
        clean_tx_ring(&mut b, c, dev, true);
        // `tx_ring->next_to_clean = i`, and the `tx_lock` taken to wake a stopped queue.
        b.push(NetStep::CleanLines(dev));
    }
    // e1000_clean_rx_irq: up to `work_to_do = min(*budget, poll_dev->quota)`, each written-back
    // descriptor; every 64-byte frame is copied into a fresh small skb (copybreak,
    // E1000_CB_LENGTH 256) and the ring's buffer given back; refills every
    // E1000_RX_BUFFER_WRITE.
    clean_rx_ring(&mut b, c, &rx, RxLimit::Quota, true);
    // "If no Tx and not enough Rx work done, exit the polling mode": `quit_polling:
    // netif_rx_complete(poll_dev); e1000_irq_enable(adapter); return 0;` else `return 1`.
    let more = b.here();
    b.push(NetStep::BranchIfPollWorked(0))
        .push(Step::Run(c.complete))
        .push(NetStep::NapiComplete(napi))
        .push(Step::Write(ims, Operand::Const(IMS_ENABLE_MASK)))
        .push(Step::Read(status));
    let out = b.here();
    b.patch(more, out);
    b.push(Step::Return(Operand::Local));
    k.code.add(format!("e1000_clean({name})"), b)
}

/// `e1000_xmit_frame` for adapter `dev`: the checks, then under
/// `spin_lock_irqsave(&tx_ring->tx_lock)` (interrupts off) the descriptor and the tail write
/// (`writel` to TDT, posted). The ring's shared lines come to this CPU first. A frame without
/// room is dropped and counted (the driver returns NETDEV_TX_BUSY and the qdisc would hold it;
/// neither the stopped queue nor the qdisc's backlog is modelled: at seed 001's rates the
/// receiving adapter's buffer drops the excess either way).
pub fn xmit(k: &mut Kernel, c: &NetCosts, name: &str, bar: u64, dev: u16) -> Entry {
    xmit_frame(k, c, name, bar, dev, Some(NetStep::XmitLines(dev)))
}
