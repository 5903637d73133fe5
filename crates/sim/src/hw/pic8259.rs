//! The 8259A programmable interrupt controller and the PC's master/slave pair.
//!
//! Register model from the Intel 8259A datasheet (order no. 231468): IRR, ISR and IMR; ICW1-4
//! initialization; OCW1 (mask), OCW2 (EOI: non-specific, specific, rotate), OCW3 (read IRR or
//! ISR). Fixed priority, IR0 highest, unless rotated. The PC pair cascades the slave's INT
//! output into the master's IR2 (seed 000, Figure 2); the slave answers the second INTA pulse.
//! PIIX/ICH chipsets add ELCR (ports 0x4D0/0x4D1): per-line level sensitivity, set by the BIOS for
//! the lines PCI interrupts are routed to.
//!
//! Every register access is a port I/O; its cost is not modelled here (this is register state)
//! but by the bus the access crosses (the ICH's legacy I/O timing).

use serde::Serialize;

pub const MASTER_CMD: u16 = 0x20;
pub const MASTER_DATA: u16 = 0x21;
pub const SLAVE_CMD: u16 = 0xA0;
pub const SLAVE_DATA: u16 = 0xA1;
pub const ELCR_MASTER: u16 = 0x4D0;
pub const ELCR_SLAVE: u16 = 0x4D1;
/// The master input the slave is cascaded into.
pub const CASCADE_IR: u8 = 2;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
enum InitStep {
    Ready,
    Icw2,
    Icw3,
    Icw4,
}

/// One 8259A.
#[derive(Clone, Debug, Serialize)]
pub struct Pic8259 {
    pub irr: u8,
    pub isr: u8,
    pub imr: u8,
    /// Edge/level control (ELCR): 1 = level-sensitive.
    pub elcr: u8,
    /// Current level of each IR input.
    lines: u8,
    vector_base: u8,
    /// ICW1 SNGL = 0: cascade mode (an ICW3 follows).
    cascaded: bool,
    icw4_needed: bool,
    auto_eoi: bool,
    init: InitStep,
    /// OCW3: read ISR (true) or IRR (false) at A0 = 0.
    read_isr: bool,
    /// The IR with the lowest priority (7 after ICW1; moved by rotate commands).
    lowest_priority: u8,
}

impl Default for Pic8259 {
    fn default() -> Self {
        Pic8259 {
            irr: 0,
            isr: 0,
            imr: 0xFF,
            elcr: 0,
            lines: 0,
            vector_base: 0,
            cascaded: false,
            icw4_needed: false,
            auto_eoi: false,
            init: InitStep::Ready,
            read_isr: false,
            lowest_priority: 7,
        }
    }
}

impl Pic8259 {
    /// IR numbers from highest to lowest priority.
    fn priority_order(&self) -> impl Iterator<Item = u8> {
        let first = (self.lowest_priority + 1) & 7;
        (0..8).map(move |i| (first + i) & 7)
    }

    fn highest(&self, bits: u8) -> Option<u8> {
        self.priority_order().find(|ir| bits & (1 << ir) != 0)
    }

    fn rank(&self, ir: u8) -> u8 {
        (ir + 8 - ((self.lowest_priority + 1) & 7)) & 7
    }

    /// Drive input `ir` to `level`.
    pub fn set_line(&mut self, ir: u8, level: bool) {
        let bit = 1u8 << ir;
        let was = self.lines & bit != 0;
        if level {
            self.lines |= bit;
            if self.elcr & bit != 0 || !was {
                // Level mode: the request follows the line. Edge mode: latch a rising edge.
                self.irr |= bit;
            }
        } else {
            // Level mode: the request follows the line. Edge mode too, until acknowledged: the
            // 8259A datasheet requires IR to stay high until the first INTA, else the CPU gets
            // the default IR7 (a spurious interrupt).
            self.lines &= !bit;
            self.irr &= !bit;
        }
    }

    /// The INT output: an unmasked request of higher priority than everything in service.
    pub fn int_output(&self) -> bool {
        let Some(req) = self.highest(self.irr & !self.imr) else {
            return false;
        };
        match self.highest(self.isr) {
            Some(srv) => self.rank(req) < self.rank(srv),
            None => true,
        }
    }

    /// The first INTA pulse: the highest-priority unmasked request goes in service. `None` is a
    /// spurious interrupt (the request went away before the acknowledge): the 8259A then answers
    /// with IR7's vector and sets no ISR bit.
    pub fn acknowledge(&mut self) -> Option<u8> {
        let ir = self.highest(self.irr & !self.imr)?;
        let bit = 1u8 << ir;
        if !self.auto_eoi {
            self.isr |= bit;
        }
        if self.elcr & bit == 0 {
            self.irr &= !bit;
        }
        Some(ir)
    }

    pub fn vector_for(&self, ir: u8) -> u8 {
        self.vector_base | ir
    }

    /// A port write; `a0` is the low address bit (0x20 vs 0x21).
    pub fn write(&mut self, a0: bool, val: u8) {
        if !a0 && val & 0x10 != 0 {
            // ICW1: start initialization. Clears IMR and ISR, edge mode, lowest priority IR7.
            self.init = InitStep::Icw2;
            self.cascaded = val & 0x02 == 0;
            self.icw4_needed = val & 0x01 != 0;
            self.imr = 0;
            self.isr = 0;
            self.irr &= self.elcr & self.lines;
            self.read_isr = false;
            self.lowest_priority = 7;
            self.auto_eoi = false;
            return;
        }
        match (a0, self.init) {
            (true, InitStep::Icw2) => {
                self.vector_base = val & 0xF8;
                self.init = if self.cascaded {
                    InitStep::Icw3
                } else if self.icw4_needed {
                    InitStep::Icw4
                } else {
                    InitStep::Ready
                };
            }
            (true, InitStep::Icw3) => {
                self.init = if self.icw4_needed {
                    InitStep::Icw4
                } else {
                    InitStep::Ready
                };
            }
            (true, InitStep::Icw4) => {
                self.auto_eoi = val & 0x02 != 0;
                self.init = InitStep::Ready;
            }
            (true, InitStep::Ready) => self.imr = val, // OCW1
            (false, _) if val & 0x08 == 0 => self.ocw2(val),
            (false, _) => {
                // OCW3: RR (bit 1) + RIS (bit 0) select the register read at A0 = 0.
                if val & 0x02 != 0 {
                    self.read_isr = val & 0x01 != 0;
                }
            }
        }
    }

    fn ocw2(&mut self, val: u8) {
        let level = val & 7;
        match val >> 5 {
            0b001 | 0b101 => {
                // Non-specific EOI (0b101 also rotates): clear the highest-priority ISR bit.
                if let Some(ir) = self.highest(self.isr) {
                    self.isr &= !(1 << ir);
                    if val >> 5 == 0b101 {
                        self.lowest_priority = ir;
                    }
                }
            }
            0b011 | 0b111 => {
                // Specific EOI (0b111 also rotates).
                self.isr &= !(1 << level);
                if val >> 5 == 0b111 {
                    self.lowest_priority = level;
                }
            }
            0b110 => self.lowest_priority = level, // set priority
            _ => {}                                // rotate in AEOI mode on/off: not modelled
        }
    }

    /// A port read.
    pub fn read(&self, a0: bool) -> u8 {
        if a0 {
            self.imr
        } else if self.read_isr {
            self.isr
        } else {
            self.irr
        }
    }
}

/// The PC/AT pair: slave INT into master IR2.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PicPair {
    pub master: Pic8259,
    pub slave: Pic8259,
}

impl PicPair {
    /// The chipset's edge/level control registers, as the BIOS sets them (bit n = IRQ n
    /// level-sensitive): port writes, as any software makes them.
    pub fn set_elcr(&mut self, elcr: u16) {
        self.port_write(ELCR_MASTER, elcr as u8);
        self.port_write(ELCR_SLAVE, (elcr >> 8) as u8);
    }

    /// Drive IRQ line 0-15.
    pub fn set_irq(&mut self, irq: u8, level: bool) {
        debug_assert!(irq < 16);
        if irq < 8 {
            self.master.set_line(irq, level);
        } else {
            self.slave.set_line(irq - 8, level);
            self.update_cascade();
        }
    }

    /// The cascade input follows the slave's INT output. It is treated as level-sensitive so that
    /// a second slave request still pending after an EOI is not lost (the ICH's cascade is an
    /// internal wire; QEMU's i8259 re-evaluates it the same way).
    fn update_cascade(&mut self) {
        let out = self.slave.int_output();
        let bit = 1u8 << CASCADE_IR;
        if out {
            self.master.irr |= bit;
            self.master.lines |= bit;
        } else {
            self.master.irr &= !bit;
            self.master.lines &= !bit;
        }
    }

    /// The INTR wire to the CPU.
    pub fn intr(&self) -> bool {
        self.master.int_output()
    }

    /// The CPU's interrupt-acknowledge cycle: returns the vector on the data bus, and the IRQ it
    /// belongs to (or `None` for a spurious interrupt, answered with IR7's vector).
    pub fn interrupt_acknowledge(&mut self) -> (u8, Option<u8>) {
        let r = match self.master.acknowledge() {
            Some(CASCADE_IR) => match self.slave.acknowledge() {
                Some(ir) => (self.slave.vector_for(ir), Some(8 + ir)),
                None => (self.slave.vector_for(7), None),
            },
            Some(ir) => (self.master.vector_for(ir), Some(ir)),
            None => (self.master.vector_for(7), None),
        };
        self.update_cascade();
        r
    }

    /// Port read; `None` if the port is not the PIC's.
    pub fn port_read(&self, port: u16) -> Option<u8> {
        Some(match port {
            MASTER_CMD => self.master.read(false),
            MASTER_DATA => self.master.read(true),
            SLAVE_CMD => self.slave.read(false),
            SLAVE_DATA => self.slave.read(true),
            ELCR_MASTER => self.master.elcr,
            ELCR_SLAVE => self.slave.elcr,
            _ => return None,
        })
    }

    /// Port write; returns false if the port is not the PIC's.
    pub fn port_write(&mut self, port: u16, val: u8) -> bool {
        match port {
            MASTER_CMD => self.master.write(false, val),
            MASTER_DATA => self.master.write(true, val),
            SLAVE_CMD => self.slave.write(false, val),
            SLAVE_DATA => self.slave.write(true, val),
            ELCR_MASTER => self.master.elcr = val & 0xF8, // IRQ0-2 are edge-only on PIIX/ICH
            ELCR_SLAVE => self.slave.elcr = val & 0xDE,   // IRQ8 and IRQ13 are edge-only
            _ => return false,
        }
        self.update_cascade();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn booted() -> PicPair {
        let mut p = PicPair::default();
        p.set_elcr(1 << 10); // IRQ10 level-sensitive, as a BIOS sets a PCI line
        crate::kernel::pic::init_pair(&mut p, 0x20, 0x28);
        p
    }

    /// Linux's `mask_and_ack_8259A` for a slave IRQ: dummy IMR read, IMR write, specific EOI to
    /// the slave, specific EOI to the master's IR2.
    fn mask_and_ack(p: &mut PicPair, irq: u8) {
        let _ = p.port_read(SLAVE_DATA);
        let m = p.slave.imr | (1 << (irq - 8));
        p.port_write(SLAVE_DATA, m);
        p.port_write(SLAVE_CMD, 0x60 + (irq & 7));
        p.port_write(MASTER_CMD, 0x60 + CASCADE_IR);
    }

    #[test]
    fn slave_irq_cascades_through_ir2_and_returns_the_slave_vector() {
        let mut p = booted();
        p.port_write(SLAVE_DATA, !(1 << 2)); // unmask IRQ10
        assert!(!p.intr());
        p.set_irq(10, true);
        assert!(p.intr());
        let (vector, irq) = p.interrupt_acknowledge();
        assert_eq!((vector, irq), (0x2A, Some(10)));
        assert_eq!(p.slave.isr, 1 << 2);
        assert_eq!(p.master.isr, 1 << 2);
        // In service: INTR stays low although the level line is still high.
        assert!(!p.intr());
        mask_and_ack(&mut p, 10);
        assert_eq!((p.slave.isr, p.master.isr), (0, 0));
        assert!(!p.intr(), "masked while the handler runs");
        p.port_write(SLAVE_DATA, p.slave.imr & !(1 << 2)); // enable_8259A_irq
        assert!(
            p.intr(),
            "a level line still asserted after unmask fires again"
        );
        p.set_irq(10, false);
        assert!(
            !p.intr(),
            "deasserting the level line withdraws the request"
        );
    }

    #[test]
    fn masked_lines_do_not_interrupt_and_edges_latch() {
        let mut p = booted();
        p.set_irq(4, true);
        assert!(!p.intr(), "IRQ4 is masked after init");
        p.port_write(MASTER_DATA, !(1 << 2 | 1 << 4));
        assert!(p.intr(), "an edge latched while masked fires on unmask");
        assert_eq!(p.interrupt_acknowledge(), (0x24, Some(4)));
        assert_eq!(p.master.irr & (1 << 4), 0);
        p.port_write(MASTER_CMD, 0x64); // specific EOI for IR4
        assert!(
            !p.intr(),
            "the line is still high: no new edge, no new request"
        );
        p.set_irq(4, false);
        p.set_irq(4, true);
        assert!(p.intr(), "a new rising edge is a new request");
        p.set_irq(4, false);
        assert!(
            !p.intr(),
            "8259A datasheet: an edge request that drops before INTA is not kept"
        );
        assert_eq!(p.interrupt_acknowledge(), (0x27, None), "default IR7");
    }

    #[test]
    fn fixed_priority_and_nesting() {
        let mut p = booted();
        p.port_write(MASTER_DATA, 0);
        p.set_irq(5, true);
        assert_eq!(p.interrupt_acknowledge().1, Some(5));
        p.set_irq(6, true);
        assert!(!p.intr(), "IR6 is lower priority than IR5 in service");
        p.set_irq(3, true);
        assert!(p.intr(), "IR3 preempts IR5");
        assert_eq!(p.interrupt_acknowledge().1, Some(3));
        p.port_write(MASTER_CMD, 0x20); // non-specific EOI clears the highest (IR3)
        assert_eq!(p.master.isr, 1 << 5);
    }

    #[test]
    fn spurious_acknowledge_answers_ir7() {
        let mut p = booted();
        p.port_write(SLAVE_DATA, !(1 << 2));
        p.set_irq(10, true);
        p.set_irq(10, false); // level request withdrawn before the CPU acknowledged it
        let (vector, irq) = p.interrupt_acknowledge();
        assert_eq!((vector, irq), (0x27, None));
        assert_eq!(p.master.isr, 0);
    }

    #[test]
    fn ocw3_selects_irr_or_isr() {
        let mut p = booted();
        p.port_write(MASTER_DATA, 0);
        p.set_irq(1, true);
        assert_eq!(p.port_read(MASTER_CMD), Some(1 << 1)); // IRR after init
        p.interrupt_acknowledge();
        p.port_write(MASTER_CMD, 0x0B); // OCW3: read ISR
        assert_eq!(p.port_read(MASTER_CMD), Some(1 << 1));
        assert_eq!(p.port_read(0x60), None);
    }
}
