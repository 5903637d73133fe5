//! Seed 002's driver: "the ISR at the host returns write data back to the FPGA" (the write stops
//! the card's counter), then reads the count back and files it in a histogram: "The histogram
//! ... was created directly in a Linux's ISR". No tasklet.

use super::Registers;
use crate::kernel::program::{Entry, Operand, Step::*, IRQ_HANDLED};
use crate::kernel::Kernel;

/// Probe one card; `bin` is the histogram update's instructions. The ISR's entry.
pub fn probe(k: &mut Kernel, name: &str, r: &Registers, bin: u32) -> Entry {
    let isr_n = k.cost.driver_isr;
    let int_count = k.new_var(0);
    let (signature, count) = (
        k.code.mmio(r.isr_signature_addr),
        k.code.mmio(r.status_addr),
    );
    k.code.add(
        format!("round_trip_isr({name})"),
        vec![
            Run(isr_n),
            Inc(int_count),
            Write(signature, Operand::Var(int_count)),
            Read(count),
            Run(bin),
            Return(Operand::Const(IRQ_HANDLED)),
        ]
        .into(),
    )
}
