//! Routing on a topology: a request finds the part that decodes it (a memory address, an I/O
//! port, the interrupt window's APIC ID) and goes up the tree to the first part whose subtree
//! holds that part, then down to it, as PCI bridges forward by their windows. An INTx message
//! goes to the interrupt router, swizzled at every bridge it crosses on the way up: by the device
//! number it came from ((pin + device) mod 4, PCI-to-PCI Bridge Architecture spec 1.2, 9.1; PCIe
//! base 2.2.8.1), then by the bridge's INTXSWZCTRL (Intel 5000 chipset, doc 314337-002, Table 2).
//! A conventional PCI device's pin is a wire, not a message: it follows the board's wiring.

use super::{LinkId, LinkKind, PartId, PartKind, Topology, TopologyError};
use crate::hw::msi::is_interrupt_address;
use crate::hw::pcie::{Dir, IntxPin};

/// What is sent.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// A memory read or write at this address (an MSI is a write to the interrupt window).
    Mem(u64),
    /// A port I/O read or write.
    Io(u16),
    /// Assert_INTx or Deassert_INTx on the sender's pin.
    Intx,
}

/// The way a request takes: the links it crosses in order, each with its direction (a crossing
/// of a shared bus between two of its agents is one step, down), and the part that takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Path {
    pub steps: Vec<(LinkId, Dir)>,
    pub dest: PartId,
    /// For INTx: the router input (0-3 = INTA#-INTD#) or wire input the pin arrives on.
    pub line: Option<u8>,
}

impl Topology {
    /// The part that decodes a memory address or an I/O port.
    pub fn claimant(&self, req: Request) -> Option<PartId> {
        let found = |f: &dyn Fn(&PartKind) -> bool| {
            self.parts
                .iter()
                .position(|p| f(&p.kind))
                .map(|i| i as PartId)
        };
        let inside = |w: &[(u64, u64)], a: u64| w.iter().any(|&(b, s)| a >= b && a - b < s);
        match req {
            // The interrupt window: the core whose APIC ID is in address bits 19:12 (SDM vol. 3,
            // 10.11.1).
            Request::Mem(a) if is_interrupt_address(a) => {
                self.core_with_apic_id(((a >> 12) & 0xFF) as u8)
            }
            Request::Mem(a) => found(&|k| match k {
                PartKind::Memory { base, size, .. } => a >= *base && a - base < *size,
                PartKind::Function { mem, .. } | PartKind::Endpoint { mem, .. } => inside(mem, a),
                _ => false,
            }),
            Request::Io(port) => found(&|k| match k {
                PartKind::Function { io, .. } | PartKind::Endpoint { io, .. } => {
                    io.iter().any(|&(lo, hi)| (lo..=hi).contains(&port))
                }
                _ => false,
            }),
            Request::Intx => found(&|k| *k == PartKind::PirqRouter),
        }
    }

    /// The links from `from` to `to`: up to the first common ancestor, then down.
    pub fn path_between(&self, from: PartId, to: PartId) -> Vec<(LinkId, Dir)> {
        let up = self.ancestry(from);
        let down = self.ancestry(to);
        let common = *up
            .iter()
            .find(|p| down.contains(p))
            .expect("one tree: the root is common");
        let mut steps: Vec<(LinkId, Dir)> = up
            .iter()
            .take_while(|&&p| p != common)
            .map(|&p| {
                (
                    self.parts[usize::from(p)].up.expect("below the root"),
                    Dir::Up,
                )
            })
            .collect();
        let downs: Vec<(LinkId, Dir)> = down
            .iter()
            .take_while(|&&p| p != common)
            .map(|&p| {
                (
                    self.parts[usize::from(p)].up.expect("below the root"),
                    Dir::Down,
                )
            })
            .collect();
        for step in downs.into_iter().rev() {
            // Two agents of one bus or hub fabric talk across it once (a serial link has one
            // downstream end, so this never joins two crossings of one).
            if steps.last() == Some(&(step.0, Dir::Up)) {
                steps.pop();
            }
            steps.push(step);
        }
        steps
    }

    /// Route `req` sent by `from`.
    pub fn route(&self, from: PartId, req: Request) -> Result<Path, TopologyError> {
        let name = |p: PartId| self.parts[usize::from(p)].name.clone();
        if req == Request::Intx {
            return self.route_intx(from);
        }
        let dest = self.claimant(req).ok_or_else(|| TopologyError::Unclaimed {
            request: match req {
                Request::Mem(a) if is_interrupt_address(a) => format!(
                    "the interrupt message to APIC ID {} (address {a:#x}): no core has it",
                    (a >> 12) & 0xFF
                ),
                Request::Mem(a) => format!("memory address {a:#x}"),
                Request::Io(p) => format!("I/O port {p:#x}"),
                Request::Intx => unreachable!("handled above"),
            },
            from: name(from),
        })?;
        Ok(Path {
            steps: self.path_between(from, dest),
            dest,
            line: None,
        })
    }

    fn route_intx(&self, from: PartId) -> Result<Path, TopologyError> {
        let part = &self.parts[usize::from(from)];
        let PartKind::Endpoint {
            intx_pin: Some(pin),
            ..
        } = part.kind
        else {
            return Err(TopologyError::Invalid {
                key: format!("part.{}.intx_pin", part.name),
                what: format!("part '{}'", part.name),
                message: "sends INTx but has no intx_pin: give the endpoint its pin".into(),
            });
        };
        // A conventional PCI device drives a wire, which the board routes.
        let on_bus = part.up.is_some_and(|l| {
            matches!(
                self.links[usize::from(l)].kind,
                LinkKind::SharedBus { .. } | LinkKind::Clocked { .. } | LinkKind::IsaBus(_)
            )
        });
        if on_bus {
            let w = self
                .wires
                .iter()
                .find(|w| w.from == from && w.from_line == pin.index())
                .ok_or_else(|| TopologyError::Invalid {
                    key: "wire".into(),
                    what: format!("part '{}'", part.name),
                    message: format!(
                        "sits on a shared bus and signals INT{}#, but no [[wire]] leaves its \
                         line {}: wire it to the router's input",
                        pin.letter(),
                        pin.index()
                    ),
                })?;
            return Ok(Path {
                steps: Vec::new(),
                dest: w.to,
                line: Some(w.to_line),
            });
        }
        let router = self
            .claimant(Request::Intx)
            .ok_or_else(|| TopologyError::Unclaimed {
                request: "an INTx message (no pirq-router part)".into(),
                from: part.name.clone(),
            })?;
        let steps = self.path_between(from, router);
        // Swizzle at every bridge crossed upwards, by the device number the message came from.
        let mut pin: IntxPin = pin;
        let mut child = from;
        for &(link, dir) in &steps {
            if dir != Dir::Up {
                break;
            }
            let above = self.links[usize::from(link)].up;
            if let PartKind::Bridge { intx_swizzle, .. } = self.parts[usize::from(above)].kind {
                pin = pin
                    .swizzle(self.device_number(child))
                    .swizzle(intx_swizzle.unwrap_or(0));
            }
            child = above;
        }
        Ok(Path {
            steps,
            dest: router,
            line: Some(pin.index()),
        })
    }

    /// The device number a part has on its parent's bus.
    fn device_number(&self, p: PartId) -> u8 {
        match self.parts[usize::from(p)].kind {
            PartKind::Endpoint { bdf, .. } => bdf.dev,
            PartKind::Bridge { dev, .. } => dev,
            _ => 0,
        }
    }

    /// The inputs a part's output line drives (a PIRQ line to an IO-APIC pin and an 8259 input).
    pub fn wired(&self, from: PartId, line: u8) -> Vec<(PartId, u8)> {
        self.wires
            .iter()
            .filter(|w| w.from == from && w.from_line == line)
            .map(|w| (w.to, w.to_line))
            .collect()
    }
}
