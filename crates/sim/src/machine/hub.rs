//! The I/O hub's side of the machine: requests reaching the ICH (port I/O to the 8259 pair,
//! interrupt acknowledge, IO-APIC registers, INTx and EOI messages), its replies, and the
//! IO-APIC's interrupt writes.

use super::fabric::Endpoint;
use super::{Ev, Machine};
use crate::engine::{SimDuration, SimTime};
use crate::hw::msi::MsiMessage;
use crate::hw::pcie::{Bdf, MsgCode, Tlp, TlpKind};

impl Machine {
    /// The base of the hub's window a memory request reached (the decode sent it here).
    fn ioapic_base(&self, addr: u64) -> u64 {
        self.fabric
            .hub_window(addr)
            .expect("the decode sends the hub only its own windows")
    }

    // ---- the I/O hub ---------------------------------------------------------------------

    /// A request reaches the hub at `now`: the clock's time, or a time ahead of it with nothing
    /// queued before (`Machine::advance` delivers it there).
    pub(super) fn ich_receive(&mut self, p: u32, tlp: Tlp, now: SimTime) {
        let t = &self.ich.timing;
        let clocks = match tlp.kind {
            TlpKind::Msg(MsgCode::AssertIntx(_)) | TlpKind::Msg(MsgCode::DeassertIntx(_)) => {
                self.release(p);
                let assert = matches!(tlp.kind, TlpKind::Msg(MsgCode::AssertIntx(_)));
                // The router input the device's pin arrives on, swizzled by every bridge on
                // the way (computed from the topology); the ICH maps INTA-D onto PIRQA-D.
                let pirq = self.intx_line(tlp.requester);
                let effect = self.ich.intx(pirq, assert);
                self.update_intr_at(now);
                if let Some(m) = effect.ioapic_message {
                    let at = self.ich.ioapic_delivery_done(now);
                    self.q.schedule_at(at, Ev::IoApicSend(m));
                }
                return;
            }
            TlpKind::Msg(MsgCode::Eoi(vector)) => {
                self.release(p);
                if let Some(m) = self.ich.ioapic.eoi(vector) {
                    let at = self.ich.ioapic_delivery_done(now);
                    self.q.schedule_at(at, Ev::IoApicSend(m));
                }
                return;
            }
            TlpKind::IoRead | TlpKind::IoWrite => t.legacy_io_clocks,
            TlpKind::IntAck => t.intack_clocks,
            TlpKind::MemRead | TlpKind::MemWrite => t.ioapic_access_clocks,
            TlpKind::Cpl | TlpKind::CplD => {
                self.release(p);
                return;
            }
        };
        let done = self.ich.service_done(now, clocks);
        // A block that answers within the bus cycle that brought the request (the PIIX4's 8259
        // pair, whose timing is its ISA bus's) answers now, when nothing else is due at this
        // instant: its own event would be the next one taken, so this is the same order. So does
        // a later answer with nothing queued before it, unless an observer looks at the machine
        // after every event (seed 004's probe).
        if !self.strict
            && (done == now || self.observer.is_none())
            && self.next_due().is_none_or(|next| next > done)
        {
            self.last_inline = self.last_inline.max(done);
            self.on_ich_done(p, done);
            return;
        }
        self.q.schedule_at(done, Ev::IchDone(p));
    }

    /// The hub answers the request in packet `p` at `now` (the clock's time, or ahead of it
    /// with nothing queued before).
    pub(super) fn on_ich_done(&mut self, p: u32, now: SimTime) {
        let req = self.packets[p as usize].tlp;
        self.release(p);
        let reply = |kind, data| Tlp {
            kind,
            requester: req.requester,
            completer: Bdf::new(0, 31, 0), // the LPC bridge, D31:F0
            tag: req.tag,
            addr: req.addr,
            len_dw: 1,
            data,
        };
        let port = req.addr as u16;
        let completion = match req.kind {
            TlpKind::IoRead => {
                let v = self.ich.pics.port_read(port).unwrap_or(0xFF);
                Some(reply(TlpKind::CplD, u32::from(v)))
            }
            TlpKind::IoWrite => {
                self.ich.pics.port_write(port, req.data as u8);
                Some(reply(TlpKind::Cpl, 0))
            }
            TlpKind::IntAck => {
                let (vector, _) = self.ich.pics.interrupt_acknowledge();
                Some(reply(TlpKind::CplD, u32::from(vector)))
            }
            TlpKind::MemRead => {
                let v = self
                    .ich
                    .ioapic
                    .mmio_read(req.addr - self.ioapic_base(req.addr));
                Some(reply(TlpKind::CplD, v))
            }
            TlpKind::MemWrite => {
                let offset = req.addr - self.ioapic_base(req.addr);
                if let Some(m) = self.ich.ioapic.mmio_write(offset, req.data) {
                    let at = self.ich.ioapic_delivery_done(now);
                    self.q.schedule_at(at, Ev::IoApicSend(m));
                }
                None
            }
            _ => None,
        };
        self.update_intr_at(now);
        if let Some(c) = completion {
            self.send_at(Endpoint::Ich, self.core_of(&c), c, now, true);
        }
    }

    /// The IO-APIC's interrupt: an upstream memory write to 0xFEEx_xxxx over DMI.
    pub(super) fn send_interrupt_write(&mut self, m: MsiMessage) {
        let tlp = Tlp {
            kind: TlpKind::MemWrite,
            requester: Bdf::new(0, 31, 0),
            completer: Bdf::default(),
            tag: 0,
            addr: u64::from(m.address()),
            len_dw: 1,
            data: m.data(),
        };
        self.send(Endpoint::Ich, self.core_of(&tlp), tlp, SimDuration::ZERO);
    }

    /// The 8259's INTR wire drives the core directly (a sideband pin; its flight time is
    /// negligible against the bus crossings).
    /// The router input a device's INTx arrives on.
    fn intx_line(&self, requester: Bdf) -> u8 {
        self.intx_lines
            .iter()
            .find(|(b, _)| *b == requester)
            .map(|&(_, line)| line)
            .expect("every device's INTx line is known from the topology")
    }

    /// The 8259's INTR output as it is at `at` (the clock's time, or an access's ahead of it).
    pub(super) fn update_intr_at(&mut self, at: SimTime) {
        let level = self.ich.pics.intr();
        // The boot CPU's INTR (LINT0) pin: the other cores mask theirs (Linux programs LINT0 as
        // ExtINT on the boot CPU only, `setup_local_APIC`).
        let bsp = &mut self.cores[0];
        if level != bsp.intr_line {
            bsp.intr_line = level;
            if level && !bsp.lapic.enabled {
                self.poke_cpu_at(0, at);
            }
        }
    }
}
