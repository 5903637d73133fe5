//! A platform's topology as data: its parts (cores, host bridge, root ports, switches, the south
//! bridge's functions, endpoints, memory) and the links between them, read from a platform file's
//! `[[part]]`, `[[link]]` and `[[wire]]` tables. Transactions find their way by address decode
//! and message type (`route.rs`), not by a table of endpoint pairs.
//!
//! Links are of three kinds, as the hardware has them:
//! - **serial**: a point-to-point link that serialises each packet (PCIe, DMI, ESI);
//! - **shared bus**: a clocked bus that several agents share, with arbitration and transactions
//!   that start on clock edges (FSB, the Socket 7 host bus, PCI, ISA);
//! - **delay**: a crossing with a fixed latency and no contention (inside a hub).
//!
//! Every link has one upstream end (towards the host bridge, the root of the tree) and one or
//! more downstream ends; a part has at most one upstream link. Interrupt wires (a PIRQ line to an
//! IO-APIC pin or an 8259 input, a device's INTx pin on a PCI slot) are listed apart: they carry
//! levels, not packets.

pub mod route;

use crate::hw::pcie::{Bdf, IntxPin};
use serde::Deserialize;
use std::collections::HashMap;

/// Index of a part in [`Topology::parts`].
pub type PartId = u16;
/// Index of a link in [`Topology::links`].
pub type LinkId = u16;

/// What a part is.
#[derive(Clone, Debug, PartialEq)]
pub enum PartKind {
    /// A CPU core with its Local APIC; it takes interrupt messages sent to its APIC ID.
    Core { apic_id: u8 },
    /// The host bridge (MCH, system agent, the 430TX's host-to-PCI bridge): the root of the
    /// tree and the root complex. It decodes host memory and forwards the rest.
    HostBridge,
    /// Host memory (DRAM), behind the host bridge: claims `[base, base + size)`.
    Memory { base: u64, size: u64 },
    /// A PCIe root port or a switch's downstream port: a PCI-to-PCI bridge at device number
    /// `dev` on its parent's bus. INTx messages from below leave it swizzled by the device
    /// number they came from, then rotated by `intx_swizzle` (Intel 5000's INTXSWZCTRL, bits
    /// 1:0 at config offset 4Fh; 0 on every other bridge).
    Bridge { dev: u8, intx_swizzle: u8 },
    /// The south bridge's interrupt router: INTx messages reaching it assert its INTA#-INTD#,
    /// which drive PIRQA#-PIRQD# (ICH6 datasheet 5.10.3); its outputs are wires.
    PirqRouter,
    /// A function of the south bridge or an ISA device, reached by port I/O or memory at the
    /// windows it claims (the 8259 pair, the PIT, an IO-APIC's registers, a parallel port).
    Function {
        io: Vec<(u16, u16)>,
        mem: Vec<(u64, u64)>,
    },
    /// A PCI or PCIe function at `bdf`, with its BARs and the INTx pin it signals on.
    Endpoint {
        bdf: Bdf,
        intx_pin: Option<IntxPin>,
        io: Vec<(u16, u16)>,
        mem: Vec<(u64, u64)>,
    },
    /// A hub's internal fabric, crossed by packets on their way through (the ICH behind DMI).
    Hub,
}

/// A part of the platform.
#[derive(Clone, Debug)]
pub struct Part {
    pub name: String,
    pub kind: PartKind,
    /// The link towards the host bridge (`None` for the host bridge).
    pub up: Option<LinkId>,
}

/// How a link moves packets.
#[derive(Clone, Debug, PartialEq)]
pub enum LinkKind {
    /// A serialising point-to-point link (PCIe, DMI, ESI).
    Serial { generation: u8, width: u8 },
    /// A clocked bus shared by its agents (FSB, host bus, PCI, ISA).
    SharedBus { clock_hz: f64 },
    /// A fixed latency, no contention.
    Delay { ns: f64 },
}

/// A link: one upstream end and its downstream ends.
#[derive(Clone, Debug)]
pub struct Link {
    pub name: String,
    pub kind: LinkKind,
    pub up: PartId,
    pub down: Vec<PartId>,
}

/// An interrupt line: output `from_line` of part `from` drives input `to_line` of part `to`
/// (PIRQA# = line 0 of the router to IO-APIC pin 16, for instance).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wire {
    pub from: PartId,
    pub from_line: u8,
    pub to: PartId,
    pub to_line: u8,
}

/// The parts and links of a platform, checked: one tree rooted at the host bridge.
#[derive(Clone, Debug)]
pub struct Topology {
    pub parts: Vec<Part>,
    pub links: Vec<Link>,
    pub wires: Vec<Wire>,
    pub root: PartId,
}

/// A topology that cannot be: names the part, link or wire and what is wrong.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TopologyError {
    #[error("{what}: {message}")]
    Invalid { what: String, message: String },
    #[error("no part decodes {request} (sent by '{from}'): give a part a window that holds it")]
    Unclaimed { request: String, from: String },
}

fn invalid(what: impl Into<String>, message: impl Into<String>) -> TopologyError {
    TopologyError::Invalid {
        what: what.into(),
        message: message.into(),
    }
}

// ---- the file form ---------------------------------------------------------------------------

/// The `[[part]]`, `[[link]]` and `[[wire]]` tables of a platform file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologyFile {
    #[serde(default)]
    pub part: Vec<PartSection>,
    #[serde(default)]
    pub link: Vec<LinkSection>,
    #[serde(default)]
    pub wire: Vec<WireSection>,
}

/// `[[part]]`: `kind` is one of core, host-bridge, memory, bridge, pirq-router, function,
/// endpoint, hub; the other keys belong to that kind.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartSection {
    pub name: String,
    pub kind: String,
    pub apic_id: Option<u8>,
    pub base: Option<u64>,
    pub size: Option<u64>,
    pub dev: Option<u8>,
    #[serde(default)]
    pub intx_swizzle: u8,
    pub bdf: Option<String>,
    pub intx_pin: Option<String>,
    /// I/O port windows, `[first, last]` each.
    #[serde(default)]
    pub io: Vec<[u16; 2]>,
    /// Memory windows, `[base, size]` each.
    #[serde(default)]
    pub mem: Vec<[u64; 2]>,
}

/// `[[link]]`: `kind` is serial, shared-bus or delay.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSection {
    pub name: String,
    pub kind: String,
    pub up: String,
    pub down: Vec<String>,
    pub generation: Option<u8>,
    pub width: Option<u8>,
    pub clock_hz: Option<f64>,
    pub ns: Option<f64>,
}

/// `[[wire]]`: `from = "router"`, `from_line = 0`, `to = "ioapic"`, `to_line = 16`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireSection {
    pub from: String,
    pub from_line: u8,
    pub to: String,
    pub to_line: u8,
}

impl Topology {
    /// Build and check a topology from its file form.
    pub fn from_file(f: &TopologyFile) -> Result<Topology, TopologyError> {
        let mut index: HashMap<&str, PartId> = HashMap::new();
        let mut parts = Vec::with_capacity(f.part.len());
        for (i, p) in f.part.iter().enumerate() {
            if index.insert(p.name.as_str(), i as PartId).is_some() {
                return Err(invalid(
                    format!("part '{}'", p.name),
                    "two parts have this name: give each its own",
                ));
            }
            parts.push(Part {
                name: p.name.clone(),
                kind: part_kind(p)?,
                up: None,
            });
        }
        let find = |name: &str, by: &str| {
            index.get(name).copied().ok_or_else(|| {
                invalid(
                    by.to_string(),
                    format!("names the part '{name}', which no [[part]] has"),
                )
            })
        };
        let mut links = Vec::with_capacity(f.link.len());
        for (l, s) in f.link.iter().enumerate() {
            let what = format!("link '{}'", s.name);
            let up = find(&s.up, &what)?;
            let mut down = Vec::with_capacity(s.down.len());
            for d in &s.down {
                let id = find(d, &what)?;
                let part = &mut parts[usize::from(id)];
                if let Some(other) = part.up {
                    return Err(invalid(
                        format!("part '{d}'"),
                        format!(
                            "has two upstream links, '{}' and '{}': a part hangs from one link",
                            f.link[usize::from(other)].name,
                            s.name
                        ),
                    ));
                }
                part.up = Some(l as LinkId);
                down.push(id);
            }
            if down.is_empty() {
                return Err(invalid(
                    what,
                    "has no downstream end: list its parts in `down`",
                ));
            }
            links.push(Link {
                name: s.name.clone(),
                kind: link_kind(s)?,
                up,
                down,
            });
        }
        let roots: Vec<PartId> = (0..parts.len() as PartId)
            .filter(|&p| parts[usize::from(p)].up.is_none())
            .collect();
        let root = match roots.as_slice() {
            [r] if parts[usize::from(*r)].kind == PartKind::HostBridge => *r,
            _ => {
                let names: Vec<&str> = roots
                    .iter()
                    .map(|&r| parts[usize::from(r)].name.as_str())
                    .collect();
                return Err(invalid(
                    "topology",
                    format!(
                        "every part but the host bridge hangs from a link, but these hang from \
                         none: {}; link them below the host bridge",
                        names.join(", ")
                    ),
                ));
            }
        };
        let mut wires = Vec::with_capacity(f.wire.len());
        for w in &f.wire {
            let what = format!("wire {}.{} -> {}.{}", w.from, w.from_line, w.to, w.to_line);
            wires.push(Wire {
                from: find(&w.from, &what)?,
                from_line: w.from_line,
                to: find(&w.to, &what)?,
                to_line: w.to_line,
            });
        }
        let t = Topology {
            parts,
            links,
            wires,
            root,
        };
        // Every part reaches the root (no cycle): walk up from each, at most one step per link.
        for p in 0..t.parts.len() as PartId {
            let mut at = p;
            for _ in 0..=t.links.len() {
                match t.parts[usize::from(at)].up {
                    Some(l) => at = t.links[usize::from(l)].up,
                    None => break,
                }
            }
            if at != t.root {
                return Err(invalid(
                    format!("part '{}'", t.parts[usize::from(p)].name),
                    "its links go round in a cycle and never reach the host bridge",
                ));
            }
        }
        Ok(t)
    }

    /// Parse the tables of a platform file's text.
    pub fn from_toml(text: &str) -> Result<Topology, TopologyError> {
        let f: TopologyFile =
            toml::from_str(text).map_err(|e| invalid("platform file", e.to_string()))?;
        Topology::from_file(&f)
    }

    /// The part called `name`.
    pub fn part(&self, name: &str) -> Option<PartId> {
        self.parts
            .iter()
            .position(|p| p.name == name)
            .map(|i| i as PartId)
    }

    /// The core whose Local APIC has `apic_id`.
    pub fn core_with_apic_id(&self, apic_id: u8) -> Option<PartId> {
        self.parts
            .iter()
            .position(|p| p.kind == PartKind::Core { apic_id })
            .map(|i| i as PartId)
    }

    /// The part's parent: the upstream end of its upstream link.
    pub fn parent(&self, p: PartId) -> Option<PartId> {
        self.parts[usize::from(p)]
            .up
            .map(|l| self.links[usize::from(l)].up)
    }

    /// The parts from `p` up to the root, `p` first.
    pub fn ancestry(&self, p: PartId) -> Vec<PartId> {
        let mut out = vec![p];
        while let Some(up) = self.parent(*out.last().expect("not empty")) {
            out.push(up);
        }
        out
    }
}

fn part_kind(p: &PartSection) -> Result<PartKind, TopologyError> {
    let what = || format!("part '{}'", p.name);
    let need = |v: Option<u64>, key: &str| {
        v.ok_or_else(|| invalid(what(), format!("a {} needs `{key}`", p.kind)))
    };
    let windows_io: Vec<(u16, u16)> = p.io.iter().map(|w| (w[0], w[1])).collect();
    let windows_mem: Vec<(u64, u64)> = p.mem.iter().map(|w| (w[0], w[1])).collect();
    for w in &p.io {
        if w[0] > w[1] {
            return Err(invalid(
                what(),
                format!(
                    "I/O window [{:#x}, {:#x}] ends before it starts",
                    w[0], w[1]
                ),
            ));
        }
    }
    Ok(match p.kind.as_str() {
        "core" => PartKind::Core {
            apic_id: need(p.apic_id.map(u64::from), "apic_id")? as u8,
        },
        "host-bridge" => PartKind::HostBridge,
        "memory" => PartKind::Memory {
            base: need(p.base, "base")?,
            size: need(p.size, "size")?,
        },
        "bridge" => {
            if p.intx_swizzle > 3 {
                return Err(invalid(
                    what(),
                    format!(
                        "intx_swizzle = {}: INTXSWZCTRL has two bits (0-3)",
                        p.intx_swizzle
                    ),
                ));
            }
            PartKind::Bridge {
                dev: need(p.dev.map(u64::from), "dev")? as u8,
                intx_swizzle: p.intx_swizzle,
            }
        }
        "pirq-router" => PartKind::PirqRouter,
        "function" => PartKind::Function {
            io: windows_io,
            mem: windows_mem,
        },
        "endpoint" => {
            PartKind::Endpoint {
                bdf: Bdf::parse(p.bdf.as_deref().ok_or_else(|| {
                    invalid(what(), "an endpoint needs `bdf` (bus:device:function)")
                })?)
                .map_err(|m| invalid(what(), m))?,
                intx_pin: p
                    .intx_pin
                    .as_deref()
                    .map(IntxPin::parse)
                    .transpose()
                    .map_err(|m| invalid(what(), m))?,
                io: windows_io,
                mem: windows_mem,
            }
        }
        "hub" => PartKind::Hub,
        other => {
            return Err(invalid(
                what(),
                format!(
                    "kind '{other}' is not a part: use core, host-bridge, memory, bridge, \
                     pirq-router, function, endpoint or hub"
                ),
            ))
        }
    })
}

fn link_kind(s: &LinkSection) -> Result<LinkKind, TopologyError> {
    let what = || format!("link '{}'", s.name);
    let need = |v: Option<f64>, key: &str| {
        v.ok_or_else(|| invalid(what(), format!("a {} link needs `{key}`", s.kind)))
    };
    Ok(match s.kind.as_str() {
        "serial" => {
            let generation = need(s.generation.map(f64::from), "generation")? as u8;
            let width = need(s.width.map(f64::from), "width")? as u8;
            if !(1..=5).contains(&generation) || ![1, 2, 4, 8, 16, 32].contains(&width) {
                return Err(invalid(
                    what(),
                    format!("Gen{generation} x{width}: use generation 1-5 and width 1-32"),
                ));
            }
            if s.down.len() != 1 {
                return Err(invalid(
                    what(),
                    "a serial link joins two parts: give it one downstream end",
                ));
            }
            LinkKind::Serial { generation, width }
        }
        "shared-bus" => LinkKind::SharedBus {
            clock_hz: need(s.clock_hz, "clock_hz")?,
        },
        "delay" => LinkKind::Delay {
            ns: need(s.ns, "ns")?,
        },
        other => {
            return Err(invalid(
                what(),
                format!("kind '{other}' is not a link: use serial, shared-bus or delay"),
            ))
        }
    })
}
