//! Message Signaled Interrupts: the address/data format a device (or an IO-APIC of the ICH era)
//! writes to reach a Local APIC.
//!
//! Source: Intel SDM vol. 3, 11.11 (Message Signalled Interrupts): address 0xFEEx_xxxx with the
//! destination APIC ID in bits 19:12, redirection hint bit 3, destination mode bit 2; data with
//! the vector in 7:0, delivery mode 10:8, level 14, trigger mode 15. Vectors 0-31 are reserved for
//! exceptions, leaving 224 usable vectors per CPU (seed 000: "increasing the number of available
//! interrupts to 224").

use serde::Serialize;

/// The base of the interrupt address window.
pub const MSI_ADDRESS_BASE: u32 = 0xFEE0_0000;
/// Lowest vector a device interrupt may use.
pub const FIRST_USABLE_VECTOR: u8 = 32;

/// Is `addr` in the 0xFEEx_xxxx interrupt window?
pub fn is_interrupt_address(addr: u64) -> bool {
    addr >> 20 == 0xFEE
}

/// A decoded interrupt message.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MsiMessage {
    pub dest_apic_id: u8,
    pub vector: u8,
    /// Level-triggered (trigger mode bit 15); device MSIs are always edge.
    pub level_triggered: bool,
    /// Logical destination mode (address bit 2): `dest_apic_id` is a set of logical IDs.
    pub logical: bool,
    /// Lowest-priority delivery (data bits 10:8 = 001): one of the addressed cores takes it.
    pub lowest_priority: bool,
}

impl MsiMessage {
    /// Check that the vector is usable for a device interrupt.
    pub fn new(dest_apic_id: u8, vector: u32, level_triggered: bool) -> Result<Self, String> {
        if !(u32::from(FIRST_USABLE_VECTOR)..=255).contains(&vector) {
            return Err(format!(
                "interrupt vector {vector} is outside 32..255: vectors 0-31 are the CPU's exceptions \
                 (Intel SDM vol. 3, 6.2); pick a vector between 32 and 255"
            ));
        }
        Ok(MsiMessage {
            dest_apic_id,
            vector: vector as u8,
            level_triggered,
            logical: false,
            lowest_priority: false,
        })
    }

    /// The message an IPI sends: the interrupt command register's vector (7:0), delivery mode
    /// (10:8), destination mode (11), trigger mode (15) and shorthand (19:18); the destination
    /// in bits 31:24 of the high half (SDM vol. 3, 10.6.1). The shorthands "self" and "all"
    /// become the sender's ID and the broadcast ID.
    pub fn from_icr(low: u32, high: u32, self_id: u8) -> MsiMessage {
        let dest = match (low >> 18) & 3 {
            1 => self_id,
            2 | 3 => super::lapic::BROADCAST_ID,
            _ => (high >> 24) as u8,
        };
        MsiMessage {
            dest_apic_id: dest,
            vector: (low & 0xFF) as u8,
            level_triggered: low & (1 << 15) != 0,
            logical: low & (1 << 11) != 0,
            lowest_priority: (low >> 8) & 7 == 1,
        }
    }
    /// Message address register value (destination mode in bit 2, no redirection hint).
    pub fn address(&self) -> u32 {
        MSI_ADDRESS_BASE | (u32::from(self.dest_apic_id) << 12) | (u32::from(self.logical) << 2)
    }
    /// Message data register value (fixed delivery mode). Bit 14 (level: assert) is set as
    /// Linux's `msi_compose_msg` always sets it (MSI_DATA_LEVEL_ASSERT); bit 15 marks
    /// level-triggered messages (the IO-APIC's).
    pub fn data(&self) -> u32 {
        let mut d = u32::from(self.vector) | (1 << 14) | (u32::from(self.lowest_priority) << 8);
        if self.level_triggered {
            d |= 1 << 15;
        }
        d
    }
    /// Decode an interrupt write as the Local APIC bus unit does.
    pub fn decode(address: u64, data: u32) -> Option<MsiMessage> {
        if !is_interrupt_address(address) {
            return None;
        }
        Some(MsiMessage {
            dest_apic_id: ((address >> 12) & 0xFF) as u8,
            vector: (data & 0xFF) as u8,
            level_triggered: data & (1 << 15) != 0,
            logical: address & (1 << 2) != 0,
            lowest_priority: (data >> 8) & 7 == 1,
        })
    }
}

/// The MSI capability structure of a function (PCI Local Bus spec 3.0, 6.8.1): enable bit,
/// message address and data as programmed by the OS.
#[derive(Clone, Debug, Default)]
pub struct MsiCapability {
    pub enabled: bool,
    pub address: u32,
    pub data: u32,
    /// Per-vector mask bit (the optional PVM feature); a masked MSI is held pending.
    pub masked: bool,
    pub pending: bool,
}

impl MsiCapability {
    /// What Linux's `pci_enable_msi` leaves in the capability.
    pub fn program(&mut self, msg: MsiMessage) {
        self.address = msg.address();
        self.data = msg.data();
        self.enabled = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_per_the_sdm() {
        let m = MsiMessage::new(1, 0x41, false).unwrap();
        assert_eq!(m.address(), 0xFEE0_1000);
        assert_eq!(m.data(), 0x4041);
        assert_eq!(MsiMessage::decode(0xFEE0_1000, 0x4041), Some(m));
        let l = MsiMessage::new(0, 0x59, true).unwrap();
        assert_eq!(l.data(), 0xC059);
        assert!(MsiMessage::decode(0xF900_0040, 0).is_none());
        let mut lp = MsiMessage::new(0b11, 0x31, false).unwrap();
        (lp.logical, lp.lowest_priority) = (true, true);
        assert_eq!(lp.address(), 0xFEE0_3004);
        assert_eq!(lp.data(), 0x4131);
        assert_eq!(MsiMessage::decode(0xFEE0_3004, 0x4131), Some(lp));
    }

    #[test]
    fn an_icr_write_becomes_an_interrupt_message() {
        let m = MsiMessage::from_icr(0x0000_00FD, 3 << 24, 0);
        assert_eq!((m.dest_apic_id, m.vector, m.logical), (3, 0xFD, false));
        // Shorthand "self" (01) addresses the sender whatever the high half says.
        assert_eq!(
            MsiMessage::from_icr(0x0004_00FD, 3 << 24, 5).dest_apic_id,
            5
        );
        // "All including self" is the broadcast ID.
        assert_eq!(MsiMessage::from_icr(0x0008_00FD, 0, 5).dest_apic_id, 0xFF);
    }

    #[test]
    fn vectors_outside_32_to_255_are_refused() {
        assert!(MsiMessage::new(0, 31, false)
            .unwrap_err()
            .contains("32..255"));
        assert!(MsiMessage::new(0, 256, false).is_err());
        assert!(MsiMessage::new(0, 32, false).is_ok());
        assert!(MsiMessage::new(0, 255, false).is_ok());
    }
}
