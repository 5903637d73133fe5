//! Seed 000's exerciser driver (Figures 3-5 of the seed): in legacy mode (Figure 4) the ISR
//! checks the status register, as a shared line needs ("Incase of a shared IRQ Check if the
//! interrupt is ours"), and clears the interrupt; in MSI mode (Figure 5) it does neither. Both
//! write the ISR-entry signature (`int_count`) and schedule the tasklet, whose function writes
//! the tasklet-entry signature.

use super::Registers;
use crate::kernel::program::{Builder, Entry, Operand, Step::*, IRQ_HANDLED};
use crate::kernel::softirq::SoftirqStep::TaskletSchedule;
use crate::kernel::Kernel;

const IRQ_NONE: u32 = 0;

/// Probe one card: build its tasklet and ISR; the ISR's entry.
pub fn probe(k: &mut Kernel, name: &str, r: &Registers, msi_mode: bool) -> Entry {
    let c = &k.cost;
    let (isr_n, tasklet_n, schedule_n) = (c.driver_isr, c.driver_tasklet, c.tasklet_schedule);
    let int_count = k.new_var(0);
    let tasklet_signature = k.code.mmio(r.tasklet_signature_addr);
    let func = k.code.add(
        format!("exerciser_tasklet({name})"),
        vec![
            Run(tasklet_n),
            Write(tasklet_signature, Operand::Var(int_count)),
            Return(Operand::Const(0)),
        ]
        .into(),
    );
    let tasklet = k.tasklet_init(func);
    let mut b = Builder::new();
    b.push(Run(isr_n));
    let mut not_ours = None;
    if !msi_mode {
        b.push(Read(k.code.mmio(r.status_addr)));
        not_ours = Some(b.here());
        b.push(BranchIfClear(r.pending_flag, 0)).push(Write(
            k.code.mmio(r.clear_addr),
            Operand::Const(r.clear_mask),
        ));
    }
    b.push(Inc(int_count))
        .push(Write(
            k.code.mmio(r.isr_signature_addr),
            Operand::Var(int_count),
        ))
        .push(TaskletSchedule(tasklet))
        .push(Run(schedule_n))
        .push(Return(Operand::Const(IRQ_HANDLED)));
    if let Some(at) = not_ours {
        let here = b.here();
        b.patch(at, here);
        b.push(Return(Operand::Const(IRQ_NONE)));
    }
    k.code.add(format!("exerciser_isr({name})"), b)
}
