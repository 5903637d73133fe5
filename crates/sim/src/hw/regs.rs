//! Register maps as the datasheets give them: the contract between a device's model
//! (`devices/`) and the code written against it (`kernel/drivers/`, `kernel/freebsd.rs`), as a
//! real driver carries its own header of its device's registers. The model of the device and
//! the driver both read the map here; neither reaches into the other.

/// Intel's 8257x GbE controllers (82571EB/82572EI datasheet; Linux 2.6.29's e1000e `hw.h`,
/// 2.4.21's e1000 `e1000_hw.h` name the same offsets).
pub mod e1000 {
    /// Register offsets in BAR 0 (e1000e `hw.h`).
    pub const STATUS: u64 = 0x0008;
    pub const ICR: u64 = 0x00C0;
    pub const ITR: u64 = 0x00C4;
    /// Interrupt Cause Set: a write sets the causes it names, as if the events had happened.
    pub const ICS: u64 = 0x00C8;
    pub const IMS: u64 = 0x00D0;
    pub const IMC: u64 = 0x00D8;
    pub const RDT: u64 = 0x2818;
    /// Transmit descriptor tail.
    pub const TDT: u64 = 0x3818;
    /// ICR.TXDW: a transmit descriptor written back.
    pub const ICR_TXDW: u32 = 0x01;
    /// ICR.RXT0: receiver timer interrupt (a descriptor written back).
    pub const ICR_RXT0: u32 = 0x80;
    /// ICR.RXDMT0: receive descriptors below the minimum threshold (e1000e's watchdog sets it
    /// through ICS "to ensure Rx ring is cleaned").
    pub const ICR_RXDMT0: u32 = 0x10;
    /// ICR.INT_ASSERTED (82571 and later): an interrupt was asserted.
    pub const ICR_INT_ASSERTED: u32 = 0x8000_0000;
    /// STATUS.LU: link up; FD: full duplex; 1000 Mb/s.
    pub const STATUS_LINK_UP_1000_FD: u32 = 0x0000_0083;
}

/// The MC146818 real-time clock (and the PC's CMOS behind the same two ports).
pub mod mc146818 {
    /// The index and data ports.
    pub const PORTS: (u16, u16) = (0x70, 0x71);
    /// Register C: the interrupt flags; reading it clears them and the IRQ line.
    pub const REG_C: u8 = 0x0C;
    /// Register C's periodic-interrupt flag (`RTCIR_PERIOD`).
    pub const PERIODIC_FLAG: u32 = 0x40;
}
