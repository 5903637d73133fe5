//! `irqlab plan swizzle`: INTXSWZCTRL values for a platform's populated root ports that spread
//! their INTx over the system interrupts, and the IRQ table without and with them (seed 001,
//! Tables 2 and 3).
//!
//! The population is the platform with cards in its ports (`PORT=FUNCTIONS`): a card sits at
//! device 0 on its port's secondary bus, function f signalling INT(A+f), as a dual-port 82571EB
//! does with its two LAN functions on INTA and INTB (research-001-003 A1; seed 001 Table 3's
//! unswizzled row). Each function's IRQ follows from the topology's routes (every bridge's
//! device-number swizzle, then INTXSWZCTRL, then the PIRQ wire to the IO-APIC); the functions
//! are named eth0, eth1, ... in bus order, as Linux names interfaces in the order it finds them.
//!
//! The choice, over every combination of values of the ports that have INTXSWZCTRL and a card
//! below them (at most 4^7 on an Intel 5000), in this order:
//! 1. the fewest functions on unwired router lines (a line without a wire to the IO-APIC loses
//!    its interrupts);
//! 2. given flows (the NICs that carry traffic, [`Population::plan_for`]): the fewest of the
//!    flows' NICs on the busiest system interrupt, then the smallest sum of squares of the flows'
//!    NICs per interrupt. A level-triggered line's ISRs all run on the one CPU the line's
//!    affinity names, so the flows can use at most as many CPUs as their NICs have lines; a NIC
//!    that carries nothing costs the CPU its line goes to only an ICR read per interrupt of
//!    the line (seed 001 4.1; `kernels/linux-2.4.21-i386-smp.toml`'s shared-line path);
//! 3. the fewest functions on the busiest system interrupt (seed 001 4.1: "ensure that the
//!    interrupts load is balanced across the available system interrupts");
//! 4. the most even spread (the smallest sum of squared loads);
//! 5. the fewest registers changed from their current values (the platform file's; 0 at reset):
//!    every register a BIOS writes is one more it must get right (seed 001 3, "must comprehend
//!    the PCIe configuration");
//! 6. a tie-break: the combinations in lexicographic order of the ports' values in port order,
//!    the first taken, so a tie keeps the earlier ports' values low and changes a later port.
//!
//! Without flows (the seed's case: the BIOS knows no traffic) criterion 2 is void and every INTx
//! function counts alike. With flows over some of the NICs, an even spread of all functions can
//! still put two of the flows' NICs on one line (seed 001's board with eth0<->eth4 and
//! eth1<->eth5: spreading all eight, the later port's change moves eth4 and eth5 onto eth0's and
//! eth1's lines, and the two flows get two CPUs, not four); criterion 2 picks, among the even
//! spreads, one that keeps them apart.

use crate::hw::pcie::{Bdf, IntxPin};
use crate::plan::affinity::{AffinityError, Flow};
use crate::scenario::{parse_file, Origin, PlatformFile, ScenarioError};
use crate::topology::firmware::IntxRoute;
use crate::topology::{
    LinkKindName, LinkSection, PartKind, PartKindName, PartSection, Topology, TopologyError,
    TopologyFile,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The most ports with INTXSWZCTRL searched at once.
pub const MAX_PORTS: usize = 8;

/// A card in a port: `PORT=FUNCTIONS`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Card {
    pub port: String,
    pub functions: u8,
}

impl std::str::FromStr for Card {
    type Err = String;
    fn from_str(s: &str) -> Result<Card, String> {
        let (port, n) = s.split_once('=').unwrap_or((s, "1"));
        let functions: u8 = n.trim().parse().map_err(|_| {
            format!("'{s}': expected PORT=FUNCTIONS, FUNCTIONS a number of 1-8 (port6=2)")
        })?;
        if !(1..=8).contains(&functions) {
            return Err(format!(
                "'{s}': a PCI device has 1-8 functions, not {functions}"
            ));
        }
        if port.trim().is_empty() {
            return Err(format!("'{s}': name the root port (port6=2)"));
        }
        Ok(Card {
            port: port.trim().to_string(),
            functions,
        })
    }
}

// The plan's types are the result model's, which the renderers read (`irqlab_stats::plan`).
pub use irqlab_stats::plan::{Function, Register, SwizzlePlan};

/// A candidate's score, compared lexicographically (the module doc's criteria in order).
type Score = (usize, usize, usize, usize, usize, usize);

/// A platform with cards: its topology and where the cards went.
pub struct Population {
    pub platform_path: PathBuf,
    pub platform: PlatformFile,
    text: String,
    pub topology: Topology,
}

impl Population {
    /// Read `platform` and put `cards` in its ports.
    pub fn load(platform: &Path, cards: &[Card]) -> Result<Population, ScenarioError> {
        let text = crate::shipped::read(platform).map_err(|cause| ScenarioError::Io {
            path: platform.to_owned(),
            named_by: None,
            cause,
        })?;
        let file: PlatformFile = parse_file(platform, &text)?;
        let topology = build(platform, &text, &file, cards)?;
        Ok(Population {
            platform_path: platform.to_owned(),
            platform: file,
            text,
            topology,
        })
    }

    fn file_error(&self, key: &str, message: String) -> ScenarioError {
        file_error(&self.platform_path, &self.text, key, message)
    }

    /// The parts of the functions `flows` name, each once; a flow naming no function, or a
    /// function in two flows, is refused as `plan affinity` refuses it.
    fn flow_parts(
        &self,
        flows: &[Flow],
        routes: &[IntxRoute],
        names: &BTreeMap<u16, String>,
    ) -> Result<Vec<u16>, ScenarioError> {
        let refuse = |e: AffinityError| ScenarioError::Invalid {
            origin: Origin::Arg("plan".into()),
            key: "--flow".into(),
            message: e.to_string(),
        };
        let mut parts = Vec::new();
        for f in flows {
            for nic in [&f.a, &f.b] {
                let Some(r) = routes.iter().find(|r| names[&r.part] == *nic) else {
                    return Err(refuse(AffinityError::UnknownNic {
                        flow: format!("{}:{}", f.a, f.b),
                        nic: nic.clone(),
                        known: routes
                            .iter()
                            .map(|r| names[&r.part].as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    }));
                };
                if parts.contains(&r.part) {
                    return Err(refuse(AffinityError::NicTwice(nic.clone())));
                }
                parts.push(r.part);
            }
        }
        Ok(parts)
    }

    /// The platform's CPUs in Linux's order (by APIC ID, the boot CPU first), each with its
    /// socket: the cores on one front-side bus (one shared-bus link) are one package, as
    /// Blackford gives each socket its own bus; on one bus or ring, one socket.
    pub fn cpus(&self) -> Vec<crate::plan::affinity::Cpu> {
        let t = &self.topology;
        let mut cores: Vec<(u8, Option<u16>)> = t
            .parts
            .iter()
            .filter_map(|p| match p.kind {
                PartKind::Core { apic_id } => Some((apic_id, p.up)),
                _ => None,
            })
            .collect();
        cores.sort_by_key(|&(apic, _)| apic);
        let mut links: Vec<Option<u16>> = Vec::new();
        cores
            .iter()
            .enumerate()
            .map(|(cpu, &(_, up))| {
                let socket = links.iter().position(|&l| l == up).unwrap_or_else(|| {
                    links.push(up);
                    links.len() - 1
                });
                crate::plan::affinity::Cpu { cpu, socket }
            })
            .collect()
    }

    /// The ports that have INTXSWZCTRL and an INTx function below them, in port order (bus 0
    /// device number, then name).
    fn swizzlable(&self, routes: &[IntxRoute]) -> Vec<u16> {
        let t = &self.topology;
        let mut ports: Vec<u16> = t
            .parts
            .iter()
            .enumerate()
            .filter(|(_, x)| {
                matches!(
                    x.kind,
                    PartKind::Bridge {
                        intx_swizzle: Some(_),
                        ..
                    }
                )
            })
            .map(|(i, _)| i as u16)
            .filter(|&b| routes.iter().any(|r| t.ancestry(r.part).contains(&b)))
            .collect();
        ports.sort_by_key(|&b| (device_of(t, b), t.parts[usize::from(b)].name.clone()));
        ports
    }

    /// Choose the values for every INTx function alike (module doc) and report.
    pub fn plan(&self) -> Result<SwizzlePlan, ScenarioError> {
        self.plan_for(&[])
    }

    /// Choose the values with `flows` carrying the traffic (module doc, criterion 2) and report.
    /// A flow naming no function of the population is refused with the functions' names.
    pub fn plan_for(&self, flows: &[Flow]) -> Result<SwizzlePlan, ScenarioError> {
        let route_error = |e: TopologyError| self.file_error("part", e.to_string());
        let before = self.topology.intx_routes().map_err(route_error)?;
        if before.is_empty() {
            return Err(ScenarioError::Invalid {
                origin: Origin::Arg("plan".into()),
                key: "--card".into(),
                message: "no function signals INTx: put a card in a port (--card port6=2)".into(),
            });
        }
        let ports = self.swizzlable(&before);
        // An Intel 5000 has seven such ports (4^7 combinations); a larger search is refused.
        if ports.len() > MAX_PORTS {
            return Err(self.file_error(
                "part",
                format!(
                    "{} populated ports have `intx_swizzle`: at most {MAX_PORTS} are searched \
                     (4^{MAX_PORTS} combinations); an Intel 5000 has seven",
                    ports.len()
                ),
            ));
        }
        let current: Vec<u8> = ports
            .iter()
            .map(|&b| swizzle_of(&self.topology, b))
            .collect();
        let unwired = |routes: &[IntxRoute]| routes.iter().filter(|r| r.irq.is_none()).count();
        // eth0, eth1, ... in bus order: the routes' order, which no swizzle value changes.
        let names: BTreeMap<u16, String> = before
            .iter()
            .enumerate()
            .map(|(i, r)| (r.part, format!("eth{i}")))
            .collect();
        let flow_parts = self.flow_parts(flows, &before, &names)?;
        let mut best: Option<(Score, Vec<u8>)> = None;
        let combos = 4usize.pow(ports.len() as u32);
        let mut t = self.topology.clone();
        for n in 0..combos {
            // Port order, values from 0 up: the first port is the most significant digit.
            let values: Vec<u8> = (0..ports.len())
                .map(|i| ((n / 4usize.pow((ports.len() - 1 - i) as u32)) % 4) as u8)
                .collect();
            for (&b, &v) in ports.iter().zip(&values) {
                set_swizzle(&mut t, b, v);
            }
            let routes = t.intx_routes().map_err(route_error)?;
            let lost = unwired(&routes);
            let flow_loads = loads(routes.iter().filter(|r| flow_parts.contains(&r.part)));
            let flow_busiest = flow_loads.values().copied().max().unwrap_or(0);
            let flow_squares = flow_loads.values().map(|&l| l * l).sum();
            let loads = loads(&routes);
            let busiest = loads.values().copied().max().unwrap_or(0);
            let squares = loads.values().map(|&l| l * l).sum();
            let changed = values.iter().zip(&current).filter(|(v, c)| v != c).count();
            let key: Score = (lost, flow_busiest, flow_squares, busiest, squares, changed);
            if best.as_ref().is_none_or(|(k, _)| key < *k) {
                best = Some((key, values));
            }
        }
        let (_, values) = best.expect("at least the empty combination");
        for (&b, &v) in ports.iter().zip(&values) {
            set_swizzle(&mut t, b, v);
        }
        let after = t.intx_routes().map_err(route_error)?;
        let functions: Vec<Function> = before
            .iter()
            .map(|b| {
                let a = after.iter().find(|a| a.part == b.part).expect("same parts");
                let port = self
                    .topology
                    .ancestry(b.part)
                    .into_iter()
                    .find(|&p| {
                        matches!(
                            self.topology.parts[usize::from(p)].kind,
                            PartKind::Bridge { .. }
                        )
                    })
                    .map(|p| self.topology.parts[usize::from(p)].name.clone())
                    .unwrap_or_default();
                Function {
                    name: names[&b.part].clone(),
                    port,
                    bdf: b.bdf,
                    pin: b.pin.letter(),
                    pirq_before: line_letter(b.router_line),
                    irq_before: b.irq,
                    pirq_after: line_letter(a.router_line),
                    irq_after: a.irq,
                }
            })
            .collect();
        let table = |routes: &[IntxRoute]| {
            let mut m: BTreeMap<u8, Vec<String>> = BTreeMap::new();
            for r in routes {
                if let Some(irq) = r.irq {
                    m.entry(irq).or_default().push(names[&r.part].clone());
                }
            }
            m
        };
        let table_before = table(&before);
        let table_after = table(&after);
        let busiest = |m: &BTreeMap<u8, Vec<String>>| m.values().map(Vec::len).max().unwrap_or(0);
        Ok(SwizzlePlan {
            platform: self.platform.name.clone(),
            registers: ports
                .iter()
                .zip(current.iter().zip(&values))
                .map(|(&b, (&before, &after))| Register {
                    port: self.topology.parts[usize::from(b)].name.clone(),
                    device: device_of(&self.topology, b),
                    before,
                    after,
                })
                .collect(),
            busiest_before: busiest(&table_before),
            busiest_after: busiest(&table_after),
            table_before,
            table_after,
            functions,
        })
    }
}

/// A router line's letter: PIRQA = 0 ... PIRQH = 7.
fn line_letter(line: u8) -> char {
    (b'A' + line.min(25)) as char
}

/// IRQ -> how many functions signal on it.
fn loads<'a>(routes: impl IntoIterator<Item = &'a IntxRoute>) -> BTreeMap<u8, usize> {
    let mut m = BTreeMap::new();
    for r in routes {
        if let Some(irq) = r.irq {
            *m.entry(irq).or_insert(0) += 1;
        }
    }
    m
}

fn device_of(t: &Topology, b: u16) -> u8 {
    match t.parts[usize::from(b)].kind {
        PartKind::Bridge { dev, .. } => dev,
        _ => 0,
    }
}

fn swizzle_of(t: &Topology, b: u16) -> u8 {
    match t.parts[usize::from(b)].kind {
        PartKind::Bridge { intx_swizzle, .. } => intx_swizzle.unwrap_or(0),
        _ => 0,
    }
}

fn set_swizzle(t: &mut Topology, b: u16, v: u8) {
    if let PartKind::Bridge { intx_swizzle, .. } = &mut t.parts[usize::from(b)].kind {
        *intx_swizzle = Some(v);
    }
}

fn file_error(path: &Path, text: &str, key: &str, message: String) -> ScenarioError {
    let (line, column) = crate::scenario::read::locate(text, key).unwrap_or((1, 1));
    ScenarioError::Invalid {
        origin: Origin::File {
            path: path.to_owned(),
            line,
            column,
        },
        key: key.to_string(),
        message,
    }
}

fn card_error(card: &Card, message: String) -> ScenarioError {
    ScenarioError::Invalid {
        origin: Origin::Arg(format!("--card {}={}", card.port, card.functions)),
        key: card.port.clone(),
        message,
    }
}

/// The platform's topology with `cards` in their ports.
fn build(
    path: &Path,
    text: &str,
    p: &PlatformFile,
    cards: &[Card],
) -> Result<Topology, ScenarioError> {
    let mut f = TopologyFile {
        part: p.part.clone(),
        link: p.link.clone(),
        wire: p.wire.clone(),
    };
    let topology_error = |e: TopologyError| match e {
        TopologyError::Invalid { ref key, .. } => file_error(path, text, key, e.to_string()),
        other => file_error(path, text, "part", other.to_string()),
    };
    let platform_only = Topology::from_file(&f).map_err(topology_error)?;
    // The plan names IRQs by IO-APIC pin, as Linux's IO-APIC routing does: a wire past the last
    // pin is refused as irqlab sim refuses it (scenario/check.rs).
    for (i, w) in p.wire.iter().enumerate() {
        if w.to_line >= crate::hw::ioapic::PINS {
            return Err(file_error(
                path,
                text,
                &format!("wire.{i}.to_line"),
                format!(
                    "wire {i}: line {} of '{}' is wired to IO-APIC pin {}, but an IO-APIC has \
                     pins 0-23 (82093AA: 24 redirection entries); use 0-23",
                    w.from_line, w.from, w.to_line
                ),
            ));
        }
    }
    let buses = platform_only.bus_numbers();
    // The empty slots: ports with nothing below them in the platform file.
    let bridges: Vec<&str> = platform_only
        .parts
        .iter()
        .enumerate()
        .filter(|(i, x)| {
            matches!(x.kind, PartKind::Bridge { .. })
                && platform_only.children(*i as u16).next().is_none()
        })
        .map(|(_, x)| x.name.as_str())
        .collect();
    let ports = if bridges.is_empty() {
        "it has no empty root or switch port (a part of kind \"bridge\" with nothing below it)"
            .to_string()
    } else {
        format!("its empty ports: {}", bridges.join(", "))
    };
    for (i, card) in cards.iter().enumerate() {
        let Some(port) = platform_only.part(&card.port) else {
            return Err(card_error(
                card,
                format!(
                    "the platform '{}' has no part '{}'; {ports}",
                    p.name, card.port
                ),
            ));
        };
        let bus = match (
            platform_only.parts[usize::from(port)].kind.clone(),
            buses[usize::from(port)],
        ) {
            (PartKind::Bridge { .. }, Some(bus)) => bus,
            _ => {
                return Err(card_error(
                    card,
                    format!(
                        "'{}' is not a root or switch port (kind \"bridge\"); {ports}",
                        card.port
                    ),
                ))
            }
        };
        if platform_only.children(port).next().is_some() {
            return Err(card_error(
                card,
                format!(
                    "port '{}' already has a link below it in the platform file: a card \
                     needs an empty slot; {ports}",
                    card.port
                ),
            ));
        }
        if cards[..i].iter().any(|c| c.port == card.port) {
            return Err(card_error(
                card,
                format!("port '{}' has a card already: one card per slot", card.port),
            ));
        }
        for func in 0..card.functions {
            let name = format!("card-{}-fn{func}", card.port);
            f.part.insert(
                name.clone(),
                PartSection {
                    kind: Some(PartKindName::Endpoint),
                    bdf: Some(Bdf::new(bus, 0, func)),
                    intx_pin: Some(IntxPin::from_index(func % 4)),
                    ..PartSection::default()
                },
            );
            // Function 0 on the slot's link (routing only: its timing is not used here);
            // the others are functions of the same device, behind it.
            let link = if func == 0 {
                LinkSection {
                    kind: Some(LinkKindName::Serial),
                    up: card.port.clone(),
                    down: vec![name.clone()],
                    generation: Some(1),
                    width: Some(4),
                    pipeline_ns: Some(0.0),
                    ..LinkSection::default()
                }
            } else {
                LinkSection {
                    kind: Some(LinkKindName::Delay),
                    up: format!("card-{}-fn0", card.port),
                    down: vec![name.clone()],
                    ns: Some(0.0),
                    ..LinkSection::default()
                }
            };
            f.link.insert(format!("{name}-link"), link);
        }
    }
    Topology::from_file(&f).map_err(topology_error)
}
