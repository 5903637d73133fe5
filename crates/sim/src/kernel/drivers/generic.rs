//! A typical device's ISR: its own instructions, `status_reads` register reads, then a write
//! that clears the interrupt. A source of other interrupts on the CPU.

use super::Registers;
use crate::kernel::program::{Entry, Operand, Step, IRQ_HANDLED};
use crate::kernel::Kernel;

/// Probe one card. The ISR's entry.
pub fn probe(
    k: &mut Kernel,
    name: &str,
    r: &Registers,
    instructions: u32,
    status_reads: u8,
) -> Entry {
    let mut s = vec![Step::Run(k.cost.driver_isr + instructions)];
    s.extend((0..status_reads).map(|_| Step::Read(k.code.mmio(r.status_addr))));
    s.push(Step::Write(
        k.code.mmio(r.clear_addr),
        Operand::Const(r.clear_mask),
    ));
    s.push(Step::Return(Operand::Const(IRQ_HANDLED)));
    k.code.add(format!("generic_isr({name})"), s.into())
}
