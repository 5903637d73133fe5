//! Seed 004's PC assembled as an instance of the one machine ([`crate::machine::Machine`]): its
//! topology (the K6 on the Socket 7 bus, the 430TX's host-to-PCI bridge, the PIIX4 with its ISA
//! bus, the cards), the board devices, FreeBSD's programs and the workload's phases, from the
//! scenario's platform, kernel and scenario files; and the run's result.

use super::PpsRun;
use crate::devices::counter_card::CounterCard;
use crate::devices::gps::Gps;
use crate::devices::irq_source::IrqSource;
use crate::devices::parallel_port::ParallelPort;
use crate::devices::pit::Pit;
use crate::devices::rtc::Rtc;
use crate::devices::Board;
use crate::engine::{RngStreams, SimDuration, SimTime};
use crate::hw::ich::{Ich, IchTiming, NOT_WIRED, PIRQ_ROUT_DISABLE};
use crate::hw::lapic::LocalApic;
use crate::hw::pcie::Bdf;
use crate::hw::pic8259::{MASTER_DATA, SLAVE_DATA};
use crate::kernel::costs::KernelInstructions;
use crate::kernel::freebsd::{self, Intr};
use crate::kernel::program::{Builder, Operand, Step, Var};
use crate::kernel::spl::HWI_MASK;
use crate::kernel::{Kernel, SPURIOUS_8259, TICKS};
use crate::machine::fabric::{Ends, Fabric};
use crate::machine::{Core, Machine, MachineBuilder, Phase};
use crate::probes::analyzer::{Analyzer, LatencyProbe};
use crate::probes::pps::PpsProbe;
use crate::result::Count;
use crate::scenario::files::{CardSection, DeviceBus};
use crate::scenario::Scenario;
use crate::scenario::{cold_code, cpu_timing, ScenarioError};
use crate::topology::route::Request;
use crate::topology::{
    LinkKindName, LinkSection, PartKind, PartKindName, PartSection, Topology, TopologyError,
    TopologyFile,
};
use crate::workload::WorkState;
use rand::Rng;

/// The scenario's PCI cards' memory windows (BARs the BIOS would assign).
const CARD_BASE: u64 = 0xE010_0000;
/// The ISA cards' I/O windows: 32 ports each from here (their addresses change no timing).
const ISA_BASE: u16 = 0x300;

/// What the result needs from the assembled machine besides its probe.
pub(super) struct Handles {
    deferrals: Option<freebsd::Deferrals>,
    rtc_count: Var,
    sources: Vec<usize>,
}

/// The 8254: its part's name, the line counter 0 drives and its input clock.
pub(super) struct PitPart {
    pub name: String,
    pub irq: u8,
    pub clock_hz: f64,
}

/// The RTC: its line, its periodic rate and its own crystal's error.
pub(super) struct RtcPart {
    pub name: String,
    pub irq: u8,
    pub periodic_hz: f64,
    pub crystal_ppm: f64,
}

/// The parallel port: its line, its registers' base and its nACK-to-IRQ delay.
pub(super) struct LptPart {
    pub name: String,
    pub irq: u8,
    pub base: u16,
    pub ack_to_irq_ns: f64,
}

/// The counter card: its part's name, its window, its counter, and its data phase in its bus's
/// clocks.
pub(super) struct CounterPart {
    pub name: String,
    pub base: u64,
    pub counter_hz: f64,
    pub counter_bits: u32,
    pub data_delay: SimDuration,
}

/// The board devices of the PC, read from their parts of the platform file and checked once;
/// and where the scenario's cards go (the PCI bus part and its clock, the ISA bus link).
pub(super) struct BoardParts {
    pub pit: PitPart,
    pub rtc: RtcPart,
    pub lpt: LptPart,
    pub xrpu: CounterPart,
    /// The PCI bus's clock: that of the link the part `pci` hangs from.
    pub pci_clock_hz: Option<f64>,
    /// The `isa-bus` link (the ISA cards join its `down`) and its PCI clock (the south
    /// bridge's legacy block runs on it).
    pub isa_link: String,
    pub isa_clock_hz: f64,
}

/// The part of the platform of `kind`: exactly one, since this machine has one of each.
fn one_part<'a>(
    s: &'a Scenario,
    kind: PartKindName,
    what: &str,
) -> Result<(&'a String, &'a PartSection), ScenarioError> {
    let p = &s.platform;
    let found: Vec<_> = p
        .part
        .iter()
        .filter(|(_, x)| x.kind == Some(kind))
        .collect();
    let kind_name = toml::Value::try_from(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err(s.invalid(
            "platform.part",
            format!(
                "platform '{}' has no part of kind \"{kind_name}\": seed 004's PC needs {what}; \
                 add a [part.NAME] table with kind = \"{kind_name}\"",
                p.name
            ),
        )),
        [_, second, ..] => Err(s.invalid(
            &format!("platform.part.{}", second.0),
            format!(
                "a second part of kind \"{kind_name}\" (after '{}'): this machine has one, {what}",
                found[0].0
            ),
        )),
    }
}

/// The clock of the link `part` hangs from, if it is a clocked crossing or bus.
fn clock_above(s: &Scenario, part: &str) -> Option<f64> {
    s.platform
        .link
        .values()
        .find(|l| l.down.iter().any(|d| d == part))
        .and_then(|l| l.clock_hz)
}

impl BoardParts {
    pub(super) fn read(s: &Scenario) -> Result<BoardParts, ScenarioError> {
        let need = |name: &str, key: &str, v: Option<f64>| {
            v.ok_or_else(|| {
                s.invalid(
                    &format!("platform.part.{name}"),
                    format!("part '{name}' needs `{key}`"),
                )
            })
        };
        let range = |name: &str, key: &str, v: f64, lo: f64, hi: f64, unit: &str| {
            s.in_range(&format!("platform.part.{name}.{key}"), v, lo, hi, unit)
                .map(|()| v)
        };
        // A key the part must give, in its range.
        let value = |name: &str, key: &str, v: Option<f64>, lo: f64, hi: f64, unit: &str| {
            range(name, key, need(name, key, v)?, lo, hi, unit)
        };
        let irq = |name: &str, p: &PartSection| {
            p.irq.ok_or_else(|| {
                s.invalid(
                    &format!("platform.part.{name}"),
                    format!("part '{name}' needs `irq`, the 8259 line it drives"),
                )
            })
        };
        let (name, x) = one_part(s, PartKindName::Pit, "its 8254 (the clock interrupt)")?;
        let pit = PitPart {
            name: name.clone(),
            irq: irq(name, x)?,
            clock_hz: value(name, "clock_hz", x.clock_hz, 1e3, 1e8, "Hz")?,
        };
        let (name, x) = one_part(s, PartKindName::Rtc, "its RTC (the statistics clock)")?;
        let rtc = RtcPart {
            name: name.clone(),
            irq: irq(name, x)?,
            periodic_hz: value(name, "periodic_hz", x.periodic_hz, 2.0, 8192.0, "Hz")?,
            crystal_ppm: range(
                name,
                "crystal_ppm",
                x.crystal_ppm.unwrap_or(0.0),
                -1000.0,
                1000.0,
                "ppm",
            )?,
        };
        let (name, x) = one_part(
            s,
            PartKindName::ParallelPort,
            "its parallel port (the pulse's input)",
        )?;
        let lpt = LptPart {
            name: name.clone(),
            irq: irq(name, x)?,
            base: x.io.first().map(|w| w[0]).ok_or_else(|| {
                s.invalid(
                    &format!("platform.part.{name}"),
                    "the parallel port needs `io`, its registers' window (data, status, control)",
                )
            })?,
            ack_to_irq_ns: value(name, "ack_to_irq_ns", x.ack_to_irq_ns, 0.0, 1e6, "ns")?,
        };
        let (name, x) = one_part(
            s,
            PartKindName::CounterCard,
            "its counter card (the timestamps)",
        )?;
        let counter_bits = x.counter_bits.ok_or_else(|| {
            s.invalid(
                &format!("platform.part.{name}"),
                format!("part '{name}' needs `counter_bits`"),
            )
        })?;
        if !(1..=32).contains(&counter_bits) {
            return Err(s.invalid(
                &format!("platform.part.{name}.counter_bits"),
                "give 1 to 32 bits",
            ));
        }
        let data_clocks = value(
            name,
            "data_clocks",
            x.data_clocks.map(f64::from),
            0.0,
            1e3,
            "clocks",
        )?;
        let bus_hz = clock_above(s, name).ok_or_else(|| {
            s.invalid(
                &format!("platform.part.{name}"),
                "the counter card's data phase is counted in its bus's clocks: hang it from a \
                 clocked link (its decode)",
            )
        })?;
        let xrpu = CounterPart {
            name: name.clone(),
            base: x.mem.first().map(|w| w[0]).ok_or_else(|| {
                s.invalid(
                    &format!("platform.part.{name}"),
                    "the counter card needs `mem`, its register window",
                )
            })?,
            counter_hz: value(name, "counter_hz", x.counter_hz, 1e6, 1e9, "Hz")?,
            counter_bits,
            data_delay: SimDuration::period_of(bus_hz) * data_clocks as u64,
        };
        let isa: Vec<(&String, &LinkSection)> = s
            .platform
            .link
            .iter()
            .filter(|(_, l)| l.kind == Some(LinkKindName::IsaBus))
            .collect();
        let (isa_link, isa_clock_hz) = match isa.as_slice() {
            // Its clock's presence and range are the topology's check (`topology`, at load).
            [(name, l)] => ((*name).clone(), l.clock_hz.unwrap_or(0.0)),
            _ => {
                return Err(s.invalid(
                    "platform.link",
                    format!(
                        "seed 004's PC has one ISA bus (a link of kind \"isa-bus\"), the \
                         platform has {}",
                        isa.len()
                    ),
                ))
            }
        };
        if s.platform.ich.is_some() {
            return Err(s.invalid(
                "platform.ich",
                "this PC's south bridge answers within its ISA bus's cycles (the isa-bus link \
                 holds its timing): remove [ich], which this machine does not read",
            ));
        }
        Ok(BoardParts {
            pit,
            rtc,
            lpt,
            xrpu,
            pci_clock_hz: clock_above(s, "pci"),
            isa_link,
            isa_clock_hz,
        })
    }
}

/// The PC's topology: the platform's parts and links, and the scenario's cards (PCI cards below
/// the part `pci` on a clocked decode link, ISA cards on the ISA bus); and the machine's ends.
pub(super) fn topology(s: &Scenario, bp: &BoardParts) -> Result<(Topology, Ends), ScenarioError> {
    let p = &s.platform;
    let mut t = TopologyFile {
        part: p.part.clone(),
        link: p.link.clone(),
        wire: p.wire.clone(),
    };
    let card = |d: &CardSection| format!("card-{}", d.name);
    let cards = super::cards(s);
    for (i, d) in cards.iter().enumerate() {
        let name = card(d);
        let mut part = PartSection {
            kind: Some(PartKindName::Function),
            ..PartSection::default()
        };
        match d.bus {
            DeviceBus::Pci => {
                part.mem = vec![[CARD_BASE + 0x10000 * i as u64, 0x1000]];
                let clock_hz = bp.pci_clock_hz.ok_or_else(|| {
                    s.invalid(
                        &format!("device.{i}.bus"),
                        format!(
                            "{} is a PCI card, and the platform has no PCI bus for it: a part \
                             named \"pci\" below a clocked link",
                            d.name
                        ),
                    )
                })?;
                // The card claims its read (DEVSEL#) in its decode clocks.
                t.link.insert(
                    format!("{name}-decode"),
                    LinkSection {
                        kind: Some(LinkKindName::Clocked),
                        up: "pci".into(),
                        down: vec![name.clone()],
                        clock_hz: Some(clock_hz),
                        down_clocks: d.decode_clocks,
                        up_clocks: Some(0),
                        ..LinkSection::default()
                    },
                );
            }
            DeviceBus::Isa8 | DeviceBus::Isa16 => {
                let base = ISA_BASE + 0x20 * i as u16;
                part.io = vec![[base, base + 0x1F]];
                t.link
                    .get_mut(&bp.isa_link)
                    .expect("read from this map")
                    .down
                    .push(name.clone());
            }
        }
        if t.part.insert(name.clone(), part).is_some() {
            return Err(s.invalid(
                &format!("device.{i}.name"),
                format!("the platform has a part named '{name}' already: rename the card"),
            ));
        }
    }
    let topology = Topology::from_file(&t).map_err(|e| match e {
        TopologyError::Invalid { ref key, .. } => {
            match cards
                .iter()
                .position(|d| key.starts_with(&format!("part.{}", card(d))))
            {
                Some(i) => s.invalid(&format!("device.{i}"), e.to_string()),
                None => s.invalid(&format!("platform.{key}"), e.to_string()),
            }
        }
        other => s.invalid("platform.part", other.to_string()),
    })?;
    let id = |name: &str| topology.part(name).expect("a part of this topology");
    let need = |found, what: &str| s.need_part(found, what);
    // FreeBSD 1998's i386 kernel is uniprocessor: it runs on the first core.
    let core_part = need(
        topology
            .parts
            .iter()
            .position(|x| matches!(x.kind, PartKind::Core { .. }))
            .map(|i| i as u16),
        "is a core (kind = \"core\")",
    )?;
    // The board devices with registers first, in the order of their ends.
    let mut ends = Ends {
        cores: vec![core_part],
        devices: vec![id(&bp.rtc.name), id(&bp.lpt.name), id(&bp.xrpu.name)],
        ich: need(
            topology.claimant(Request::Io(0x20)),
            "decodes I/O port 0x20 (the 8259 pair)",
        )?,
        memory: need(
            topology
                .parts
                .iter()
                .position(|x| matches!(x.kind, PartKind::Memory { .. }))
                .map(|i| i as u16),
            "is host memory (kind = \"memory\")",
        )?,
    };
    ends.devices.extend(cards.iter().map(|d| id(&card(d))));
    Ok((topology, ends))
}

/// The PC of `s`, ready to run `samples` pulses with `seed`, its share of a run of `total`
/// (the phases' sample numbers are the run's); `progress`, if given, counts pulses as they are
/// timestamped; the analyzer on the parallel port's ISA bus keeps its first `trace` cycles.
pub(super) fn build(
    s: &Scenario,
    seed: u64,
    samples: u64,
    total: u64,
    trace: usize,
    progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
) -> Result<(Machine, Handles), ScenarioError> {
    let p = &s.platform;
    let k = s.kernel.freebsd();
    let f = &s.file;
    let probe_file = f.probe.as_ref().expect("checked: the PC has its probe");
    let cards = super::cards(s);
    let phase_specs = f.workload.as_ref().map_or(&[][..], |w| &w.phase[..]);
    let bp = BoardParts::read(s)?;
    let streams = RngStreams::new(seed);
    let (topology, ends) = topology(s, &bp)?;
    let fabric = Fabric::new(&topology, &ends).map_err(|e| s.invalid("platform", e.to_string()))?;
    let apic_id = match topology.parts[usize::from(ends.cores[0])].kind {
        PartKind::Core { apic_id } => apic_id,
        _ => unreachable!("found as a core"),
    };
    // ---- the board ---------------------------------------------------------------------------
    let mut rng_pps = streams.stream("pps");
    let mut rng_dev = streams.stream("devices");
    let second_ps = 1e12 * (1.0 + p.crystal_ppm * 1e-6);
    let rtc_period = SimDuration::from_ps(
        (second_ps / bp.rtc.periodic_hz / (1.0 + bp.rtc.crystal_ppm * 1e-6)).round() as u64,
    );
    let first_pulse = SimTime::from_ps((0.25e12 + rng_pps.gen::<f64>() * 0.5e12) as u64);
    let counter_phase = rng_pps.gen::<f64>();
    // The clocks have run since boot: the 8254's and the RTC's phases are arbitrary.
    let pit = Pit::new(bp.pit.irq, bp.pit.clock_hz, k.hz, rng_dev.gen::<f64>());
    let rtc_first = SimTime::from_ps((rng_dev.gen::<f64>() * rtc_period.as_ps() as f64) as u64);
    let mut board = vec![
        Board::Rtc(Rtc::new(bp.rtc.irq, rtc_period, rtc_first)),
        Board::ParallelPort(ParallelPort {
            irq: bp.lpt.irq,
            base: bp.lpt.base,
            ack_to_irq: SimDuration::from_ns_f64(bp.lpt.ack_to_irq_ns),
            pulse_width: SimDuration::from_ns_f64(probe_file.pulse_width_ms * 1e6),
        }),
        Board::CounterCard(CounterCard {
            base: bp.xrpu.base,
            counter_hz: bp.xrpu.counter_hz,
            mask: (1u64 << bp.xrpu.counter_bits) - 1,
            phase: counter_phase,
            data_delay: bp.xrpu.data_delay,
            latch: 0,
        }),
    ];
    let mut sources = Vec::new();
    for (i, d) in cards.iter().enumerate() {
        let (ports, mem) = match d.bus {
            DeviceBus::Pci => (None, Some(CARD_BASE + 0x10000 * i as u64)),
            _ => {
                let base = ISA_BASE + 0x20 * i as u16;
                (Some((base, base + 0x1F)), None)
            }
        };
        let mut src = IrqSource::new(
            d.name.clone(),
            d.irq,
            ports,
            mem,
            streams.stream(&format!("device.{}", d.name)),
        );
        if let (Some(hz), Some(clocks)) = (bp.pci_clock_hz, d.data_clocks) {
            src.data_delay = SimDuration::period_of(hz) * u64::from(clocks);
        }
        sources.push(board.len());
        board.push(Board::IrqSource(src));
    }
    board.push(Board::Pit(pit));
    board.push(Board::Gps(Gps {
        second_ps,
        first: first_pulse,
        jitter_ps: probe_file.jitter_ns * 1e3,
        rng: rng_pps,
        pulses: 0,
    }));

    // ---- the kernel --------------------------------------------------------------------------
    let mut kernel = Kernel::new(KernelInstructions::default());
    let xrpu = kernel.code.mmio(bp.xrpu.base);
    // Interrupt classes (isa.c): each class mask holds its IRQs; `sl` merges tty and net.
    let lpt = bp.lpt.irq;
    let mut class = [0u32; 3];
    class[probe_file.class.index()] |= 1 << lpt;
    for d in &cards {
        class[d.class.index()] |= 1 << d.irq;
    }
    if k.slip {
        let merged = class[0] | class[1];
        class[0] = merged;
        class[1] = merged;
    }
    // clkintr -> hardclock: the timecounter is the counter card, read at every tick.
    let mut b: Builder = vec![Step::Code(k.clock.hardclock_instructions)].into();
    for _ in 0..k.clock.timecounter_reads {
        b.push(Step::Read(xrpu));
    }
    b.push(Step::Return(Operand::Const(0)));
    let clkintr = kernel.code.add("clkintr", b);
    let reg_c = kernel.new_var(0);
    let rtcintr = freebsd::rtcintr(&mut kernel, k.statclock.statclock_instructions, reg_c);
    // ppcintr -> ppb_intr -> ppsintr: nanotime() (the counter card's count), pps_event() (the
    // timestamp and a new sequence number), then the status register (ppb_rstr).
    let (stamp, sequence) = (kernel.new_var(0), kernel.new_var(0));
    let ppsintr = kernel.code.add(
        "ppsintr",
        vec![
            Step::Code(k.pps.before_read_instructions),
            Step::Read(xrpu),
            Step::Store(stamp),
            Step::Read(xrpu),
            Step::Code(k.pps.after_read_instructions),
            Step::Inc(sequence),
            Step::In(bp.lpt.base + 1),
            Step::Return(Operand::Const(0)),
        ]
        .into(),
    );
    let rtc_count = kernel.new_var(0);
    let mut intrs = vec![
        Intr {
            irq: bp.pit.irq,
            handler: clkintr,
            mask: HWI_MASK, // clk_imask = HWI_MASK | SWI_MASK
            count: TICKS,
        },
        Intr {
            irq: bp.rtc.irq,
            handler: rtcintr,
            mask: 0, // stat_imask = SWI_CLOCK_MASK: no hardware bit
            count: rtc_count,
        },
        Intr {
            irq: lpt,
            handler: ppsintr,
            mask: class[probe_file.class.index()],
            count: kernel.new_var(0),
        },
    ];
    let mut elcr: u16 = 0;
    for (i, d) in cards.iter().enumerate() {
        // The card's handler: half its code, the register read that clears its interrupt, the
        // other reads, the programmed-I/O data words, the rest of its code.
        let access = |kernel: &mut Kernel| match d.bus {
            DeviceBus::Pci => Step::Read(kernel.code.mmio(CARD_BASE + 0x10000 * i as u64)),
            DeviceBus::Isa8 => Step::In(ISA_BASE + 0x20 * i as u16),
            DeviceBus::Isa16 => Step::InW(ISA_BASE + 0x20 * i as u16),
        };
        let mut b: Builder = vec![Step::Code(d.handler_instructions / 2)].into();
        for _ in 0..d.register_accesses {
            let a = access(&mut kernel);
            b.push(a);
        }
        for _ in 0..d.data_words {
            b.push(Step::InW(ISA_BASE + 0x20 * i as u16 + 0x10));
        }
        b.push(Step::Code(
            d.handler_instructions - d.handler_instructions / 2,
        ))
        .push(Step::Return(Operand::Const(0)));
        let handler = kernel.code.add(format!("{}intr", d.name), b);
        intrs.push(Intr {
            irq: d.irq,
            handler,
            mask: class[d.class.index()],
            count: kernel.new_var(0),
        });
        if d.bus == DeviceBus::Pci {
            elcr |= 1 << d.irq; // PIRQ lines: level-triggered (BIOS)
        }
    }
    let (vars, deferrals) = freebsd::link(&mut kernel, &k.stub, &intrs, class);

    // ---- the south bridge ------------------------------------------------------------------
    // The PIIX4's own timing is in the ISA link; its 8259 pair answers when the cycle ends.
    let mut ich = Ich::new(
        IchTiming {
            internal_clock_hz: bp.isa_clock_hz,
            legacy_io_clocks: 0,
            intack_clocks: 0,
            ioapic_access_clocks: 0,
            ioapic_delivery_clocks: 0,
        },
        [PIRQ_ROUT_DISABLE; 8],
        [NOT_WIRED; 8],
    );
    // The BIOS's edge/level setting (edge except the PCI lines), then the ICWs FreeBSD's
    // `isa_defaultirq` writes (without its priority rotation: see `kernel::pic::init_pair`).
    ich.pics.set_elcr(elcr);
    crate::kernel::pic::init_pair(&mut ich.pics, 0x20, 0x28);
    let imen = kernel.var(vars.imen) as u16;
    ich.pics.port_write(MASTER_DATA, imen as u8);
    ich.pics.port_write(SLAVE_DATA, (imen >> 8) as u8);

    // ---- the core and its workload -----------------------------------------------------------
    // FreeBSD 1998's uniprocessor kernel never touches a Local APIC (the K6 has none; on a
    // core with one it stays off): interrupts come on INTR from the 8259.
    let mut core = Core::new(
        cpu_timing(&p.cpu, p.cpu.lapic_access_cycles.unwrap_or(0.0)),
        LocalApic::new(apic_id, false),
    );
    core.cold = p
        .cpu
        .cache
        .as_ref()
        .map(|c| cold_code(c, streams.stream("cache")));
    // A replication's share of the run's samples passes through every phase in proportion.
    let until = |ph: &crate::workload::PhaseSpec| ph.until_in(samples, total);
    let phases: Vec<Phase> = phase_specs
        .iter()
        .map(|ph| Phase {
            until_sample: until(ph),
            work: ph.load(),
            rates: cards
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    (
                        sources[i] as u8,
                        ph.rates.get(&d.name).copied().unwrap_or(0.0),
                    )
                })
                .collect(),
        })
        .collect();
    let mut work = WorkState::new(phases[0].work.clone(), streams.stream("process"));
    work.spl_call_instructions = k.spl_instructions;
    core.work = Some(work);

    // The parallel port, whose bus the analyzer watches.
    let lpt_device = (board.iter())
        .position(|d| matches!(d, Board::ParallelPort(_)))
        .expect("the PC has its parallel port");
    // The probe reads the counter card the pulse latches (the board's one).
    let card = (board.iter())
        .position(|d| matches!(d, Board::CounterCard(_)))
        .expect("the PC has its counter card");
    let mut probe = PpsProbe::new(
        card,
        stamp,
        sequence,
        phase_specs.iter().map(until).collect(),
        samples,
    );
    probe.progress = progress;
    let mut m = MachineBuilder::new(fabric, ich, vec![core], Bdf::new(0, 0, 0))
        .kernel(kernel)
        .board(board)
        .phases(phases)
        // The analyzer watches the parallel port's bus, where the pulse's interrupt is read
        // (the latency probe has no signature to time there: the pulse's probe is the
        // observer's).
        .analyzer(Analyzer::new(trace), LatencyProbe::new(u64::MAX, None))
        .analyzed(lpt_device)
        .observer(Box::new(probe))
        .samples(samples)
        .event_limit(samples.saturating_mul(2_000_000));
    if probe_file.window_ms > 0.0 {
        m = m.window(SimDuration::from_ns_f64(probe_file.window_ms * 1e6));
    }
    let m = m.build();
    let lpt_deferrals = deferrals
        .iter()
        .find(|(irq, _)| *irq == lpt)
        .map(|(_, d)| *d);
    Ok((
        m,
        Handles {
            deferrals: lpt_deferrals,
            rtc_count,
            sources,
        },
    ))
}

/// The PC's probe, after its run.
fn take_probe(m: &mut Machine) -> PpsProbe {
    let probe = m.observer.take().expect("the PC has its probe");
    *probe
        .into_any()
        .downcast::<PpsProbe>()
        .expect("the PC's observer is its PPS probe")
}

/// Run the machine and collect seed 004's result.
/// `progress`, if given, counts pulses as they are timestamped; the first `trace` ISA cycles
/// are kept.
pub(super) fn run(
    s: &Scenario,
    seed: u64,
    samples: u64,
    total: u64,
    trace: usize,
    progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
) -> Result<PpsRun, ScenarioError> {
    let (mut m, h) = build(s, seed, samples, total, trace, progress)?;
    let c = m.run();
    let probe = take_probe(&mut m);
    if c.truncated {
        return Err(ScenarioError::Runaway {
            path: s.path.clone(),
            events: c.events,
            completed: probe.samples,
            requested: samples,
        });
    }
    let k = &m.kernel;
    let d = h.deferrals.expect("the parallel port has a stub");
    let isa_cycles = m.fabric.isa_cycles();
    let core = &m.cores[0];
    let mut counters = vec![
        Count::always("pulses_timestamped", probe.samples),
        Count::always("pulses_missed", probe.missed),
        Count::always("irq7_deferred_by_cpl", k.var(d.deferred)),
        Count::always("irq7_replayed_by_doreti", k.var(d.by_doreti)),
        Count::always("irq7_replayed_by_splz", k.var(d.by_splz)),
        Count::always("clock_interrupts", k.var(TICKS)),
        Count::always("rtc_interrupts", k.var(h.rtc_count)),
        Count::always("isa_io_cycles", isa_cycles),
        Count::always("pci_reads", c.mmio_reads),
        Count::always(
            "spl_and_cli_sections",
            core.work.as_ref().map_or(0, |w| w.sections),
        ),
        Count::always(
            "cache_line_misses",
            core.cold.as_ref().map_or(0, |c| c.misses),
        ),
        Count::always("spurious_interrupts", k.var(SPURIOUS_8259)),
        Count::always("events_simulated", c.events),
        // A windowed run's skipped time (`[probe] window_ms`): the counts above are of the
        // windows alone.
        Count::if_nonzero("ms_skipped", m.skipped.as_ps() / 1_000_000_000),
    ];
    for &j in &h.sources {
        if let Some(Board::IrqSource(src)) = m.devices[j].board() {
            counters.push(Count::always(
                format!("{}_interrupts", src.name),
                src.interrupts,
            ));
            counters.push(Count::if_nonzero(
                format!("{}_coalesced", src.name),
                src.coalesced,
            ));
        }
    }
    let count_ns = match m.devices[probe.card].board() {
        Some(Board::CounterCard(card)) => card.count_ns(),
        _ => unreachable!("the probe's card"),
    };
    let phases = s.file.workload.as_ref().map_or(&[][..], |w| &w.phase[..]);
    Ok(PpsRun {
        latency: probe.latency,
        phases: phases
            .iter()
            .map(|p| p.name.clone())
            .zip(probe.phases.histograms)
            .collect(),
        counts: probe.counts,
        count_ns,
        series: probe.series,
        counters,
        trace: m.analyzer.take_trace(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> Scenario {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        Scenario::load(repo.join("experiments/seed004/pps.toml"), &[]).unwrap()
    }

    #[test]
    fn the_pc_runs_as_in_the_reference_mode() {
        // Run-ahead (the core's and the packets') against every step ending at an event: the
        // same samples, count for count, and the same work done, under the heaviest phase.
        let s = scenario();
        let set = [
            "workload.phase.0.busy_fraction=0.97",
            "workload.phase.0.cold_fraction=0.7",
        ]
        .map(String::from);
        let heavy = Scenario::load(&s.path, &set).unwrap();
        for sc in [&s, &heavy] {
            let run = |strict: bool| {
                let (mut m, _) = build(sc, 7, 40, 40, 0, None).unwrap();
                m.strict = strict;
                let c = m.run();
                let p = take_probe(&mut m);
                (p.counts, c.mmio_reads, c.port_ios, m.kernel.var(TICKS))
            };
            let (fast, reference) = (run(false), run(true));
            assert_eq!(fast.0.len(), 40);
            assert_eq!(fast, reference);
        }
    }

    #[test]
    fn an_interrupt_held_off_by_cpl_is_replayed() {
        // Every busy second full of spltty sections: the pulse (a tty-class interrupt) is held
        // off and replayed by splx (splz) or doreti, and still timestamped.
        let set = [
            "workload.phase.0.busy_fraction=1.0",
            "workload.phase.0.section=[{ kind = \"spl-tty\", per_busy_s = 20000.0, mean_us = 40.0 }]",
        ]
        .map(String::from);
        let s = Scenario::load(scenario().path, &set).unwrap();
        let r = run(&s, 3, 60, 60, 0, None).unwrap();
        let get = |n: &str| r.counters.iter().find(|c| c.name == n).unwrap().value;
        let deferred = get("irq7_deferred_by_cpl");
        assert!(deferred > 10, "{deferred} deferred");
        assert_eq!(
            deferred,
            get("irq7_replayed_by_splz") + get("irq7_replayed_by_doreti")
        );
        assert_eq!(get("pulses_timestamped"), 60);
        // A held-off pulse waits for the section's end: some samples are tens of us late.
        let max = r.latency.max_ns().unwrap();
        assert!(max > 20_000, "max {max} ns");
    }
}
