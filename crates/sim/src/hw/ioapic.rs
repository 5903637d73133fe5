//! The I/O APIC: 24 redirection entries, indirect register access, level-triggered remote IRR.
//!
//! Register layout from the Intel 82093AA I/O APIC datasheet (order no. 290566): IOREGSEL at
//! offset 0x00 and IOWIN at 0x10 of the 0xFEC0_0000 window; registers ID (0x00), VER (0x01,
//! 0x0017_0011 = 24 entries, version 0x11), redirection table 0x10-0x3F (two 32-bit halves per
//! entry). Entry bits: vector 7:0, delivery mode 10:8, destination mode 11, delivery status 12,
//! polarity 13, remote IRR 14, trigger mode 15, mask 16, destination 63:56.
//!
//! The I/O APIC of the ICH era delivers an interrupt as an upstream memory write to
//! 0xFEEx_xxxx over DMI (ICH10 datasheet 5.9.4), the same format as an MSI, so delivery returns
//! an [`MsiMessage`].

use super::msi::MsiMessage;
use serde::Serialize;

pub const IOAPIC_BASE: u64 = 0xFEC0_0000;
pub const IOREGSEL: u64 = 0x00;
pub const IOWIN: u64 = 0x10;
pub const PINS: u8 = 24;

/// One 64-bit redirection entry.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RedirectionEntry(pub u64);

impl RedirectionEntry {
    const MASK: u64 = 1 << 16;
    const TRIGGER_LEVEL: u64 = 1 << 15;
    const REMOTE_IRR: u64 = 1 << 14;
    const POLARITY_LOW: u64 = 1 << 13;

    /// A fixed-delivery, physical-destination entry as Linux's `setup_IO_APIC_irqs` writes it.
    pub fn new(vector: u8, dest_apic_id: u8, level: bool, active_low: bool, masked: bool) -> Self {
        let mut v = u64::from(vector) | (u64::from(dest_apic_id) << 56);
        if level {
            v |= Self::TRIGGER_LEVEL;
        }
        if active_low {
            v |= Self::POLARITY_LOW;
        }
        if masked {
            v |= Self::MASK;
        }
        RedirectionEntry(v)
    }
    pub fn vector(self) -> u8 {
        self.0 as u8
    }
    pub fn masked(self) -> bool {
        self.0 & Self::MASK != 0
    }
    pub fn level_triggered(self) -> bool {
        self.0 & Self::TRIGGER_LEVEL != 0
    }
    pub fn remote_irr(self) -> bool {
        self.0 & Self::REMOTE_IRR != 0
    }
    pub fn destination(self) -> u8 {
        (self.0 >> 56) as u8
    }
    /// Destination mode (bit 11): logical.
    pub fn logical(self) -> bool {
        self.0 & (1 << 11) != 0
    }
    /// Delivery mode (10:8) 001: lowest priority.
    pub fn lowest_priority(self) -> bool {
        (self.0 >> 8) & 7 == 1
    }
}

/// The I/O APIC.
#[derive(Clone, Debug, Serialize)]
pub struct IoApic {
    pub id: u8,
    ioregsel: u8,
    pub entries: [RedirectionEntry; PINS as usize],
    /// Asserted (logical) level of each pin, after polarity.
    asserted: u32,
}

impl Default for IoApic {
    fn default() -> Self {
        IoApic {
            id: 0,
            ioregsel: 0,
            // Reset state: every entry masked (82093AA 3.2.4).
            entries: [RedirectionEntry(RedirectionEntry::MASK); PINS as usize],
            asserted: 0,
        }
    }
}

impl IoApic {
    /// Drive pin `pin` (already resolved for polarity: `true` = asserted). Returns the message to
    /// send, if this edge/level causes a delivery.
    pub fn set_pin(&mut self, pin: u8, asserted: bool) -> Option<MsiMessage> {
        let bit = 1u32 << pin;
        let was = self.asserted & bit != 0;
        if asserted {
            self.asserted |= bit;
        } else {
            self.asserted &= !bit;
            return None;
        }
        let e = self.entries[usize::from(pin)];
        if e.level_triggered() {
            self.try_deliver_level(pin)
        } else if !was && !e.masked() {
            Some(self.message(pin))
        } else {
            None
        }
    }

    fn message(&self, pin: u8) -> MsiMessage {
        let e = self.entries[usize::from(pin)];
        MsiMessage {
            dest_apic_id: e.destination(),
            vector: e.vector(),
            level_triggered: e.level_triggered(),
            logical: e.logical(),
            lowest_priority: e.lowest_priority(),
        }
    }

    /// A level-triggered pin delivers when asserted, unmasked and not awaiting an EOI (remote
    /// IRR clear); delivery sets remote IRR.
    fn try_deliver_level(&mut self, pin: u8) -> Option<MsiMessage> {
        let i = usize::from(pin);
        let e = self.entries[i];
        if self.asserted & (1 << pin) == 0 || e.masked() || e.remote_irr() {
            return None;
        }
        self.entries[i].0 |= RedirectionEntry::REMOTE_IRR;
        Some(self.message(pin))
    }

    /// An EOI message for `vector` (the Local APIC's broadcast for a level-triggered vector):
    /// clears remote IRR on matching entries; a line still asserted is delivered again.
    pub fn eoi(&mut self, vector: u8) -> Option<MsiMessage> {
        let mut out = None;
        for pin in 0..PINS {
            let e = &mut self.entries[usize::from(pin)];
            if e.level_triggered() && e.vector() == vector && e.remote_irr() {
                e.0 &= !RedirectionEntry::REMOTE_IRR;
                out = out.or(self.try_deliver_level(pin));
            }
        }
        out
    }

    /// MMIO read at `offset` within the I/O APIC window.
    pub fn mmio_read(&self, offset: u64) -> u32 {
        match offset {
            IOREGSEL => u32::from(self.ioregsel),
            IOWIN => self.read_register(self.ioregsel),
            _ => 0,
        }
    }

    /// MMIO write at `offset`; unmasking a level entry whose line is asserted delivers.
    pub fn mmio_write(&mut self, offset: u64, val: u32) -> Option<MsiMessage> {
        match offset {
            IOREGSEL => self.ioregsel = val as u8,
            IOWIN => return self.write_register(self.ioregsel, val),
            _ => {}
        }
        None
    }

    fn read_register(&self, reg: u8) -> u32 {
        match reg {
            0x00 => u32::from(self.id) << 24,
            0x01 => 0x0017_0011,
            0x10..=0x3F => {
                let e = self.entries[usize::from((reg - 0x10) / 2)].0;
                if reg.is_multiple_of(2) {
                    e as u32
                } else {
                    (e >> 32) as u32
                }
            }
            _ => 0,
        }
    }

    fn write_register(&mut self, reg: u8, val: u32) -> Option<MsiMessage> {
        match reg {
            0x00 => self.id = (val >> 24) as u8 & 0x0F,
            0x10..=0x3F => {
                let pin = (reg - 0x10) / 2;
                let e = &mut self.entries[usize::from(pin)].0;
                if reg.is_multiple_of(2) {
                    // Delivery status (12) and remote IRR (14) are read-only.
                    let ro = *e & ((1 << 12) | (1 << 14));
                    *e = (*e & !0xFFFF_FFFF) | (u64::from(val) & !((1 << 12) | (1 << 14))) | ro;
                    if self.entries[usize::from(pin)].level_triggered() {
                        return self.try_deliver_level(pin);
                    }
                } else {
                    *e = (*e & 0xFFFF_FFFF) | (u64::from(val) << 32);
                }
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(io: &mut IoApic, pin: u8, e: RedirectionEntry) {
        io.mmio_write(IOREGSEL, u32::from(0x10 + 2 * pin) + 1);
        io.mmio_write(IOWIN, (e.0 >> 32) as u32);
        io.mmio_write(IOREGSEL, u32::from(0x10 + 2 * pin));
        io.mmio_write(IOWIN, e.0 as u32);
    }

    #[test]
    fn level_pin_delivers_once_until_eoi() {
        let mut io = IoApic::default();
        program(
            &mut io,
            16,
            RedirectionEntry::new(0x59, 0, true, true, false),
        );
        let m = io.set_pin(16, true).expect("delivers");
        assert_eq!((m.vector, m.level_triggered), (0x59, true));
        assert!(io.entries[16].remote_irr());
        assert_eq!(io.set_pin(16, true), None, "remote IRR blocks redelivery");
        assert_eq!(
            io.eoi(0x59).map(|m| m.vector),
            Some(0x59),
            "still asserted at EOI: delivered again"
        );
        io.set_pin(16, false);
        assert_eq!(io.eoi(0x59), None);
        assert!(!io.entries[16].remote_irr());
    }

    #[test]
    fn masked_and_edge_behaviour() {
        let mut io = IoApic::default();
        assert_eq!(io.set_pin(3, true), None, "reset state is masked");
        io.set_pin(3, false);
        program(
            &mut io,
            3,
            RedirectionEntry::new(0x33, 0, false, false, false),
        );
        assert!(io.set_pin(3, true).is_some());
        assert!(io.set_pin(3, true).is_none(), "edge: no new edge");
        io.set_pin(3, false);
        assert!(io.set_pin(3, true).is_some());
    }

    #[test]
    fn register_window_reads_back() {
        let mut io = IoApic::default();
        io.mmio_write(IOREGSEL, 0x01);
        assert_eq!(io.mmio_read(IOWIN) >> 16 & 0xFF, 0x17, "24 entries - 1");
        program(
            &mut io,
            20,
            RedirectionEntry::new(0x61, 1, true, true, true),
        );
        io.mmio_write(IOREGSEL, 0x10 + 40 + 1);
        assert_eq!(io.mmio_read(IOWIN) >> 24, 1);
    }
}
