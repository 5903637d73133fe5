//! The Local APIC's interrupt-acceptance state: IRR, ISR and TMR per vector, the task priority,
//! and EOI.
//!
//! Source: Intel SDM vol. 3, chapter 11 (10 in older editions): a vector's priority class is
//! vector >> 4; the processor priority is the higher of the TPR class and the highest in-service
//! class; an interrupt is dispatched only if its class is above that. EOI clears the highest ISR
//! bit and, if the vector was accepted level-triggered (TMR set), the Local APIC sends an EOI
//! message to the I/O APICs (11.8.5).

use serde::Serialize;

pub const REG_ID: u32 = 0x20;
pub const REG_TPR: u32 = 0x80;
pub const REG_EOI: u32 = 0xB0;
pub const REG_TMR_BASE: u32 = 0x180;
/// The interrupt command register: a write to the low half sends the IPI it describes, to the
/// destination in bits 31:24 of the high half (SDM vol. 3, 10.6.1).
pub const REG_ICR_LOW: u32 = 0x300;
pub const REG_ICR_HIGH: u32 = 0x310;
/// The physical destination that every Local APIC accepts (xAPIC broadcast).
pub const BROADCAST_ID: u8 = 0xFF;

#[derive(Clone, Copy, Debug, Default, Serialize)]
struct Bits256([u64; 4]);

impl Bits256 {
    fn set(&mut self, v: u8) {
        self.0[usize::from(v >> 6)] |= 1 << (v & 63);
    }
    fn clear(&mut self, v: u8) {
        self.0[usize::from(v >> 6)] &= !(1 << (v & 63));
    }
    fn get(&self, v: u8) -> bool {
        self.0[usize::from(v >> 6)] & (1 << (v & 63)) != 0
    }
    fn highest(&self) -> Option<u8> {
        (0..4).rev().find_map(|w| {
            let x = self.0[w];
            (x != 0).then(|| (w as u8) * 64 + (63 - x.leading_zeros() as u8))
        })
    }
    fn word32(&self, i: usize) -> u32 {
        (self.0[i / 2] >> ((i % 2) * 32)) as u32
    }
}

/// One CPU's Local APIC.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LocalApic {
    pub id: u8,
    /// Software-enabled (SVR bit 8). Linux's XT-PIC configuration runs without it.
    pub enabled: bool,
    irr: Bits256,
    isr: Bits256,
    tmr: Bits256,
    pub tpr: u8,
    /// The logical destination register's ID (flat model: one bit per CPU, as Linux's
    /// `flat_init_apic_ldr` sets `1 << cpu`).
    pub ldr: u8,
    /// The high half of the interrupt command register (the next IPI's destination).
    pub icr_high: u32,
}

impl LocalApic {
    pub fn new(id: u8, enabled: bool) -> Self {
        LocalApic {
            id,
            enabled,
            ..Default::default()
        }
    }

    /// Does an interrupt message with this destination address this Local APIC? Physical: its
    /// APIC ID, or the broadcast ID; logical (flat model): any bit it shares with the LDR
    /// (SDM vol. 3, 10.6.2.1 and 10.6.2.2).
    pub fn addressed_by(&self, dest: u8, logical: bool) -> bool {
        if logical {
            dest & self.ldr != 0
        } else {
            dest == self.id || dest == BROADCAST_ID
        }
    }

    /// An interrupt message arrives: the vector becomes pending.
    pub fn accept(&mut self, vector: u8, level_triggered: bool) {
        self.irr.set(vector);
        if level_triggered {
            self.tmr.set(vector);
        } else {
            self.tmr.clear(vector);
        }
    }

    fn ppr_class(&self) -> u8 {
        let isr_class = self.isr.highest().map_or(0, |v| v >> 4);
        (self.tpr >> 4).max(isr_class)
    }

    /// The vector the core would take now, if its interrupt flag allows.
    pub fn deliverable(&self) -> Option<u8> {
        if self.irr.0 == [0; 4] {
            return None; // the common case, checked at every step with interrupts on
        }
        let v = self.irr.highest()?;
        (v >> 4 > self.ppr_class()).then_some(v)
    }

    /// Is an interrupt waiting for the core: a deliverable vector, or the 8259's INTR (the
    /// core's `intr_line`) when the Local APIC is off?
    pub fn interrupt_pending(&self, intr_line: bool) -> bool {
        if self.enabled {
            self.deliverable().is_some()
        } else {
            intr_line
        }
    }

    /// Is no interrupt requested at all: IRR empty, or the INTR line low when the Local APIC is
    /// off? (Cheaper than [`Self::interrupt_pending`], which also weighs priorities; a caller
    /// that only needs a sufficient condition for "nothing to take" asks this.)
    pub fn nothing_requested(&self, intr_line: bool) -> bool {
        if self.enabled {
            self.irr.0 == [0; 4]
        } else {
            !intr_line
        }
    }

    /// The core takes the interrupt: IRR -> ISR.
    pub fn acknowledge(&mut self) -> Option<u8> {
        let v = self.deliverable()?;
        self.irr.clear(v);
        self.isr.set(v);
        Some(v)
    }

    /// A write to the EOI register. Returns the vector if an EOI message must go to the
    /// I/O APICs (it was level-triggered).
    pub fn eoi(&mut self) -> Option<u8> {
        let v = self.isr.highest()?;
        self.isr.clear(v);
        self.tmr.get(v).then_some(v)
    }

    /// Register read (the subset the modelled kernel paths use).
    pub fn read(&self, reg: u32) -> u32 {
        match reg {
            REG_ID => u32::from(self.id) << 24,
            REG_TPR => u32::from(self.tpr),
            r if (REG_TMR_BASE..REG_TMR_BASE + 0x80).contains(&r) => {
                self.tmr.word32(((r - REG_TMR_BASE) / 0x10) as usize)
            }
            _ => 0,
        }
    }

    pub fn in_service(&self, vector: u8) -> bool {
        self.isr.get(vector)
    }
    pub fn pending(&self, vector: u8) -> bool {
        self.irr.get(vector)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_classes_gate_delivery() {
        let mut l = LocalApic::new(0, true);
        l.accept(0x41, false);
        assert_eq!(l.acknowledge(), Some(0x41));
        l.accept(0x45, false);
        assert_eq!(l.deliverable(), None, "same class as in service: held");
        l.accept(0x51, false);
        assert_eq!(l.deliverable(), Some(0x51), "higher class nests");
        assert_eq!(l.eoi(), None, "edge: no EOI message");
        assert_eq!(l.deliverable(), Some(0x51));
        l.tpr = 0x60;
        assert_eq!(l.deliverable(), None, "TPR blocks lower classes");
    }

    #[test]
    fn destinations_address_by_id_or_logical_bits() {
        let mut l = LocalApic::new(2, true);
        l.ldr = 1 << 2;
        assert!(l.addressed_by(2, false));
        assert!(!l.addressed_by(1, false));
        assert!(l.addressed_by(BROADCAST_ID, false));
        assert!(l.addressed_by(0b0110, true));
        assert!(!l.addressed_by(0b0011, true));
    }

    #[test]
    fn level_eoi_is_broadcast_and_tmr_reads_back() {
        let mut l = LocalApic::new(0, true);
        l.accept(0x59, true);
        assert_eq!(
            l.read(REG_TMR_BASE + 0x20) & (1 << (0x59 - 64)),
            1 << (0x59 - 64)
        );
        l.acknowledge();
        assert_eq!(l.eoi(), Some(0x59));
        assert!(!l.in_service(0x59));
    }
}
