//! Seed 004's PC assembled as an instance of the one machine ([`crate::machine::Machine`]): its
//! topology (the K6 on the Socket 7 bus, the 430TX's host-to-PCI bridge, the PIIX4 with its ISA
//! bus, the cards), the board devices, FreeBSD's programs and the workload's phases, from the
//! scenario's platform, kernel and scenario files; and the run's result.

use super::{DeviceBus, PpsResult, PpsScenario, SectionMask};
use crate::devices::counter_card::CounterCard;
use crate::devices::gps::Gps;
use crate::devices::irq_source::IrqSource;
use crate::devices::parallel_port::ParallelPort;
use crate::devices::pit::Pit;
use crate::devices::rtc::Rtc;
use crate::devices::Board;
use crate::engine::{RngStreams, SimDuration, SimTime};
use crate::hw::cpu::CpuTiming;
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
use crate::machine::{ColdCode, Core, Machine, Phase};
use crate::probes::analyzer::{Analyzer, LatencyProbe};
use crate::probes::pps::PpsProbe;
use crate::result::Count;
use crate::scenario::ScenarioError;
use crate::topology::{
    LinkKindName, LinkSection, PartKindName, PartSection, Topology, TopologyFile,
};
use crate::workload::{LengthDistribution, SectionKind, SectionSpec, WorkState, WorkloadSpec};
use rand::Rng;

const PIT_IRQ: u8 = 0;
const RTC_IRQ: u8 = 8;
/// The parallel port's registers (LPT1).
const LPT_BASE: u16 = 0x378;
/// The counter card's and the PCI cards' memory windows (BARs the BIOS would assign).
const XRPU_BASE: u64 = 0xE000_0000;
const CARD_BASE: u64 = 0xE010_0000;
/// The ISA cards' I/O windows: 32 ports each from here (their addresses change no timing).
const ISA_BASE: u16 = 0x300;

/// What the result needs from the assembled machine besides its probe.
pub(super) struct Handles {
    deferrals: Option<freebsd::Deferrals>,
    rtc_count: Var,
    sources: Vec<usize>,
}

/// The PC of `s`, ready to run `samples` pulses with `seed`.
pub(super) fn build(
    s: &PpsScenario,
    seed: u64,
    samples: u64,
) -> Result<(Machine, Handles), ScenarioError> {
    let p = &s.platform;
    let k = &s.kernel;
    let f = &s.file;
    let streams = RngStreams::new(seed);
    let pci = SimDuration::period_of(p.pci.clock_hz);
    let cycle_ps = 1e12 / p.cpu.clock_hz;

    // ---- the topology ----------------------------------------------------------------------
    let mut t = TopologyFile::default();
    let part = |kind, f: &dyn Fn(&mut PartSection)| {
        let mut s = PartSection {
            kind: Some(kind),
            ..PartSection::default()
        };
        f(&mut s);
        s
    };
    t.part.insert(
        "cpu0".into(),
        part(PartKindName::Core, &|s| s.apic_id = Some(0)),
    );
    t.part.insert(
        "430tx".into(),
        part(PartKindName::HostBridge, &|s| {
            s.requester_id = Some(Bdf::new(0, 0, 0))
        }),
    );
    t.part.insert(
        "dram".into(),
        part(PartKindName::Memory, &|s| {
            s.base = Some(0);
            s.size = Some(64 << 20);
            s.read_ns = Some(0.0);
        }),
    );
    t.part
        .insert("pci".into(), part(PartKindName::Hub, &|_| {}));
    t.part
        .insert("piix4".into(), part(PartKindName::Hub, &|_| {}));
    let function = |io: Vec<[u16; 2]>, mem: Vec<[u64; 2]>| {
        part(PartKindName::Function, &move |s| {
            s.io = io.clone();
            s.mem = mem.clone();
        })
    };
    t.part.insert(
        "pics".into(),
        function(vec![[0x20, 0x21], [0xA0, 0xA1], [0x80, 0x8F]], vec![]),
    );
    t.part
        .insert("rtc".into(), function(vec![[0x70, 0x71]], vec![]));
    t.part.insert(
        "lpt".into(),
        function(vec![[LPT_BASE, LPT_BASE + 2]], vec![]),
    );
    t.part
        .insert("xrpu".into(), function(vec![], vec![[XRPU_BASE, 0x1000]]));
    let link = |kind, up: &str, down: &[&str], f: &dyn Fn(&mut LinkSection)| {
        let mut s = LinkSection {
            kind: Some(kind),
            up: up.into(),
            down: down.iter().map(|d| d.to_string()).collect(),
            ..LinkSection::default()
        };
        f(&mut s);
        s
    };
    let clocked = |hz: f64, down: u32, up: u32| {
        move |s: &mut LinkSection| {
            s.clock_hz = Some(hz);
            s.down_clocks = Some(down);
            s.up_clocks = Some(up);
        }
    };
    // The Socket 7 bus: the CPU's cycle is synchronised to its clock (the bridge's host-to-PCI
    // clocks count the rest of it).
    t.link.insert(
        "host-bus".into(),
        link(
            LinkKindName::Clocked,
            "430tx",
            &["cpu0"],
            &clocked(p.host_bus.clock_hz, 0, 0),
        ),
    );
    t.link.insert(
        "memory".into(),
        link(LinkKindName::Delay, "430tx", &["dram"], &|s| {
            s.ns = Some(0.0)
        }),
    );
    t.link.insert(
        "host-to-pci".into(),
        link(
            LinkKindName::Clocked,
            "430tx",
            &["pci"],
            &clocked(
                p.pci.clock_hz,
                p.pci.host_to_pci_clocks,
                p.pci.pci_to_host_clocks,
            ),
        ),
    );
    // The PIIX4 claims the I/O cycle (DEVSEL#).
    t.link.insert(
        "piix4-decode".into(),
        link(
            LinkKindName::Clocked,
            "pci",
            &["piix4"],
            &clocked(p.pci.clock_hz, p.isa.decode_pci_clocks, 0),
        ),
    );
    t.link.insert(
        "xrpu-decode".into(),
        link(
            LinkKindName::Clocked,
            "pci",
            &["xrpu"],
            &clocked(p.pci.clock_hz, p.xrpu.decode_clocks, 0),
        ),
    );
    let mut isa_down: Vec<String> = vec!["pics".into(), "rtc".into(), "lpt".into()];
    for (i, d) in f.device.iter().enumerate() {
        let name = format!("card-{}", d.name);
        match d.bus {
            DeviceBus::Pci => {
                let base = CARD_BASE + 0x10000 * i as u64;
                t.part
                    .insert(name.clone(), function(vec![], vec![[base, 0x1000]]));
                t.link.insert(
                    format!("{name}-decode"),
                    link(
                        LinkKindName::Clocked,
                        "pci",
                        &[&name],
                        &clocked(p.pci.clock_hz, p.pci.device_decode_clocks, 0),
                    ),
                );
            }
            DeviceBus::Isa8 | DeviceBus::Isa16 => {
                let base = ISA_BASE + 0x20 * i as u16;
                t.part
                    .insert(name.clone(), function(vec![[base, base + 0x1F]], vec![]));
                isa_down.push(name);
            }
        }
    }
    let isa_down: Vec<&str> = isa_down.iter().map(String::as_str).collect();
    t.link.insert(
        "isa".into(),
        link(LinkKindName::IsaBus, "piix4", &isa_down, &|s| {
            s.clock_hz = Some(p.pci.clock_hz);
            s.pci_clock_divisor = Some(p.isa.pci_clock_divisor);
            s.io8_clocks = Some(p.isa.io8_clocks);
            s.io16_clocks = Some(p.isa.io16_clocks);
            s.io8_recovery_clocks = Some(p.isa.io8_recovery_clocks);
            s.io16_recovery_clocks = Some(p.isa.io16_recovery_clocks);
            s.intack_clocks = Some(p.isa.intack_clocks);
        }),
    );
    let topology = Topology::from_file(&t).map_err(|e| s.invalid("platform", e.to_string()))?;
    let id = |name: &str| {
        topology
            .parts
            .iter()
            .position(|p| p.name == name)
            .expect("a part of this topology") as u16
    };
    // The board devices with registers first, in the order of their ends.
    let mut ends = Ends {
        cores: vec![id("cpu0")],
        devices: vec![id("rtc"), id("lpt"), id("xrpu")],
        ich: id("pics"),
        memory: id("dram"),
    };
    ends.devices
        .extend(f.device.iter().map(|d| id(&format!("card-{}", d.name))));
    let fabric = Fabric::new(&topology, &ends).map_err(|e| s.invalid("platform", e.to_string()))?;

    // ---- the board ---------------------------------------------------------------------------
    let mut rng_pps = streams.stream("pps");
    let mut rng_dev = streams.stream("devices");
    let second_ps = 1e12 * (1.0 + p.crystal_ppm * 1e-6);
    let rtc_period = SimDuration::from_ps(
        (second_ps / p.rtc.periodic_hz / (1.0 + p.rtc.crystal_ppm * 1e-6)).round() as u64,
    );
    let first_pulse = SimTime::from_ps((0.25e12 + rng_pps.gen::<f64>() * 0.5e12) as u64);
    let counter_phase = rng_pps.gen::<f64>();
    // The clocks have run since boot: the 8254's and the RTC's phases are arbitrary.
    let pit = Pit::new(PIT_IRQ, p.timer.clock_hz, k.hz, rng_dev.gen::<f64>());
    let rtc_first = SimTime::from_ps((rng_dev.gen::<f64>() * rtc_period.as_ps() as f64) as u64);
    let mut board = vec![
        Board::Rtc(Rtc::new(RTC_IRQ, rtc_period, rtc_first)),
        Board::ParallelPort(ParallelPort {
            irq: p.lpt.irq,
            base: LPT_BASE,
            ack_to_irq: SimDuration::from_ns_f64(p.lpt.ack_to_irq_ns),
            pulse_width: SimDuration::from_ns_f64(f.pps.pulse_width_ms * 1e6),
        }),
        Board::CounterCard(CounterCard {
            base: XRPU_BASE,
            counter_hz: p.xrpu.counter_hz,
            mask: if p.xrpu.counter_bits >= 64 {
                u64::MAX
            } else {
                (1u64 << p.xrpu.counter_bits) - 1
            },
            phase: counter_phase,
            data_delay: pci * u64::from(p.xrpu.data_clocks),
            latch: 0,
        }),
    ];
    let mut sources = Vec::new();
    for (i, d) in f.device.iter().enumerate() {
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
        if d.bus == DeviceBus::Pci {
            src.data_delay = pci * u64::from(p.pci.device_data_clocks);
        }
        sources.push(board.len());
        board.push(Board::IrqSource(src));
    }
    board.push(Board::Pit(pit));
    board.push(Board::Gps(Gps {
        second_ps,
        first: first_pulse,
        jitter_ps: f.pps.jitter_ns * 1e3,
        rng: rng_pps,
        pulses: 0,
    }));

    // ---- the kernel --------------------------------------------------------------------------
    let mut kernel = Kernel::new(KernelInstructions::default());
    let xrpu = kernel.code.mmio(XRPU_BASE);
    // Interrupt classes (isa.c): each class mask holds its IRQs; `sl` merges tty and net.
    let lpt = p.lpt.irq;
    let mut class = [0u32; 3];
    class[f.pps.class.index()] |= 1 << lpt;
    for d in &f.device {
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
            Step::In(LPT_BASE + 1),
            Step::Return(Operand::Const(0)),
        ]
        .into(),
    );
    let rtc_count = kernel.new_var(0);
    let mut intrs = vec![
        Intr {
            irq: PIT_IRQ,
            handler: clkintr,
            mask: HWI_MASK, // clk_imask = HWI_MASK | SWI_MASK
            count: TICKS,
        },
        Intr {
            irq: RTC_IRQ,
            handler: rtcintr,
            mask: 0, // stat_imask = SWI_CLOCK_MASK: no hardware bit
            count: rtc_count,
        },
        Intr {
            irq: lpt,
            handler: ppsintr,
            mask: class[f.pps.class.index()],
            count: kernel.new_var(0),
        },
    ];
    let mut elcr: u16 = 0;
    for (i, d) in f.device.iter().enumerate() {
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
            internal_clock_hz: p.pci.clock_hz,
            legacy_io_clocks: 0,
            intack_clocks: 0,
            ioapic_access_clocks: 0,
            ioapic_delivery_clocks: 0,
        },
        [PIRQ_ROUT_DISABLE; 8],
        [NOT_WIRED; 8],
    );
    ich.pics.linux_init(elcr); // ICU_OFFSET 0x20 as Linux; edge except the PCI lines
    let imen = kernel.var(vars.imen) as u16;
    ich.pics.port_write(MASTER_DATA, imen as u8);
    ich.pics.port_write(SLAVE_DATA, (imen >> 8) as u8);

    // ---- the core and its workload -----------------------------------------------------------
    let mut core = Core::new(
        CpuTiming {
            clock_hz: p.cpu.clock_hz,
            cycles_per_instruction: p.cpu.cycles_per_instruction,
            interrupt_vectoring_cycles: p.cpu.interrupt_gate_cycles,
            iret_cycles: p.cpu.iret_cycles,
            lapic_access_cycles: 0.0,
            privilege_change_cycles: p.cpu.privilege_change_cycles,
            halt_exit: SimDuration::from_ps((p.cpu.halt_wake_cycles * cycle_ps).round() as u64),
        },
        LocalApic::new(0, false),
    );
    core.cold = Some(ColdCode {
        line_bytes: f64::from(p.cpu.cache_line_bytes),
        instruction_bytes: p.cpu.instruction_bytes,
        line_fill: SimDuration::period_of(p.host_bus.clock_hz)
            * u64::from(p.host_bus.line_fill_clocks),
        rng: streams.stream("cache"),
        misses: 0,
    });
    let phases: Vec<Phase> = f
        .phase
        .iter()
        .map(|ph| Phase {
            until_sample: ph.until_sample,
            work: WorkloadSpec {
                busy_fraction: ph.busy_fraction,
                busy_ms: ph.busy_ms,
                cold_fraction: ph.cold_fraction,
                section: ph
                    .section
                    .iter()
                    .map(|sec| SectionSpec {
                        kind: match sec.mask {
                            SectionMask::Cli => SectionKind::IrqsOff,
                            SectionMask::Tty => SectionKind::SplTty,
                            SectionMask::Net => SectionKind::SplNet,
                            SectionMask::Bio => SectionKind::SplBio,
                            SectionMask::High => SectionKind::SplHigh,
                        },
                        per_busy_s: sec.per_busy_s,
                        distribution: LengthDistribution::Exponential,
                        mean_us: sec.mean_us,
                        sigma: 0.0,
                    })
                    .collect(),
            },
            rates: f
                .device
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

    let mut m = Machine::new(
        fabric,
        ich,
        vec![core],
        kernel,
        Vec::new(),
        Analyzer::new(0),
        LatencyProbe::new(0, None),
        Bdf::new(0, 0, 0),
        samples,
    );
    m.analyzed_link = u8::MAX;
    m.board = board;
    m.phases = phases;
    m.pps_card = 2;
    m.pps = Some(PpsProbe::new(
        stamp,
        sequence,
        f.phase.iter().map(|p| p.until_sample).collect(),
        samples,
    ));
    m.event_limit = samples.saturating_mul(2_000_000);
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

/// Run the machine and collect seed 004's result.
/// `progress`, if given, counts pulses as they are timestamped.
pub(super) fn run(
    s: &PpsScenario,
    seed: u64,
    samples: u64,
    progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
) -> Result<PpsResult, ScenarioError> {
    let (mut m, h) = build(s, seed, samples)?;
    if let Some(p) = &mut m.pps {
        p.progress = progress;
    }
    let c = m.run();
    let probe = m.pps.take().expect("the PC has its probe");
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
    ];
    for &j in &h.sources {
        if let Board::IrqSource(src) = &m.board[j] {
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
    let count_ns = match &m.board[m.pps_card] {
        Board::CounterCard(card) => card.count_ns(),
        _ => unreachable!("the probe's card"),
    };
    Ok(PpsResult {
        latency: probe.latency,
        phases: s
            .file
            .phase
            .iter()
            .map(|p| p.name.clone())
            .zip(probe.phases)
            .collect(),
        counts: probe.counts,
        count_ns,
        series: probe.series,
        counters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> PpsScenario {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        PpsScenario::load(repo.join("experiments/seed004/pps.toml"), &[]).unwrap()
    }

    #[test]
    fn the_pc_runs_as_in_the_reference_mode() {
        // Run-ahead (the core's and the packets') against every step ending at an event: the
        // same samples, count for count, and the same work done, under the heaviest phase.
        let s = scenario();
        let set = ["phase.0.busy_fraction=0.97", "phase.0.cold_fraction=0.7"].map(String::from);
        let heavy = PpsScenario::load(&s.path, &set).unwrap();
        for sc in [&s, &heavy] {
            let run = |strict: bool| {
                let (mut m, _) = build(sc, 7, 40).unwrap();
                m.strict = strict;
                let c = m.run();
                let p = m.pps.take().unwrap();
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
            "phase.0.busy_fraction=1.0",
            "phase.0.section=[{ mask = \"tty\", per_busy_s = 20000.0, mean_us = 40.0 }]",
        ]
        .map(String::from);
        let s = PpsScenario::load(scenario().path, &set).unwrap();
        let r = run(&s, 3, 60, None).unwrap();
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
