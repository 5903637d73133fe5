//! The interconnect between the cores, the hubs and the devices: the links of the platform's
//! topology ([`crate::topology`]), each with its own timing and contention, and the route a
//! transaction takes between two of the machine's ends, computed once per pair from the
//! topology (up the tree to the first common part, then down). For the shipped platforms:
//!
//! ```text
//!   cores --FSB (shared bus)-- MCH --core (delay)-- root port --PCIe link k (serial)-- device k
//!                                        |
//!                                     DMI port --DMI (serial)-- ICH --backbone (delay)-- 8259s,
//!                                                                       IO-APIC, PIRQ router
//! ```
//!
//! Seed 000, "Intel Architecture Overview": the MCH routes all requests between the FSB, its PCIe
//! ports and DMI; the ICH hangs off DMI. An SoC of the time (EP80579) has the same blocks on one
//! die, so the same kinds of link serve it with other parameters.

use crate::engine::{SimDuration, SimTime};
use crate::hw::bus::{BusTiming, ClockedCrossing, Cycle, IsaBus, SharedBus};
use crate::hw::pcie::{Dir, Link, LinkConfig};
use crate::topology::{LinkKind, PartId, PartKind, Topology};

/// A link of the topology with its state.
#[derive(Clone, Debug)]
pub enum LinkState {
    /// A serialising link (PCIe, DMI): a FIFO transmitter each way.
    Serial(Link),
    Bus(SharedBus),
    /// A crossing with a fixed latency and no state (inside a hub).
    Delay(SimDuration),
    /// A crossing timed in its bus's clocks, with no state.
    Clocked(ClockedCrossing),
    Isa(IsaBus),
}

/// One hop of a route: a link and the direction it is crossed in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Hop {
    pub link: u8,
    pub dir: Dir,
}

/// The longest route the machine holds: a device behind a switch behind the south bridge's root
/// port to a core on a second front-side bus is 6; between two functions of cards at opposite
/// ends of seed 001's Bensley board (below the ESB2's switch, below its D28) 9.
pub const MAX_HOPS: usize = 12;

/// A fixed sequence of hops.
#[derive(Copy, Clone, Debug)]
pub struct Route {
    hops: [Hop; MAX_HOPS],
    len: u8,
}

impl Route {
    fn of(hops: &[Hop]) -> Route {
        let mut r = Route {
            hops: [Hop {
                link: 0,
                dir: Dir::Down,
            }; MAX_HOPS],
            len: hops.len() as u8,
        };
        r.hops[..hops.len()].copy_from_slice(hops);
        r
    }
    /// Hop `i`, which the caller knows to be on the route (`i < len()`).
    pub fn at(&self, i: u8) -> Hop {
        debug_assert!(i < self.len, "hop {i} of a {}-hop route", self.len);
        self.hops[usize::from(i)]
    }
    pub fn len(&self) -> u8 {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A route of the fabric's table (see [`Fabric::route`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RouteId(u32);

/// Where a transaction starts or ends, in the machine's terms.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// Core `c` of the run (its bus unit and Local APIC).
    Core(u8),
    Device(u8),
    /// The hub's interrupt block (8259 pair, IO-APIC, PIRQ router).
    Ich,
    /// Host memory behind the root complex (a device's DMA).
    Memory,
}

/// The parts of the topology that are the machine's ends.
#[derive(Clone, Debug)]
pub struct Ends {
    pub cores: Vec<PartId>,
    pub devices: Vec<PartId>,
    pub ich: PartId,
    pub memory: PartId,
}

/// A topology the machine cannot run on.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FabricError {
    #[error(
        "the way from '{from}' to '{to}' crosses {hops} links; the model holds at most {MAX_HOPS}"
    )]
    TooLong {
        from: String,
        to: String,
        hops: usize,
    },
    #[error("the topology has {0} links; the model holds at most 255")]
    TooManyLinks(usize),
}

/// The links with their state and the routes between the machine's ends.
#[derive(Clone, Debug)]
pub struct Fabric {
    pub links: Vec<LinkState>,
    /// Routes between every pair of ends, `from * ends + to` ([`Self::end`]).
    routes: Vec<Route>,
    cores: u8,
    devices: u8,
    /// Ends in all: cores, devices, the hub, memory.
    ends: usize,
    /// Every core has the same routes (one host bus): which core a transaction goes to does not
    /// change its way.
    pub cores_share_routes: bool,
    /// The link each device sits on (its root port's link).
    pub device_links: Vec<u8>,
    /// From a device's read request reaching the root complex to its data leaving it (memory
    /// controller and DRAM, coherency); only DMA reads use it.
    pub memory_read: SimDuration,
    /// The memory windows the hub's interrupt block decodes (the IO-APIC's registers), from
    /// the topology: the functions beside the 8259 pair, on its link.
    hub_mem: Vec<(u64, u64)>,
}

/// The outcome of crossing one hop.
#[derive(Copy, Clone, Debug)]
pub struct Crossing {
    /// When the packet reaches the next hop.
    pub arrival: SimTime,
    /// For serial links, when its first symbol went on the wire; for an ISA bus, when the
    /// CPU's I/O cycle began (what an analyzer on the link timestamps).
    pub wire_start: Option<SimTime>,
}

impl Fabric {
    /// The links of `t` in their initial state and the routes between `ends`.
    pub fn new(t: &Topology, ends: &Ends) -> Result<Fabric, FabricError> {
        if t.links.len() > 255 {
            return Err(FabricError::TooManyLinks(t.links.len()));
        }
        let ns = SimDuration::from_ns_f64;
        let links = t
            .links
            .iter()
            .map(|l| match l.kind {
                LinkKind::Serial {
                    gen,
                    width,
                    pipeline_ns,
                } => LinkState::Serial(Link::new(LinkConfig {
                    gen,
                    width,
                    pipeline_latency: ns(pipeline_ns),
                })),
                LinkKind::SharedBus {
                    clock_hz,
                    request_phase_clocks,
                    transaction_clocks,
                } => LinkState::Bus(SharedBus::new(BusTiming {
                    bus_clock_hz: clock_hz,
                    request_phase_clocks,
                    transaction_clocks,
                })),
                LinkKind::Delay { ns: d } => LinkState::Delay(ns(d)),
                LinkKind::Clocked {
                    clock_hz,
                    down_clocks,
                    up_clocks,
                } => LinkState::Clocked(ClockedCrossing::new(clock_hz, down_clocks, up_clocks)),
                LinkKind::IsaBus(ref t) => LinkState::Isa(IsaBus::new(t)),
            })
            .collect();
        let parts: Vec<PartId> = ends
            .cores
            .iter()
            .chain(&ends.devices)
            .copied()
            .chain([ends.ich, ends.memory])
            .collect();
        let mut routes = Vec::with_capacity(parts.len() * parts.len());
        for &from in &parts {
            for &to in &parts {
                let steps = if from == to {
                    // A core's message to itself or its bus peers (an IPI) is one transaction on
                    // its bus, which every agent's Local APIC watches.
                    t.parts[usize::from(from)]
                        .up
                        .map(|l| vec![(l, Dir::Down)])
                        .unwrap_or_default()
                } else {
                    t.path_between(from, to)
                };
                if steps.len() > MAX_HOPS {
                    return Err(FabricError::TooLong {
                        from: t.parts[usize::from(from)].name.clone(),
                        to: t.parts[usize::from(to)].name.clone(),
                        hops: steps.len(),
                    });
                }
                let hops: Vec<Hop> = steps
                    .iter()
                    .map(|&(l, dir)| Hop { link: l as u8, dir })
                    .collect();
                routes.push(Route::of(&hops));
            }
        }
        let device_links = ends
            .devices
            .iter()
            .map(|&d| {
                // A card's other function hangs from function 0 by a delay link: the card's
                // serial link is the first one up. A board device's is its ISA bus, if it
                // sits on one.
                let mut l = t.parts[usize::from(d)]
                    .up
                    .expect("a device hangs from its link");
                while !matches!(
                    t.links[usize::from(l)].kind,
                    LinkKind::Serial { .. } | LinkKind::IsaBus(_)
                ) {
                    match t.parts[usize::from(t.links[usize::from(l)].up)].up {
                        Some(up) => l = up,
                        None => break,
                    }
                }
                l as u8
            })
            .collect();
        let memory_read = match t.parts[usize::from(ends.memory)].kind {
            PartKind::Memory { read_ns, .. } => ns(read_ns),
            _ => SimDuration::ZERO,
        };
        let n = parts.len();
        let same = |a: usize, b: usize| {
            let (ra, rb) = (&routes[a], &routes[b]);
            ra.len == rb.len && ra.hops[..usize::from(ra.len)] == rb.hops[..usize::from(rb.len)]
        };
        let cores_share_routes = (1..ends.cores.len()).all(|c| {
            // From and to core c as from and to core 0, to every other end.
            (ends.cores.len()..n).all(|e| same(c * n + e, e) && same(e * n + c, e * n))
        });
        let hub_link = t.parts[usize::from(ends.ich)].up;
        let hub_mem = (t.parts.iter())
            .filter(|p| p.up == hub_link)
            .flat_map(|p| match &p.kind {
                PartKind::Function { mem, .. } => mem.clone(),
                _ => Vec::new(),
            })
            .collect();
        Ok(Fabric {
            hub_mem,
            links,
            routes,
            ends: n,
            cores_share_routes,
            cores: ends.cores.len() as u8,
            devices: ends.devices.len() as u8,
            device_links,
            memory_read,
        })
    }

    /// The base of the hub's memory window that holds `addr`, if one does (a CPU access
    /// there goes to the hub's interrupt block, at `addr - base` within it).
    pub fn hub_window(&self, addr: u64) -> Option<u64> {
        (self.hub_mem.iter())
            .find(|&&(base, size)| addr >= base && addr - base < size)
            .map(|&(base, _)| base)
    }

    fn end(&self, e: Endpoint) -> usize {
        let (c, d) = (usize::from(self.cores), usize::from(self.devices));
        match e {
            Endpoint::Core(i) => usize::from(i),
            Endpoint::Device(k) => c + usize::from(k),
            Endpoint::Ich => c + d,
            Endpoint::Memory => c + d + 1,
        }
    }

    /// The route from one end to another, by its index (a packet keeps the index, not a copy).
    pub fn route(&self, from: Endpoint, to: Endpoint) -> RouteId {
        RouteId((self.end(from) * self.ends + self.end(to)) as u32)
    }

    /// The number of hops of a route.
    pub fn route_len(&self, r: RouteId) -> u8 {
        self.routes[r.0 as usize].len()
    }

    /// Route `r` itself, a copy (a packet's crossing reads it while it changes the links).
    pub fn route_of(&self, r: RouteId) -> Route {
        self.routes[r.0 as usize]
    }

    /// Hop `i` of route `r` (`i` < its length).
    pub fn hop(&self, r: RouteId, i: u8) -> Hop {
        self.routes[r.0 as usize].at(i)
    }

    /// The serial link device `k` sits on.
    pub fn device_link_mut(&mut self, k: usize) -> &mut Link {
        match &mut self.links[usize::from(self.device_links[k])] {
            LinkState::Serial(l) => l,
            _ => unreachable!("a device sits on a serial link"),
        }
    }

    /// When a packet entering `hop` at `now` leaves it, if the hop has no state (a delay, a
    /// clocked crossing, an ISA bus's reply riding in its cycle): whatever else happens
    /// meanwhile, the crossing takes the same time, so it needs no event of its own.
    pub fn stateless_cross(&self, hop: Hop, now: SimTime) -> Option<SimTime> {
        match &self.links[usize::from(hop.link)] {
            LinkState::Delay(d) => Some(now + *d),
            LinkState::Clocked(c) => Some(c.cross(now, hop.dir == Dir::Down)),
            LinkState::Isa(_) if hop.dir == Dir::Up => Some(now),
            _ => None,
        }
    }

    /// Cross `hop` with a packet of `wire_bytes` (PCIe framing included) and bus cycle `cycle`
    /// entering at `now`.
    pub fn cross(&mut self, hop: Hop, now: SimTime, wire_bytes: u32, cycle: Cycle) -> Crossing {
        match &mut self.links[usize::from(hop.link)] {
            LinkState::Clocked(c) => Crossing {
                arrival: c.cross(now, hop.dir == Dir::Down),
                wire_start: None,
            },
            LinkState::Isa(b) => {
                let (start, arrival) = b.cross_cycle(now, hop.dir == Dir::Down, cycle);
                Crossing {
                    arrival,
                    wire_start: start,
                }
            }
            LinkState::Bus(b) => Crossing {
                arrival: b.transact(now),
                wire_start: None,
            },
            LinkState::Delay(d) => Crossing {
                arrival: now + *d,
                wire_start: None,
            },
            LinkState::Serial(l) => {
                let t = l.transmit(now, hop.dir, wire_bytes);
                Crossing {
                    arrival: t.arrival,
                    wire_start: Some(t.start),
                }
            }
        }
    }

    /// I/O cycles the ISA buses ran.
    pub fn isa_cycles(&self) -> u64 {
        self.links
            .iter()
            .map(|l| match l {
                LinkState::Isa(b) => b.cycles,
                _ => 0,
            })
            .sum()
    }

    /// Replayed TLPs on every serial link.
    pub fn replays(&self) -> u64 {
        self.links
            .iter()
            .map(|l| match l {
                LinkState::Serial(l) => l.path.replays,
                _ => 0,
            })
            .sum()
    }
}
