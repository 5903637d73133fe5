//! The I/O controller hub's interrupt block: PIRQ routing, the 8259A pair, the IO-APIC, and the
//! time its internal logic takes to service a request.
//!
//! Sources: Intel ICH9 datasheet (316972), 5.8 (8259 PICs), 5.9 (APIC; 5.9.3 "PCI Express
//! interrupts are delivered as INTx messages ... translated to internal assertions of
//! INTA#-INTD#"), and the PIRQx_ROUT registers (D31:F0 0x60-0x63, 0x68-0x6B): bit 7 IRQEN = 0
//! routes PIRQx to the 8259 IRQ in bits 3:0; PIRQA-H always drive IO-APIC pins 16-23. The ICH
//! maps the INTx messages arriving over DMI to PIRQA-D by pin.

use super::ioapic::IoApic;
use super::msi::MsiMessage;
use super::pic8259::PicPair;
use crate::engine::{SimDuration, SimTime};

/// A PIRQ line with no wire to the IO-APIC.
pub const NOT_WIRED: u8 = u8::MAX;

/// Clocks of the hub's internal (PCI-clock) logic for each kind of request.
#[derive(Clone, Debug)]
pub struct IchTiming {
    pub internal_clock_hz: f64,
    /// An I/O read or write of an 8259 register.
    pub legacy_io_clocks: u32,
    /// The interrupt-acknowledge sequence (two INTA pulses) answering the CPU's INTA cycle.
    pub intack_clocks: u32,
    /// An IO-APIC register access through IOREGSEL/IOWIN.
    pub ioapic_access_clocks: u32,
    /// From a pin change to the IO-APIC's interrupt write leaving for DMI.
    pub ioapic_delivery_clocks: u32,
}

/// What an INTx change inside the hub produced.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct IntxEffect {
    /// The IO-APIC wants to deliver this message.
    pub ioapic_message: Option<MsiMessage>,
}

pub struct Ich {
    pub pics: PicPair,
    pub ioapic: IoApic,
    /// PIRQA..H routing registers.
    pub pirq_rout: [u8; 8],
    pub timing: IchTiming,
    period: SimDuration,
    /// The IO-APIC pin each PIRQ drives (16-23 on the ICH).
    /// The IO-APIC pin each PIRQ line drives ([`NOT_WIRED`]: none), from the board's wires.
    pub pirq_ioapic_pin: [u8; 8],
    /// Number of INTx sources asserting each PIRQ (PCI lines are wired-OR, active low).
    pirq_asserted: [u8; 8],
}

/// Bit 7 of PIRQx_ROUT: set = not routed to the 8259.
pub const PIRQ_ROUT_DISABLE: u8 = 0x80;
/// The ICH's fixed wiring of PIRQA..H to IO-APIC pins 16-23 (ICH9 datasheet 5.9).
pub const ICH_PIRQ_IOAPIC_PINS: [u8; 8] = [16, 17, 18, 19, 20, 21, 22, 23];

impl Ich {
    pub fn new(timing: IchTiming, pirq_rout: [u8; 8], pirq_ioapic_pin: [u8; 8]) -> Self {
        let period = SimDuration::period_of(timing.internal_clock_hz);
        Ich {
            pics: PicPair::default(),
            ioapic: IoApic::default(),
            pirq_rout,
            timing,
            period,
            pirq_ioapic_pin,
            pirq_asserted: [0; 8],
        }
    }

    /// When a request arriving at `now` that needs `clocks` internal clocks is done: the logic
    /// starts on its next clock edge.
    pub fn service_done(&self, now: SimTime, clocks: u32) -> SimTime {
        now.next_edge(self.period) + self.period * u64::from(clocks)
    }

    /// The IO-APIC's delivery delay, from a pin change.
    pub fn ioapic_delivery_done(&self, now: SimTime) -> SimTime {
        self.service_done(now, self.timing.ioapic_delivery_clocks)
    }

    /// An Assert_INTx / Deassert_INTx for `pirq` (0 = PIRQA) arrives.
    pub fn intx(&mut self, pirq: u8, assert: bool) -> IntxEffect {
        let n = &mut self.pirq_asserted[usize::from(pirq)];
        let was = *n > 0;
        if assert {
            *n += 1;
        } else {
            *n = n.saturating_sub(1);
        }
        if (*n > 0) == was {
            return IntxEffect::default();
        }
        // PCI interrupt lines are wired-OR: an 8259 input or IO-APIC pin is asserted while any
        // PIRQ routed to it is.
        let asserted = |j: usize, on: &dyn Fn(usize) -> bool| on(j) && self.pirq_asserted[j] > 0;
        let rout = self.pirq_rout[usize::from(pirq)];
        if rout & PIRQ_ROUT_DISABLE == 0 {
            let irq = rout & 0x0F;
            let routed = |j: usize| {
                self.pirq_rout[j] & PIRQ_ROUT_DISABLE == 0 && self.pirq_rout[j] & 0x0F == irq
            };
            let level = (0..8).any(|j| asserted(j, &routed));
            self.pics.set_irq(irq, level);
        }
        let pin = self.pirq_ioapic_pin[usize::from(pirq)];
        if pin == NOT_WIRED {
            return IntxEffect {
                ioapic_message: None,
            };
        }
        let wired = |j: usize| self.pirq_ioapic_pin[j] == pin;
        let level = (0..8).any(|j| asserted(j, &wired));
        IntxEffect {
            ioapic_message: self.ioapic.set_pin(pin, level),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ich() -> Ich {
        let t = IchTiming {
            internal_clock_hz: 33.333_333e6,
            legacy_io_clocks: 4,
            intack_clocks: 4,
            ioapic_access_clocks: 4,
            ioapic_delivery_clocks: 4,
        };
        // PIRQA -> IRQ11, PIRQB -> IRQ10, others not routed.
        let mut r = [PIRQ_ROUT_DISABLE; 8];
        r[0] = 11;
        r[1] = 10;
        Ich::new(t, r, ICH_PIRQ_IOAPIC_PINS)
    }

    #[test]
    fn pirq_reaches_the_8259_line_it_is_routed_to() {
        let mut h = ich();
        h.pics.set_elcr(1 << 11);
        crate::kernel::pic::init_pair(&mut h.pics, 0x20, 0x28);
        h.pics.port_write(0xA1, !(1 << 3));
        assert_eq!(
            h.intx(0, true),
            IntxEffect::default(),
            "IO-APIC pins are masked"
        );
        assert!(h.pics.intr());
        assert_eq!(h.pics.interrupt_acknowledge(), (0x2B, Some(11)));
    }

    #[test]
    fn wired_or_lines_drop_only_when_every_source_deasserts() {
        let mut h = ich();
        h.pics.set_elcr(1 << 11);
        crate::kernel::pic::init_pair(&mut h.pics, 0x20, 0x28);
        h.intx(0, true);
        h.intx(0, true);
        h.intx(0, false);
        assert_eq!(
            h.pics.slave.irr & (1 << 3),
            1 << 3,
            "still asserted by one source"
        );
        h.intx(0, false);
        assert_eq!(h.pics.slave.irr & (1 << 3), 0);
    }

    #[test]
    fn pirqs_sharing_an_8259_line_or_an_ioapic_pin_are_wired_or() {
        let mut h = ich();
        h.pirq_rout[2] = 11; // PIRQC joins PIRQA on IRQ11
        h.pirq_ioapic_pin[2] = 16; // and on IO-APIC pin 16
        h.pics.set_elcr(1 << 11);
        crate::kernel::pic::init_pair(&mut h.pics, 0x20, 0x28);
        h.intx(0, true);
        h.intx(2, true);
        h.intx(0, false);
        assert_eq!(
            h.pics.slave.irr & (1 << 3),
            1 << 3,
            "PIRQC still holds IRQ11"
        );
        h.intx(2, false);
        assert_eq!(h.pics.slave.irr & (1 << 3), 0);
    }

    #[test]
    fn service_starts_on_an_internal_clock_edge() {
        let h = ich();
        let p = h.period.as_ps();
        assert_eq!(h.service_done(SimTime::from_ps(1), 4).as_ps(), p + 4 * p);
    }
}
