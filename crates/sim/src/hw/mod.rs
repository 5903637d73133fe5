//! Hardware blocks. Each module holds one block's registers and behaviour; the costs of reaching
//! it are properties of the buses in between ([`bus`], [`pcie`]), put together by the machine's
//! fabric (`machine/fabric.rs`).

pub mod bus;
pub mod cpu;
pub mod ich;
pub mod ioapic;
pub mod lapic;
pub mod msi;
pub mod pcie;
pub mod pic8259;
pub mod regs;
