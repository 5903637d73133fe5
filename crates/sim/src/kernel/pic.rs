//! How an operating system programs the PC/AT's 8259A pair at boot: the initialization command
//! words, written to the chips' ports as the kernel's code writes them (the hardware model,
//! `hw/pic8259.rs`, knows only its registers).

use crate::hw::pic8259::{PicPair, CASCADE_IR, MASTER_CMD, MASTER_DATA, SLAVE_CMD, SLAVE_DATA};

/// Program both chips: ICW1 0x11 (edge-triggered mode bit clear, cascade, ICW4 follows), ICW2
/// the vector bases, ICW3 the slave on the master's IR2, ICW4 0x01 (8086 mode, normal EOI);
/// then mask every line but the cascade: Linux 2.6's `init_8259A` (arch/i386/kernel/i8259.c)
/// with vectors 0x20 and 0x28.
///
/// Seed 004's FreeBSD is programmed the same way today, which is not quite what it did:
/// FreeBSD 3's `isa_defaultirq` (i386/isa/intr_machdep.c) writes the same four ICWs with
/// `NRSVIDT` (0x20), but then masks every line (its `imen` is written later, as the model
/// does), selects IRR reads (OCW3 0x0a) and rotates the master's priorities so that IRQ 3 comes
/// first (OCW2 `0xc0 | (3 - 1)`, "pri order 3-7, 0-2 (com2 first)"). The rotation changes which
/// of two pending lines is acknowledged first; it is not modelled yet.
pub fn init_pair(pics: &mut PicPair, master_base: u8, slave_base: u8) {
    for (cmd, data, base, icw3) in [
        (MASTER_CMD, MASTER_DATA, master_base, 1 << CASCADE_IR),
        (SLAVE_CMD, SLAVE_DATA, slave_base, CASCADE_IR),
    ] {
        pics.port_write(cmd, 0x11);
        pics.port_write(data, base);
        pics.port_write(data, icw3);
        pics.port_write(data, 0x01);
    }
    pics.port_write(MASTER_DATA, !(1 << CASCADE_IR));
    pics.port_write(SLAVE_DATA, 0xFF);
}
