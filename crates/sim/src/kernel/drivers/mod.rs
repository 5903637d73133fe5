//! Device drivers as programs of the step language (`kernel/program.rs`), one file per driver.
//! A driver's probe builds its ISR (and tasklet) for one device instance, with that device's
//! register addresses as constants, and returns the ISR's entry for `request_irq`. Adding a
//! driver is adding a file here and its name to the scenario schema (`device.N.driver`); the
//! interpreter does not change.

pub mod e1000;
pub mod e1000e;
pub mod exerciser;
pub mod generic;
pub mod port_status;
pub mod round_trip;

/// Where a card's registers are (BAR + offset, from the scenario's device section).
#[derive(Copy, Clone, Debug)]
pub struct Registers {
    /// The status register the ISR reads.
    pub status_addr: u64,
    /// The register whose write clears the interrupt.
    pub clear_addr: u64,
    /// The status bit that says the interrupt is the card's (`IRQ_PENDING_FLAG`).
    pub pending_flag: u32,
    /// What the clear write writes (`IRQ_CLEAR_MASK`).
    pub clear_mask: u32,
    /// Signature writes: ISR entry and tasklet entry (seed 000's Figure 7 layout).
    pub isr_signature_addr: u64,
    pub tasklet_signature_addr: u64,
}
