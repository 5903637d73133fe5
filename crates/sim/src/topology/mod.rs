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

pub mod firmware;
pub mod route;

use crate::hw::bus::IsaTiming;
use crate::hw::pcie::{Bdf, IntxPin, LinkGen, LinkWidth};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

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
    /// tree and the root complex. It decodes host memory and forwards the rest; the CPU's
    /// requests leave it with `requester_id`.
    HostBridge { requester_id: Bdf },
    /// Host memory (DRAM), behind the host bridge: claims `[base, base + size)`; a device's read
    /// takes `read_ns` inside it.
    Memory { base: u64, size: u64, read_ns: f64 },
    /// A PCIe root port or a switch's downstream port: a PCI-to-PCI bridge at device number
    /// `dev` on its parent's bus. INTx messages from below leave it swizzled by the device
    /// number they came from, then rotated by `intx_swizzle` (Intel 5000's INTXSWZCTRL, bits
    /// 1:0 at config offset 4Fh; `None` on a bridge without the register, which rotates by 0).
    /// `link_pipeline_ns`: the pipelines of the link below it (a scenario's card sits there).
    Bridge {
        dev: u8,
        intx_swizzle: Option<u8>,
        link_pipeline_ns: f64,
    },
    /// A hub's port that is not a PCI bridge (the MCH's DMI port): packets pass, INTx is not
    /// swizzled.
    Port,
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
    /// A serialising point-to-point link (PCIe, DMI, ESI); `pipeline_ns` is both ends' PHY and
    /// data-link pipelines per direction.
    Serial {
        gen: LinkGen,
        width: LinkWidth,
        pipeline_ns: f64,
    },
    /// A clocked bus shared by its agents (FSB, host bus, PCI, ISA): a transaction starts on a
    /// clock edge once the bus is free, holds it `request_phase_clocks`, and reaches its target
    /// `transaction_clocks` after it started.
    SharedBus {
        clock_hz: f64,
        request_phase_clocks: u32,
        transaction_clocks: u32,
    },
    /// A fixed latency, no contention.
    Delay { ns: f64 },
    /// A crossing timed in its bus's clocks without contention: from the next clock edge,
    /// `down_clocks` away from the host bridge, `up_clocks` towards it (a bridge's host-to-PCI
    /// path, a PCI target's decode, a host bus's edge synchronisation).
    Clocked {
        clock_hz: f64,
        down_clocks: u32,
        up_clocks: u32,
    },
    /// An ISA bus behind its PCI-to-ISA bridge: 8- and 16-bit I/O cycles in SYSCLKs with the
    /// bridge's recovery time between them ([`crate::hw::bus::IsaBus`]).
    IsaBus(IsaTiming),
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
    /// `key` is the dotted path of the offending table or value in the platform file
    /// (`link.fsb.down`), for pointing at its line.
    #[error("{what}: {message}")]
    Invalid {
        key: String,
        what: String,
        message: String,
    },
    #[error("no part decodes {request} (sent by '{from}'): give a part a window that holds it")]
    Unclaimed { request: String, from: String },
}

fn invalid(
    key: impl Into<String>,
    what: impl Into<String>,
    message: impl Into<String>,
) -> TopologyError {
    TopologyError::Invalid {
        key: key.into(),
        what: what.into(),
        message: message.into(),
    }
}

// ---- the file form ---------------------------------------------------------------------------

/// The `[part.NAME]`, `[link.NAME]` and `[[wire]]` tables of a platform file. Parts and links
/// are keyed by name, so that `--set platform.link.fsb.transaction_clocks=8` reaches one.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TopologyFile {
    #[serde(default)]
    pub part: BTreeMap<String, PartSection>,
    #[serde(default)]
    pub link: BTreeMap<String, LinkSection>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wire: Vec<WireSection>,
}

/// The kinds of part, as a file names them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartKindName {
    Core,
    HostBridge,
    Memory,
    Bridge,
    Port,
    PirqRouter,
    Function,
    Endpoint,
    Hub,
    /// Board devices: functions (they decode their windows like any other) that carry the
    /// parameters of the device behind them (`devices/`): an 8254 timer, an MC146818 RTC, a
    /// parallel port, a counter card.
    Pit,
    Rtc,
    ParallelPort,
    CounterCard,
}

/// The kinds of link, as a file names them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LinkKindName {
    Serial,
    SharedBus,
    Delay,
    Clocked,
    IsaBus,
}

/// `[part.NAME]`: `kind` and the keys that kind takes.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PartSection {
    pub kind: Option<PartKindName>,
    /// core: its Local APIC's ID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub apic_id: Option<u8>,
    /// host-bridge: the requester ID on the TLPs it sends for the CPU.
    #[serde(
        default,
        with = "crate::text::opt_bdf",
        skip_serializing_if = "Option::is_none"
    )]
    pub requester_id: Option<Bdf>,
    /// memory: the window it claims.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// memory: from a device's read request reaching it to its data leaving (memory controller,
    /// DRAM, coherency); only DMA reads use it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_ns: Option<f64>,
    /// bridge: its device number on its parent's bus.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dev: Option<u8>,
    /// bridge: INTXSWZCTRL (0-3), on a bridge that has the register (Intel 5000's root ports);
    /// absent on every other bridge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intx_swizzle: Option<u8>,
    /// bridge: the PHY and data-link pipelines of the link below it, its transmitter and the
    /// card's receiver together, per direction (a scenario's device sits on that link).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_pipeline_ns: Option<f64>,
    /// endpoint: bus:device:function and the INTx pin it signals on.
    #[serde(
        default,
        with = "crate::text::opt_bdf",
        skip_serializing_if = "Option::is_none"
    )]
    pub bdf: Option<Bdf>,
    #[serde(
        default,
        with = "crate::text::opt_pin",
        skip_serializing_if = "Option::is_none"
    )]
    pub intx_pin: Option<IntxPin>,
    /// function, endpoint: I/O port windows, `[first, last]` each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub io: Vec<[u16; 2]>,
    /// function, endpoint: memory windows, `[base, size]` each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mem: Vec<[u64; 2]>,
    /// pit, rtc, parallel-port: the interrupt line it drives (an 8259 input).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub irq: Option<u8>,
    /// pit: its input clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_hz: Option<f64>,
    /// rtc: its periodic interrupt rate, and its own crystal against true time (ppm).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub periodic_hz: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crystal_ppm: Option<f64>,
    /// parallel-port: from an edge on nACK (pin 10) to its IRQ line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_to_irq_ns: Option<f64>,
    /// counter-card: its counter's clock and width, and the clocks (of the link above it) from
    /// latching the counter to its data on the bus.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counter_hz: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counter_bits: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_clocks: Option<u32>,
}

/// `[link.NAME]`: `kind`, its ends (`up` towards the host bridge, `down`), and the keys that
/// kind takes.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSection {
    pub kind: Option<LinkKindName>,
    pub up: String,
    #[serde(default)]
    pub down: Vec<String>,
    /// serial: PCIe generation and lanes, and the PHY and data-link pipelines of both ends per
    /// direction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pipeline_ns: Option<f64>,
    /// shared-bus: the bus clock; bus clocks a transaction holds the bus (arbitration and
    /// request phase: the next one may start after them, the bus is pipelined); bus clocks from
    /// the start of the request phase until the target has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_hz: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_phase_clocks: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transaction_clocks: Option<u32>,
    /// delay: the crossing's latency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ns: Option<f64>,
    /// clocked: clocks away from the host bridge and towards it, from the next clock edge.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub down_clocks: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub up_clocks: Option<u32>,
    /// isa-bus: SYSCLK as the bridge's PCI clock (`clock_hz`) divided by this; the lengths of
    /// 8- and 16-bit I/O cycles and the recovery after each, in SYSCLKs; the bridge's own
    /// interrupt acknowledge, in SYSCLKs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pci_clock_divisor: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io8_clocks: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io16_clocks: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io8_recovery_clocks: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io16_recovery_clocks: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intack_clocks: Option<u32>,
}

/// `[[wire]]`: `from = "router"`, `from_line = 0`, `to = "ioapic"`, `to_line = 16`.
#[derive(Clone, Debug, Deserialize, Serialize)]
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
        let index: HashMap<&str, PartId> = f
            .part
            .keys()
            .enumerate()
            .map(|(i, name)| (name.as_str(), i as PartId))
            .collect();
        let mut parts = Vec::with_capacity(f.part.len());
        for (name, p) in &f.part {
            parts.push(Part {
                name: name.clone(),
                kind: part_kind(name, p)?,
                up: None,
            });
        }
        let find = |name: &str, key: &str, by: &str| {
            index.get(name).copied().ok_or_else(|| {
                invalid(
                    key,
                    by,
                    format!("names the part '{name}', which no [part.{name}] table defines"),
                )
            })
        };
        let mut links = Vec::with_capacity(f.link.len());
        let mut link_names: Vec<&str> = Vec::with_capacity(f.link.len());
        for (l, (lname, s)) in f.link.iter().enumerate() {
            let what = format!("link '{lname}'");
            let up = find(&s.up, &format!("link.{lname}.up"), &what)?;
            // A root port is one end of one link.
            if matches!(parts[usize::from(up)].kind, PartKind::Bridge { .. }) {
                if let Some(other) = links.iter().position(|l: &Link| l.up == up) {
                    return Err(invalid(
                        format!("link.{lname}.up"),
                        what,
                        format!(
                            "hangs from the bridge '{}', which already has the link '{}' below \
                             it: a root port has one link; use another port, or a switch",
                            s.up, link_names[other]
                        ),
                    ));
                }
            }
            let mut down = Vec::with_capacity(s.down.len());
            for d in &s.down {
                let id = find(d, &format!("link.{lname}.down"), &what)?;
                let part = &mut parts[usize::from(id)];
                if let Some(other) = part.up {
                    return Err(invalid(
                        format!("link.{lname}.down"),
                        format!("part '{d}'"),
                        format!(
                            "has two upstream links, '{}' and '{lname}': a part hangs from one \
                             link",
                            link_names[usize::from(other)]
                        ),
                    ));
                }
                part.up = Some(l as LinkId);
                down.push(id);
            }
            if down.is_empty() {
                return Err(invalid(
                    format!("link.{lname}"),
                    what,
                    "has no downstream end: list its parts in `down`",
                ));
            }
            links.push(Link {
                name: lname.clone(),
                kind: link_kind(lname, s)?,
                up,
                down,
            });
            link_names.push(lname);
        }
        let is_host = |p: &Part| matches!(p.kind, PartKind::HostBridge { .. });
        let hosts: Vec<&Part> = parts.iter().filter(|p| is_host(p)).collect();
        let root = match hosts.as_slice() {
            [_] => parts.iter().position(is_host).expect("one host bridge") as PartId,
            [] => {
                return Err(invalid(
                    "part",
                    "topology",
                    "no part of kind \"host-bridge\": the tree needs its root (the MCH, the \
                     system agent)",
                ))
            }
            [_, second, ..] => {
                return Err(invalid(
                    format!("part.{}", second.name),
                    format!("part '{}'", second.name),
                    format!(
                        "a second host bridge (after '{}'): a platform has one root; make it \
                         a hub below the first",
                        hosts[0].name
                    ),
                ))
            }
        };
        if let Some(host) = parts.iter().find(|p| is_host(p) && p.up.is_some()) {
            return Err(invalid(
                format!("part.{}", host.name),
                format!("part '{}'", host.name),
                "the host bridge is the root of the tree: no link lists it in `down`",
            ));
        }
        let orphans: Vec<&str> = parts
            .iter()
            .filter(|p| p.up.is_none() && !is_host(p))
            .map(|p| p.name.as_str())
            .collect();
        if let Some(first) = orphans.first() {
            return Err(invalid(
                format!("part.{first}"),
                format!("part '{first}'"),
                format!(
                    "hangs from no link (nor do: {}); list it in the `down` of the link it \
                     sits on",
                    if orphans.len() > 1 {
                        orphans[1..].join(", ")
                    } else {
                        "no other part".into()
                    }
                ),
            ));
        }
        let mut wires = Vec::with_capacity(f.wire.len());
        for (i, w) in f.wire.iter().enumerate() {
            let what = format!("wire {}.{} -> {}.{}", w.from, w.from_line, w.to, w.to_line);
            let key = |k: &str| format!("wire.{i}.{k}");
            let from = find(&w.from, &key("from"), &what)?;
            let to = find(&w.to, &key("to"), &what)?;
            // A wire leaves the PIRQ router's INTA#-INTH# or a conventional PCI device's INTx#
            // pin, and ends at an interrupt controller's input or at the router.
            let lines = match parts[usize::from(from)].kind {
                PartKind::PirqRouter => 8,
                PartKind::Endpoint { .. } => 4,
                _ => {
                    return Err(invalid(
                        key("from"),
                        what,
                        format!(
                            "'{}' drives no interrupt line: a wire starts at the PIRQ router or \
                             at a PCI device's pin",
                            w.from
                        ),
                    ))
                }
            };
            if w.from_line >= lines {
                return Err(invalid(
                    key("from_line"),
                    what,
                    format!("'{}' has lines 0 to {}", w.from, lines - 1),
                ));
            }
            if !matches!(
                parts[usize::from(to)].kind,
                PartKind::Function { .. } | PartKind::PirqRouter
            ) {
                return Err(invalid(
                    key("to"),
                    what,
                    format!(
                        "'{}' takes no interrupt line: a wire ends at an interrupt controller \
                         (a function) or at the PIRQ router",
                        w.to
                    ),
                ));
            }
            wires.push(Wire {
                from,
                from_line: w.from_line,
                to,
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
                let name = &t.parts[usize::from(p)].name;
                return Err(invalid(
                    format!("part.{name}"),
                    format!("part '{name}'"),
                    "its links go round in a cycle and never reach the host bridge",
                ));
            }
        }
        // One core per APIC ID: a message to an ID reaches one Local APIC.
        let mut ids = [false; 256];
        for p in &t.parts {
            if let PartKind::Core { apic_id } = p.kind {
                if apic_id == 0xFF {
                    return Err(invalid(
                        format!("part.{}.apic_id", p.name),
                        format!("part '{}'", p.name),
                        "APIC ID 0xFF is the broadcast ID, not a core's: use 0 to 0xFE",
                    ));
                }
                if std::mem::replace(&mut ids[usize::from(apic_id)], true) {
                    return Err(invalid(
                        format!("part.{}.apic_id", p.name),
                        format!("part '{}'", p.name),
                        format!("APIC ID {apic_id} is another core's: give each core its own"),
                    ));
                }
            }
        }
        Ok(t)
    }

    /// Parse the tables of a platform file's text.
    pub fn from_toml(text: &str) -> Result<Topology, TopologyError> {
        let f: TopologyFile =
            toml::from_str(text).map_err(|e| invalid("", "platform file", e.to_string()))?;
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

fn part_kind(name: &str, p: &PartSection) -> Result<PartKind, TopologyError> {
    let what = || format!("part '{name}'");
    let Some(kind) = p.kind else {
        return Err(invalid(
            format!("part.{name}"),
            what(),
            "has no `kind`: use core, host-bridge, memory, bridge, port, pirq-router, \
             function, endpoint, hub, pit, rtc, parallel-port or counter-card",
        ));
    };
    let kind_name = serde_kebab(kind);
    let missing = |key: &str| {
        invalid(
            format!("part.{name}"),
            what(),
            format!("a {kind_name} needs `{key}`"),
        )
    };
    // Keys another kind takes are refused, so a misplaced value cannot pass unseen.
    let allowed: &[&str] = match kind {
        PartKindName::Core => &["apic_id"],
        PartKindName::HostBridge => &["requester_id"],
        PartKindName::Memory => &["base", "size", "read_ns"],
        PartKindName::Bridge => &["dev", "intx_swizzle", "link_pipeline_ns"],
        PartKindName::Function => &["io", "mem"],
        PartKindName::Endpoint => &["bdf", "intx_pin", "io", "mem"],
        PartKindName::Port | PartKindName::PirqRouter | PartKindName::Hub => &[],
        PartKindName::Pit => &["io", "irq", "clock_hz"],
        PartKindName::Rtc => &["io", "irq", "periodic_hz", "crystal_ppm"],
        PartKindName::ParallelPort => &["io", "irq", "ack_to_irq_ns"],
        PartKindName::CounterCard => &["mem", "counter_hz", "counter_bits", "data_clocks"],
    };
    let given = [
        ("apic_id", p.apic_id.is_some()),
        ("requester_id", p.requester_id.is_some()),
        ("base", p.base.is_some()),
        ("size", p.size.is_some()),
        ("read_ns", p.read_ns.is_some()),
        ("dev", p.dev.is_some()),
        ("intx_swizzle", p.intx_swizzle.is_some()),
        ("link_pipeline_ns", p.link_pipeline_ns.is_some()),
        ("bdf", p.bdf.is_some()),
        ("intx_pin", p.intx_pin.is_some()),
        ("io", !p.io.is_empty()),
        ("mem", !p.mem.is_empty()),
        ("irq", p.irq.is_some()),
        ("clock_hz", p.clock_hz.is_some()),
        ("periodic_hz", p.periodic_hz.is_some()),
        ("crystal_ppm", p.crystal_ppm.is_some()),
        ("ack_to_irq_ns", p.ack_to_irq_ns.is_some()),
        ("counter_hz", p.counter_hz.is_some()),
        ("counter_bits", p.counter_bits.is_some()),
        ("data_clocks", p.data_clocks.is_some()),
    ];
    if let Some((key, _)) = given.iter().find(|(k, set)| *set && !allowed.contains(k)) {
        return Err(invalid(
            format!("part.{name}.{key}"),
            what(),
            format!(
                "a {kind_name} has no `{key}`; it takes {}",
                if allowed.is_empty() {
                    "no keys but `kind`".to_string()
                } else {
                    allowed
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ),
        ));
    }
    for w in &p.io {
        if w[0] > w[1] {
            return Err(invalid(
                format!("part.{name}.io"),
                what(),
                format!(
                    "I/O window [{:#x}, {:#x}] ends before it starts",
                    w[0], w[1]
                ),
            ));
        }
    }
    let nonnegative = |v: f64, key: &str| {
        if v.is_finite() && (0.0..=1e9).contains(&v) {
            Ok(v)
        } else {
            Err(invalid(
                format!("part.{name}.{key}"),
                what(),
                format!("{key} = {v}: use 0 to 1e9 ns"),
            ))
        }
    };
    let io = || p.io.iter().map(|w| (w[0], w[1])).collect();
    let mem = || p.mem.iter().map(|w| (w[0], w[1])).collect();
    Ok(match kind {
        PartKindName::Core => PartKind::Core {
            apic_id: p.apic_id.ok_or_else(|| missing("apic_id"))?,
        },
        PartKindName::HostBridge => PartKind::HostBridge {
            requester_id: p.requester_id.ok_or_else(|| {
                invalid(
                    format!("part.{name}"),
                    what(),
                    "a host-bridge needs `requester_id`, the ID on the CPU's requests \
                     (\"000:00:0\")",
                )
            })?,
        },
        PartKindName::Memory => PartKind::Memory {
            base: p.base.ok_or_else(|| missing("base"))?,
            size: p.size.ok_or_else(|| missing("size"))?,
            read_ns: nonnegative(p.read_ns.unwrap_or(0.0), "read_ns")?,
        },
        PartKindName::Bridge => {
            if let Some(v) = p.intx_swizzle.filter(|&v| v > 3) {
                return Err(invalid(
                    format!("part.{name}.intx_swizzle"),
                    what(),
                    format!("intx_swizzle = {v}: INTXSWZCTRL has two bits (0-3)"),
                ));
            }
            let dev = p.dev.ok_or_else(|| missing("dev"))?;
            if dev > 31 {
                return Err(invalid(
                    format!("part.{name}.dev"),
                    what(),
                    format!("dev = {dev}: PCI device numbers are 0-31"),
                ));
            }
            PartKind::Bridge {
                dev,
                intx_swizzle: p.intx_swizzle,
                link_pipeline_ns: nonnegative(
                    p.link_pipeline_ns
                        .ok_or_else(|| missing("link_pipeline_ns"))?,
                    "link_pipeline_ns",
                )?,
            }
        }
        PartKindName::Port => PartKind::Port,
        PartKindName::PirqRouter => PartKind::PirqRouter,
        // A board device routes as the function it is; its own keys are the assembler's
        // (`scenario/freebsd/assemble.rs` reads them into the device).
        PartKindName::Function
        | PartKindName::Pit
        | PartKindName::Rtc
        | PartKindName::ParallelPort
        | PartKindName::CounterCard => PartKind::Function {
            io: io(),
            mem: mem(),
        },
        PartKindName::Endpoint => PartKind::Endpoint {
            bdf: p.bdf.ok_or_else(|| {
                invalid(
                    format!("part.{name}"),
                    what(),
                    "an endpoint needs `bdf` (bus:device:function)",
                )
            })?,
            intx_pin: p.intx_pin,
            io: io(),
            mem: mem(),
        },
        PartKindName::Hub => PartKind::Hub,
    })
}

/// A kind's name as the file writes it.
fn serde_kebab<T: Serialize>(v: T) -> String {
    toml::Value::try_from(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn link_kind(name: &str, s: &LinkSection) -> Result<LinkKind, TopologyError> {
    let what = || format!("link '{name}'");
    let Some(kind) = s.kind else {
        return Err(invalid(
            format!("link.{name}"),
            what(),
            "has no `kind`: use serial, shared-bus, delay, clocked or isa-bus",
        ));
    };
    let kind_name = serde_kebab(kind);
    let need = |v: Option<f64>, key: &str| {
        v.ok_or_else(|| {
            invalid(
                format!("link.{name}"),
                what(),
                format!("a {kind_name} link needs `{key}`"),
            )
        })
    };
    let allowed: &[&str] = match kind {
        LinkKindName::Serial => &["generation", "width", "pipeline_ns"],
        LinkKindName::SharedBus => &["clock_hz", "request_phase_clocks", "transaction_clocks"],
        LinkKindName::Delay => &["ns"],
        LinkKindName::Clocked => &["clock_hz", "down_clocks", "up_clocks"],
        LinkKindName::IsaBus => &[
            "clock_hz",
            "pci_clock_divisor",
            "io8_clocks",
            "io16_clocks",
            "io8_recovery_clocks",
            "io16_recovery_clocks",
            "intack_clocks",
        ],
    };
    let given = [
        ("generation", s.generation.is_some()),
        ("width", s.width.is_some()),
        ("pipeline_ns", s.pipeline_ns.is_some()),
        ("clock_hz", s.clock_hz.is_some()),
        ("request_phase_clocks", s.request_phase_clocks.is_some()),
        ("transaction_clocks", s.transaction_clocks.is_some()),
        ("ns", s.ns.is_some()),
        ("down_clocks", s.down_clocks.is_some()),
        ("up_clocks", s.up_clocks.is_some()),
        ("pci_clock_divisor", s.pci_clock_divisor.is_some()),
        ("io8_clocks", s.io8_clocks.is_some()),
        ("io16_clocks", s.io16_clocks.is_some()),
        ("io8_recovery_clocks", s.io8_recovery_clocks.is_some()),
        ("io16_recovery_clocks", s.io16_recovery_clocks.is_some()),
        ("intack_clocks", s.intack_clocks.is_some()),
    ];
    if let Some((key, _)) = given.iter().find(|(k, set)| *set && !allowed.contains(k)) {
        return Err(invalid(
            format!("link.{name}.{key}"),
            what(),
            format!(
                "a {kind_name} link has no `{key}`; it takes {}",
                allowed
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    let in_range = |v: f64, key: &str, lo: f64, hi: f64, unit: &str| {
        if v.is_finite() && v >= lo && v <= hi {
            Ok(v)
        } else {
            Err(invalid(
                format!("link.{name}.{key}"),
                what(),
                format!("{key} = {v} {unit} is outside the range this model accepts, {lo} to {hi} {unit}"),
            ))
        }
    };
    Ok(match kind {
        LinkKindName::Serial => {
            let gen = need(s.generation.map(f64::from), "generation")? as u8;
            let lanes = need(s.width.map(f64::from), "width")? as u32;
            let bad = |key: &str| {
                let key = format!("link.{name}{key}");
                move |m: String| invalid(key, what(), m)
            };
            if s.down.len() != 1 {
                return Err(bad(".down")(format!(
                    "a serial link joins two parts, but its `down` lists {}: give it one \
                     downstream end",
                    s.down.join(", ")
                )));
            }
            LinkKind::Serial {
                gen: LinkGen::new(gen).map_err(bad(".generation"))?,
                width: LinkWidth::new(lanes).map_err(bad(".width"))?,
                pipeline_ns: in_range(
                    need(s.pipeline_ns, "pipeline_ns")?,
                    "pipeline_ns",
                    0.0,
                    1e9,
                    "ns",
                )?,
            }
        }
        LinkKindName::SharedBus => LinkKind::SharedBus {
            clock_hz: in_range(need(s.clock_hz, "clock_hz")?, "clock_hz", 1e5, 1e11, "Hz")?,
            request_phase_clocks: in_range(
                need(
                    s.request_phase_clocks.map(f64::from),
                    "request_phase_clocks",
                )?,
                "request_phase_clocks",
                0.0,
                1e6,
                "clocks",
            )? as u32,
            transaction_clocks: in_range(
                need(s.transaction_clocks.map(f64::from), "transaction_clocks")?,
                "transaction_clocks",
                0.0,
                1e6,
                "clocks",
            )? as u32,
        },
        LinkKindName::Delay => LinkKind::Delay {
            ns: in_range(need(s.ns, "ns")?, "ns", 0.0, 1e9, "ns")?,
        },
        LinkKindName::Clocked => {
            let clocks = |v: Option<u32>, key: &str| -> Result<u32, TopologyError> {
                Ok(in_range(need(v.map(f64::from), key)?, key, 0.0, 1e6, "clocks")? as u32)
            };
            LinkKind::Clocked {
                clock_hz: in_range(need(s.clock_hz, "clock_hz")?, "clock_hz", 1e5, 1e11, "Hz")?,
                down_clocks: clocks(s.down_clocks, "down_clocks")?,
                up_clocks: clocks(s.up_clocks, "up_clocks")?,
            }
        }
        LinkKindName::IsaBus => {
            let clocks = |v: Option<u32>, key: &str, lo: f64| -> Result<u32, TopologyError> {
                Ok(in_range(need(v.map(f64::from), key)?, key, lo, 1e3, "clocks")? as u32)
            };
            let recovery =
                |v: Option<f64>, key: &str| in_range(need(v, key)?, key, 0.0, 100.0, "SYSCLKs");
            LinkKind::IsaBus(IsaTiming {
                pci_clock_hz: in_range(need(s.clock_hz, "clock_hz")?, "clock_hz", 1e6, 1e9, "Hz")?,
                pci_clock_divisor: clocks(s.pci_clock_divisor, "pci_clock_divisor", 1.0)?,
                io8_clocks: clocks(s.io8_clocks, "io8_clocks", 1.0)?,
                io16_clocks: clocks(s.io16_clocks, "io16_clocks", 1.0)?,
                io8_recovery_clocks: recovery(s.io8_recovery_clocks, "io8_recovery_clocks")?,
                io16_recovery_clocks: recovery(s.io16_recovery_clocks, "io16_recovery_clocks")?,
                intack_clocks: clocks(s.intack_clocks, "intack_clocks", 0.0)?,
            })
        }
    })
}
