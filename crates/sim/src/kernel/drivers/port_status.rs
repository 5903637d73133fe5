//! An on-board function's driver on a shared line that reads its status register with port I/O
//! and finds the interrupt is not its own, as uhci-hcd's `uhci_irq` does with `inw(USBSTS)`.

use crate::kernel::program::{Entry, Operand, Step::*};
use crate::kernel::Kernel;

/// Probe the function: its ISR's entry. `instructions`: the ISR's own code.
pub fn probe(k: &mut Kernel, name: &str, port: u16, instructions: u32) -> Entry {
    k.code.add(
        format!("status_isr({name})"),
        vec![Run(instructions), In(port), Return(Operand::Const(0))].into(),
    )
}
