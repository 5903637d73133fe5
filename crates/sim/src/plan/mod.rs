//! `irqlab plan`: what seed 001's rules say to set, worked out on a platform's model.
//! `swizzle`: the INTXSWZCTRL values of an Intel 5000's root ports that spread INTx over the
//! four system interrupts. `affinity`: static IRQ affinity for NIC flows by the seed's three
//! rules. `simulate`: a plan's forwarding throughput on a scenario of the platform.

pub mod affinity;
pub mod simulate;
pub mod swizzle;
