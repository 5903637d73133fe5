//! What the firmware derives from a topology and tells the OS: the bus numbers it gives the
//! bridges, and the interrupt routing table (MP 1.4 I/O interrupt entries, ACPI `_PRT`) that
//! says which IO-APIC pin each function's INTx reaches. Seed 001 (4.2): "System BIOS that
//! implement interrupt swizzling must comprehend the effect of swizzling when constructing the
//! _PRT or MPS1.4 interrupt mapping table"; here the table is computed from the same routes the
//! machine sends INTx messages on, so it cannot disagree with them.

use super::route::Request;
use super::{PartId, PartKind, Topology, TopologyError};
use crate::hw::pcie::{Bdf, IntxPin};

/// One function's INTx as the firmware's table gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntxRoute {
    pub part: PartId,
    pub name: String,
    pub bdf: Bdf,
    /// The pin the function signals on (its Interrupt Pin register).
    pub pin: IntxPin,
    /// The router input it arrives on, after every bridge's swizzle: PIRQA = 0.
    pub router_line: u8,
    /// The IO-APIC pin (Linux's IRQ number for it) the router line is wired to; `None`: not
    /// wired to any input.
    pub irq: Option<u8>,
}

impl Topology {
    /// The secondary bus number of every bridge (`None` for other parts), given as firmware and
    /// Linux enumerate: bus 0 holds the host bridge and whatever is reached without crossing a
    /// bridge (a hub behind DMI or ESI is on bus 0); each bridge found, in the order of its
    /// device number, takes the next number and its subtree is numbered before the next bridge
    /// (depth first: Linux 2.4 `pci_do_scan_bus` scans a bus's slots, then each bridge's bus).
    pub fn bus_numbers(&self) -> Vec<Option<u8>> {
        let mut out = vec![None; self.parts.len()];
        let mut next = 0u8;
        self.number_below(self.root, &mut next, &mut out);
        out
    }

    /// Number the bridges reached from `p` without crossing another bridge, depth first.
    fn number_below(&self, p: PartId, next: &mut u8, out: &mut [Option<u8>]) {
        let mut bridges = Vec::new();
        self.bridges_on_bus(p, &mut bridges);
        bridges.sort_by_key(|&(dev, id)| (dev, id));
        for (_, b) in bridges {
            *next = next.saturating_add(1);
            out[usize::from(b)] = Some(*next);
            self.number_below(b, next, out);
        }
    }

    /// The bridges directly on the bus below `p` (through links and hubs, not bridges), with
    /// their device numbers.
    fn bridges_on_bus(&self, p: PartId, found: &mut Vec<(u8, PartId)>) {
        for c in self.children(p) {
            match self.parts[usize::from(c)].kind {
                PartKind::Bridge { dev, .. } => found.push((dev, c)),
                _ => self.bridges_on_bus(c, found),
            }
        }
    }

    /// The parts whose upstream link hangs from `p`.
    pub fn children(&self, p: PartId) -> impl Iterator<Item = PartId> + '_ {
        self.links
            .iter()
            .filter(move |l| l.up == p)
            .flat_map(|l| l.down.iter().copied())
    }

    /// Every endpoint's INTx route that signals INTx through the interrupt router, in bus order
    /// (bus, device, function): the firmware's interrupt routing table, and the order Linux
    /// finds the functions in (so the order it names network interfaces in).
    pub fn intx_routes(&self) -> Result<Vec<IntxRoute>, TopologyError> {
        let mut out = Vec::new();
        for (i, part) in self.parts.iter().enumerate() {
            let PartKind::Endpoint {
                bdf,
                intx_pin: Some(pin),
                ..
            } = part.kind
            else {
                continue;
            };
            let id = i as PartId;
            let path = self.route(id, Request::Intx)?;
            let line = path.line.expect("an INTx route ends on a line");
            let irq = self.wired(path.dest, line).first().map(|&(_, pin)| pin);
            out.push(IntxRoute {
                part: id,
                name: part.name.clone(),
                bdf,
                pin,
                router_line: line,
                irq,
            });
        }
        out.sort_by_key(|r| (r.bdf.bus, r.bdf.dev, r.bdf.func, r.part));
        Ok(out)
    }
}
