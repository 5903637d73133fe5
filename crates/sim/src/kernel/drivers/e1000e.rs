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

use crate::devices::nic;
use crate::kernel::costs::NetCosts;
use crate::kernel::net::NapiId;
use crate::kernel::program::{Builder, Entry, Operand, Step, IRQ_HANDLED};
use crate::kernel::Kernel;

/// `E1000_RX_BUFFER_WRITE`: cleaned buffers given back at a time.
pub const RX_BUFFER_WRITE: u8 = 16;
/// `IMS_ENABLE_MASK` (RXT0 | TXDW | RXDMT0 | RXSEQ | LSC).
pub const IMS_ENABLE_MASK: u32 = 0x0000_009D;

/// The ISR for adapter `dev` (with NAPI context `napi`) whose registers start at `bar`; `msi`:
/// `e1000_intr_msi`, else the shared-line `e1000_intr`.
pub fn isr(k: &mut Kernel, c: &NetCosts, name: &str, bar: u64, napi: NapiId, msi: bool) -> Entry {
    let icr = k.code.mmio(bar + nic::ICR);
    let mut b = Builder::new();
    b.push(Step::Run(c.isr / 2)).push(Step::Read(icr));
    let test = (!msi).then(|| {
        let at = b.here();
        // "IMS will not auto-mask if INT_ASSERTED is not set, and if it is not set, then the
        // adapter didn't send an interrupt": not ours.
        b.push(Step::BranchIfClear(nic::ICR_INT_ASSERTED, 0));
        at
    });
    b.push(Step::Run(c.isr - c.isr / 2))
        .push(Step::NapiSchedule(napi))
        .push(Step::Return(Operand::Const(IRQ_HANDLED)));
    if let Some(at) = test {
        let none = b.here();
        b.patch(at, none);
        b.push(Step::Return(Operand::Const(0)));
    }
    let kind = if msi { "e1000_intr_msi" } else { "e1000_intr" };
    k.code.add(format!("{kind}({name})"), b)
}

/// The NAPI poll `e1000_clean` for adapter `dev`.
pub fn poll(k: &mut Kernel, c: &NetCosts, name: &str, bar: u64, dev: u16, napi: NapiId) -> Entry {
    let (rdt_var, itr_var) = {
        let d = &k.net.devs[usize::from(dev)];
        (d.rdt, d.itr_reg)
    };
    let rdt = k.code.mmio(bar + nic::RDT);
    let itr = k.code.mmio(bar + nic::ITR);
    let ims = k.code.mmio(bar + nic::IMS);
    let status = k.code.mmio(bar + nic::STATUS);
    let weight = u16::try_from(c.weight).unwrap_or(u16::MAX);
    let mut b = Builder::new();
    b.push(Step::Run(c.poll));
    // e1000_clean_rx_irq's loop.
    let top = b.here();
    b.push(Step::RxWeightReached { weight, done: 0 })
        .push(Step::RxNext(dev));
    let empty = b.here();
    b.push(Step::BranchIfClear(1, 0))
        .push(Step::CountFrame(dev))
        .push(Step::Code(c.rx_packet));
    let due = b.here();
    b.push(Step::RefillDue {
        dev,
        min: RX_BUFFER_WRITE,
        skip: 0,
    })
    .push(Step::Run(c.alloc_rx_buffers))
    .push(Step::RxRefill(dev))
    .push(Step::Write(rdt, Operand::Var(rdt_var)));
    let next = b.here();
    b.patch(due, next);
    b.push(Step::Jump(top));
    // The loop's end: the buffers cleaned since the last refill go back.
    let done = b.here();
    b.patch(top, done);
    b.patch(empty, done);
    let rest = b.here();
    b.push(Step::RefillDue {
        dev,
        min: 1,
        skip: 0,
    })
    .push(Step::Run(c.alloc_rx_buffers))
    .push(Step::RxRefill(dev))
    .push(Step::Write(rdt, Operand::Var(rdt_var)));
    let refilled = b.here();
    b.patch(rest, refilled);
    // The whole weight used: stay on the poll list, interrupts still masked.
    let full = b.here();
    b.push(Step::RxWeightReached { weight, done: 0 })
        .push(Step::Run(c.complete));
    let set = b.here();
    b.push(Step::SetItr { dev, skip: 0 })
        .push(Step::Write(itr, Operand::Var(itr_var)));
    let same = b.here();
    b.patch(set, same);
    b.push(Step::NapiComplete(napi))
        .push(Step::Write(ims, Operand::Const(IMS_ENABLE_MASK)))
        .push(Step::Read(status));
    let out = b.here();
    b.patch(full, out);
    b.push(Step::Return(Operand::Local));
    k.code.add(format!("e1000_clean({name})"), b)
}
