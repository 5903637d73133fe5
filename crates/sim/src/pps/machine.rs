//! The seed-004 machine: event loop, buses, the FreeBSD 1998 interrupt path and the workload.
//!
//! Kernel code is a set of small programs of [`Step`]s (the `INTR` stub, `Xresume`, `doreti`,
//! the handlers); the CPU runs them on a stack of activations, and process code below them is
//! generated step by step from the current phase's workload.

use super::{DeviceBus, IntrClass, PpsResult, PpsScenario, SectionMask};
use crate::engine::{exponential, EventQueue, RngStreams, SimDuration, SimTime, Stream};
use crate::hw::pic8259::{PicPair, MASTER_CMD, MASTER_DATA, SLAVE_CMD, SLAVE_DATA};
use crate::result::Count;
use crate::scenario::{ScenarioError, SERIES_POINTS};
use irqlab_stats::series::SampleSeries;
use irqlab_stats::LatencyHistogram;
use rand::Rng;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

/// Every hardware interrupt's bit in `cpl` (`HWI_MASK`).
const HWI_MASK: u32 = 0xFFFF;
const PIT_IRQ: u8 = 0;
const RTC_IRQ: u8 = 8;
const CASCADE_IRQ: u8 = 2;

/// What an I/O access does when it completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Eff {
    None,
    /// Set the IRQ's bit in the IMR (`imen`), write the byte.
    Mask(u8),
    Unmask(u8),
    /// Non-specific EOI (0x20) to the master or the slave.
    EoiMaster,
    EoiSlave,
    /// The device's register access clears its interrupt request.
    Clear(u8),
}

#[derive(Clone, Copy, Debug)]
enum Step {
    /// Code running for `ps`; `lines` cache lines of interrupt-path code (each may miss);
    /// `user`: process code in user mode.
    Code {
        ps: u64,
        lines: u32,
        user: bool,
    },
    /// The idle loop's `hlt`, until an interrupt.
    Hlt,
    /// A port access through the host bridge and the PIIX4 as an ISA cycle of `clocks` SYSCLKs.
    Isa {
        clocks: u32,
        /// A 16-bit access, with its own recovery time.
        wide: bool,
        eff: Eff,
    },
    /// An uncached PCI memory read; `sample`: the counter card's timestamp read.
    PciRead {
        decode: u32,
        data: u32,
        sample: bool,
        eff: Eff,
    },
    /// The interrupt-acknowledge cycle (its result is the IRQ the stub is for).
    Intack,
    /// Through the interrupt gate (from user mode with a stack switch).
    Gate,
    /// Continue in the stub of the acknowledged IRQ.
    StubForAcked,
    Cli,
    Sti,
    /// `testb $IRQ_BIT, cpl`: defer if masked.
    CplTest(u8),
    /// Push `cpl`, raise it by the IRQ's class mask.
    Enter(u8),
    Call(u16),
    Ret,
    Doreti,
    Iret,
    Jump(u16),
    /// Process code: `splXXX()`: save `cpl`, then raise it by the mask (or set it, `splhigh`).
    SplRaise {
        mask: u32,
        set: bool,
    },
    /// Process code: `splx()`, replaying what became unmasked through `splz`.
    Splx,
}

fn stub(irq: u8) -> u16 {
    u16::from(irq) * 4
}
fn resume(irq: u8) -> u16 {
    u16::from(irq) * 4 + 1
}
fn handler(irq: u8) -> u16 {
    u16::from(irq) * 4 + 2
}
fn softint(irq: u8) -> u16 {
    u16::from(irq) * 4 + 3
}
const LEAVE: u16 = 64;
const ENTRY: u16 = 65;

/// One activation on the CPU's stack.
#[derive(Clone, Copy, Debug)]
struct Act {
    prog: u16,
    pc: u16,
    /// An interrupt frame (popped by `iret`) rather than a call.
    interrupt: bool,
    saved_if: bool,
    /// What is left of a `Code` step an interrupt cut short.
    partial: Option<u64>,
    /// Interrupted user mode (the gate switches stacks).
    from_user: bool,
}

#[derive(Clone, Copy, Debug)]
struct Current {
    start: SimTime,
    end: Option<SimTime>,
    /// Code with interrupts on, or HLT: an interrupt may cut it.
    interruptible: bool,
    /// Set when an interrupt cut it: the `ps` left (0 for HLT, which is done).
    cut: Option<u64>,
    code_ps: u64,
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    Cpu(u32),
    PpsRise(u64),
    LptIrq,
    PpsFall,
    PitRise,
    PitFall,
    Rtc,
    Device(u8, u32),
    WorkArrives,
    Phase(usize),
}

struct Timing {
    cycle_ps: f64,
    instr_ps: f64,
    line_bytes: f64,
    instr_bytes: f64,
    pci: SimDuration,
    sysclk: SimDuration,
    host: SimDuration,
    host_to_pci: u64,
    pci_to_host: u64,
    decode: u64,
    recovery8: SimDuration,
    recovery16: SimDuration,
    line_fill: SimDuration,
    gate: u64,
    privilege: u64,
    halt_wake: SimDuration,
}

impl Timing {
    fn code(&self, instructions: u32) -> Step {
        Step::Code {
            ps: (f64::from(instructions) * self.instr_ps).round() as u64,
            lines: (f64::from(instructions) * self.instr_bytes / self.line_bytes).ceil() as u32,
            user: false,
        }
    }
    fn cycles(&self, c: f64) -> u64 {
        (c * self.cycle_ps).round() as u64
    }
    /// A CPU port access run as an ISA cycle: to the next PCI edge, across the bridge, claimed by
    /// the PIIX4; then, once the previous ISA I/O's recovery time is over (`isa_free`), from the
    /// next SYSCLK edge for `clocks` SYSCLKs; back across the bridge to a host clock edge.
    /// Returns (when the ISA cycle ends, when the CPU goes on).
    fn isa(&self, now: SimTime, clocks: u32, isa_free: SimTime) -> (SimTime, SimTime) {
        let t1 = now.next_edge(self.pci) + self.pci * (self.host_to_pci + self.decode);
        let t2 = t1.max(isa_free).next_edge(self.sysclk) + self.sysclk * u64::from(clocks);
        (t2, (t2 + self.pci * self.pci_to_host).next_edge(self.host))
    }
    /// An uncached PCI read: (when the target decodes it, when the CPU has the data).
    fn pci_read(&self, now: SimTime, decode: u32, data: u32) -> (SimTime, SimTime) {
        let t1 = now.next_edge(self.pci) + self.pci * self.host_to_pci;
        let sample = t1 + self.pci * u64::from(decode);
        let done = sample + self.pci * (u64::from(data) + self.pci_to_host);
        (sample, done.next_edge(self.host))
    }
}

struct Device {
    irq: u8,
    gen: u32,
    rate: f64,
    interrupts: u64,
    coalesced: u64,
}

struct SectionKind {
    mask: Option<(u32, bool)>, // None: cli
    per_ps: f64,
    mean: SimDuration,
}

struct Process {
    busy: bool,
    work_left: u64,
    work_pending: bool,
    pq: VecDeque<Step>,
    partial: Option<u64>,
    spl_saved: u32,
}

struct M<'a> {
    s: &'a PpsScenario,
    q: EventQueue<Ev>,
    t: Timing,
    progs: Vec<Vec<Step>>,
    pic: PicPair,
    lines: u16,
    imen: u16,
    intr_mask: [u32; 16],
    class: [u32; 3],
    // CPU
    stack: Vec<Act>,
    iflag: bool,
    cpl: u32,
    ipending: u32,
    cpl_stack: Vec<u32>,
    cur: Option<Current>,
    gen: u32,
    acked: Option<u8>,
    in_user: bool,
    /// When the ISA bus's I/O recovery after the last cycle ends.
    isa_free: SimTime,
    proc: Process,
    // workload
    phase: usize,
    devices: Vec<Device>,
    sections: Vec<SectionKind>,
    /// `splXXX()` or `splx()` in process code (warm: no cache lines drawn).
    spl: Step,
    section_rate_per_ps: f64,
    cold: f64,
    // clocks
    second: f64,
    first_pulse: SimTime,
    pit_period: SimDuration,
    rtc_period: SimDuration,
    counter_hz: f64,
    counter_mask: u64,
    counter_phase: f64,
    // the instrument
    pulse: u64,
    latch: u64,
    sampled: bool,
    samples: u64,
    target: u64,
    // randomness
    rng_pps: Stream,
    rng_dev: Stream,
    rng_proc: Stream,
    rng_cache: Stream,
    // results
    latency: LatencyHistogram,
    phases: Vec<LatencyHistogram>,
    counts: Vec<u64>,
    series: SampleSeries,
    c: Tally,
}

#[derive(Default)]
struct Tally {
    events: u64,
    ticks: u64,
    rtc: u64,
    isa_ios: u64,
    pci_reads: u64,
    deferred: u64,
    replay_doreti: u64,
    replay_splz: u64,
    sections: u64,
    cold_misses: u64,
    spurious: u64,
    lost_pulses: u64,
}

/// Run `samples` pulses; `progress`, if given, counts each one as it is timestamped.
pub(super) fn run(
    s: &PpsScenario,
    seed: u64,
    samples: u64,
    progress: Option<&AtomicU64>,
) -> Result<PpsResult, ScenarioError> {
    let mut m = M::new(s, seed, samples);
    let mut reported = 0;
    let limit = samples.saturating_mul(2_000_000);
    while m.samples < m.target {
        let Some((now, ev)) = m.q.pop() else { break };
        m.c.events += 1;
        if m.c.events > limit {
            return Err(ScenarioError::Runaway {
                path: s.path.clone(),
                events: m.c.events,
                completed: m.samples,
                requested: samples,
            });
        }
        m.event(now, ev);
        if let Some(p) = progress.filter(|_| m.samples > reported) {
            p.fetch_add(m.samples - reported, Ordering::Relaxed);
            reported = m.samples;
        }
    }
    Ok(m.finish())
}

impl<'a> M<'a> {
    fn new(s: &'a PpsScenario, seed: u64, samples: u64) -> M<'a> {
        let p = &s.platform;
        let k = &s.kernel;
        let f = &s.file;
        let pci = SimDuration::period_of(p.pci.clock_hz);
        let cycle_ps = 1e12 / p.cpu.clock_hz;
        let t = Timing {
            cycle_ps,
            instr_ps: cycle_ps * p.cpu.cycles_per_instruction,
            line_bytes: f64::from(p.cpu.cache_line_bytes),
            instr_bytes: p.cpu.instruction_bytes,
            pci,
            sysclk: pci * u64::from(p.isa.pci_clock_divisor),
            host: SimDuration::period_of(p.host_bus.clock_hz),
            host_to_pci: u64::from(p.pci.host_to_pci_clocks),
            pci_to_host: u64::from(p.pci.pci_to_host_clocks),
            decode: u64::from(p.isa.decode_pci_clocks),
            recovery8: SimDuration::from_ps(
                (p.isa.io8_recovery_clocks
                    * (pci * u64::from(p.isa.pci_clock_divisor)).as_ps() as f64)
                    .round() as u64,
            ),
            recovery16: SimDuration::from_ps(
                (p.isa.io16_recovery_clocks
                    * (pci * u64::from(p.isa.pci_clock_divisor)).as_ps() as f64)
                    .round() as u64,
            ),
            line_fill: SimDuration::period_of(p.host_bus.clock_hz)
                * u64::from(p.host_bus.line_fill_clocks),
            gate: (p.cpu.interrupt_gate_cycles * cycle_ps).round() as u64,
            privilege: (p.cpu.privilege_change_cycles * cycle_ps).round() as u64,
            halt_wake: SimDuration::from_ps((p.cpu.halt_wake_cycles * cycle_ps).round() as u64),
        };
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
        let mut intr_mask = [0u32; 16];
        intr_mask[usize::from(PIT_IRQ)] = HWI_MASK; // clk_imask = HWI_MASK | SWI_MASK
        intr_mask[usize::from(RTC_IRQ)] = 0; // stat_imask = SWI_CLOCK_MASK: no hardware bit
        intr_mask[usize::from(lpt)] = class[f.pps.class.index()];
        for d in &f.device {
            intr_mask[usize::from(d.irq)] = class[d.class.index()];
        }

        let isa8 = p.isa.io8_clocks;
        let io = |clocks, eff| Step::Isa {
            clocks,
            wide: false,
            eff,
        };
        let io16 = |eff| Step::Isa {
            clocks: p.isa.io16_clocks,
            wide: true,
            eff,
        };
        let mut progs = vec![Vec::new(); 66];
        let mut used: u16 = 1 << PIT_IRQ | 1 << RTC_IRQ | 1 << lpt | 1 << CASCADE_IRQ;
        let mut elcr: u16 = 0;
        let xrpu_read = |sample| Step::PciRead {
            decode: p.xrpu.decode_clocks,
            data: p.xrpu.data_clocks,
            sample,
            eff: Eff::None,
        };
        // clkintr -> hardclock: the timecounter is the xrpu, read at every tick.
        let mut h = vec![t.code(k.clock.hardclock_instructions)];
        h.extend((0..k.clock.timecounter_reads).map(|_| xrpu_read(false)));
        h.push(Step::Ret);
        progs[usize::from(handler(PIT_IRQ))] = h;
        // rtcintr: `while (rtcin(RTC_INTR) & RTCIR_PERIOD) statclock()`. Each rtcin is outb 0x70,
        // inb 0x84, inb 0x71, inb 0x84; reading register C clears the RTC's request.
        let rtcin = |clear: bool| {
            [
                io(isa8, Eff::None),
                io(isa8, Eff::None),
                io(
                    isa8,
                    if clear {
                        Eff::Clear(RTC_IRQ)
                    } else {
                        Eff::None
                    },
                ),
                io(isa8, Eff::None),
            ]
        };
        let mut h = rtcin(true).to_vec();
        h.push(t.code(k.statclock.statclock_instructions));
        h.extend(rtcin(false));
        h.push(Step::Ret);
        progs[usize::from(handler(RTC_IRQ))] = h;
        // ppcintr -> ppb_intr -> ppsintr: nanotime() first (the card's trigger read latches the
        // counter, then the latch is read), then the status register (ppb_rstr).
        progs[usize::from(handler(lpt))] = vec![
            t.code(k.pps.before_read_instructions),
            xrpu_read(true),
            xrpu_read(false),
            t.code(k.pps.after_read_instructions),
            io(isa8, Eff::None),
            Step::Ret,
        ];
        for d in &f.device {
            let access = |eff| match d.bus {
                DeviceBus::Pci => Step::PciRead {
                    decode: p.pci.device_decode_clocks,
                    data: p.pci.device_data_clocks,
                    sample: false,
                    eff,
                },
                DeviceBus::Isa16 => io16(eff),
                DeviceBus::Isa8 => io(isa8, eff),
            };
            let mut h = vec![
                t.code(d.handler_instructions / 2),
                access(Eff::Clear(d.irq)),
            ];
            h.extend((1..d.register_accesses).map(|_| access(Eff::None)));
            h.extend((0..d.data_words).map(|_| io16(Eff::None)));
            h.push(t.code(d.handler_instructions - d.handler_instructions / 2));
            h.push(Step::Ret);
            progs[usize::from(handler(d.irq))] = h;
            used |= 1 << d.irq;
            if d.bus == DeviceBus::Pci {
                elcr |= 1 << d.irq; // PIRQ lines: level-triggered (BIOS)
            }
        }
        let st = &k.stub;
        for irq in 0..16u8 {
            if used & (1 << irq) == 0 || irq == CASCADE_IRQ {
                continue;
            }
            let mut v = vec![t.code(st.entry), io(isa8, Eff::Mask(irq))];
            if irq >= 8 {
                v.push(io(isa8, Eff::EoiSlave));
            }
            v.extend([
                io(isa8, Eff::EoiMaster),
                t.code(st.check),
                Step::CplTest(irq),
                Step::Jump(resume(irq)),
            ]);
            progs[usize::from(stub(irq))] = v;
            progs[usize::from(resume(irq))] = vec![
                t.code(st.resume),
                Step::Enter(irq),
                Step::Sti,
                Step::Call(handler(irq)),
                Step::Cli,
                t.code(st.exit),
                io(isa8, Eff::Unmask(irq)),
                Step::Doreti,
            ];
            let Step::Code { ps, lines, .. } = t.code(st.splz) else {
                unreachable!()
            };
            progs[usize::from(softint(irq))] = vec![
                Step::Code {
                    ps: ps + t.gate,
                    lines,
                    user: false,
                },
                Step::Jump(stub(irq)),
            ];
        }
        let Step::Code { ps, lines, .. } = t.code(st.leave) else {
            unreachable!()
        };
        progs[usize::from(LEAVE)] = vec![
            Step::Code {
                ps: ps + t.cycles(p.cpu.iret_cycles),
                lines,
                user: false,
            },
            Step::Iret,
        ];
        progs[usize::from(ENTRY)] = vec![Step::Intack, Step::Gate, Step::StubForAcked];

        let mut pic = PicPair::default();
        pic.linux_init(elcr); // ICU_OFFSET 0x20 as Linux; edge except the PCI lines
                              // INTREN: every line with a handler, and the cascade, unmasked.
        let imen = !used;
        pic.port_write(MASTER_DATA, imen as u8);
        pic.port_write(SLAVE_DATA, (imen >> 8) as u8);

        let streams = RngStreams::new(seed);
        let mut rng_pps = streams.stream("pps");
        let second = 1e12 * (1.0 + p.crystal_ppm * 1e-6);
        let divisor = (p.timer.clock_hz / f64::from(k.hz)).round();
        let pit_period = SimDuration::from_ps((divisor / p.timer.clock_hz * 1e12).round() as u64);
        let rtc_period = SimDuration::from_ps(
            (second / p.rtc.periodic_hz / (1.0 + p.rtc.crystal_ppm * 1e-6)).round() as u64,
        );
        let first_pulse = SimTime::from_ps((0.25e12 + rng_pps.gen::<f64>() * 0.5e12) as u64);
        let counter_phase = rng_pps.gen::<f64>();
        let spl = Step::Code {
            ps: ((f64::from(k.spl_instructions) * t.instr_ps).round() as u64).max(1),
            lines: 0,
            user: false,
        };
        let mut m = M {
            s,
            q: EventQueue::new(),
            t,
            progs,
            pic,
            lines: 0,
            imen,
            intr_mask,
            class,
            stack: Vec::new(),
            iflag: true,
            cpl: 0,
            ipending: 0,
            cpl_stack: Vec::new(),
            cur: None,
            gen: 0,
            acked: None,
            in_user: false,
            isa_free: SimTime::ZERO,
            proc: Process {
                busy: false,
                work_left: 0,
                work_pending: false,
                pq: VecDeque::new(),
                partial: None,
                spl_saved: 0,
            },
            phase: 0,
            devices: f
                .device
                .iter()
                .map(|d| Device {
                    irq: d.irq,
                    gen: 0,
                    rate: 0.0,
                    interrupts: 0,
                    coalesced: 0,
                })
                .collect(),
            sections: Vec::new(),
            spl,
            section_rate_per_ps: 0.0,
            cold: 0.0,
            second,
            first_pulse,
            pit_period,
            rtc_period,
            counter_hz: p.xrpu.counter_hz,
            counter_mask: if p.xrpu.counter_bits >= 64 {
                u64::MAX
            } else {
                (1u64 << p.xrpu.counter_bits) - 1
            },
            counter_phase,
            pulse: 0,
            latch: 0,
            sampled: true,
            samples: 0,
            target: samples,
            rng_dev: streams.stream("devices"),
            rng_proc: streams.stream("process"),
            rng_cache: streams.stream("cache"),
            rng_pps,
            latency: LatencyHistogram::new(),
            phases: f.phase.iter().map(|_| LatencyHistogram::new()).collect(),
            counts: Vec::with_capacity(samples.min(1 << 20) as usize),
            series: SampleSeries::new(SERIES_POINTS),
            c: Tally::default(),
        };
        // The clocks have run since boot: the 8254's and the RTC's phases are arbitrary.
        let pit0 = m.rng_dev.gen::<f64>() * pit_period.as_ps() as f64;
        let rtc0 = m.rng_dev.gen::<f64>() * rtc_period.as_ps() as f64;
        m.q.schedule_at(SimTime::from_ps(pit0 as u64), Ev::PitRise);
        m.q.schedule_at(SimTime::from_ps(rtc0 as u64), Ev::Rtc);
        m.q.schedule_at(first_pulse, Ev::PpsRise(1));
        m.set_phase(SimTime::ZERO, 0);
        m.advance(SimTime::ZERO);
        m
    }

    fn counter(&self, t: SimTime) -> u64 {
        (t.as_ps() as f64 * 1e-12 * self.counter_hz + self.counter_phase).floor() as u64
    }

    fn set_phase(&mut self, now: SimTime, i: usize) {
        self.phase = i;
        let ph = &self.s.file.phase[i];
        self.cold = ph.cold_fraction;
        for (k, d) in self.s.file.device.iter().enumerate() {
            let rate = ph.rates.get(&d.name).copied().unwrap_or(0.0);
            let dev = &mut self.devices[k];
            dev.gen += 1;
            dev.rate = rate;
            if rate > 0.0 {
                let gap = exponential(
                    &mut self.rng_dev,
                    SimDuration::from_ps((1e12 / rate) as u64),
                );
                self.q.schedule_at(now + gap, Ev::Device(k as u8, dev.gen));
            }
        }
        self.sections = ph
            .section
            .iter()
            .map(|s| SectionKind {
                mask: match s.mask {
                    SectionMask::Cli => None,
                    SectionMask::High => Some((HWI_MASK, true)),
                    SectionMask::Tty => Some((self.class[IntrClass::Tty.index()], false)),
                    SectionMask::Net => Some((self.class[IntrClass::Net.index()], false)),
                    SectionMask::Bio => Some((self.class[IntrClass::Bio.index()], false)),
                },
                per_ps: s.per_busy_s * 1e-12,
                mean: PpsScenario::duration_us(s.mean_us),
            })
            .collect();
        self.section_rate_per_ps = self.sections.iter().map(|s| s.per_ps).sum();
        if i == 0 {
            self.schedule_work(now);
        }
    }

    /// The next busy stretch, after an idle gap that makes the phase's busy fraction.
    fn schedule_work(&mut self, now: SimTime) {
        let ph = &self.s.file.phase[self.phase];
        if ph.busy_fraction <= 0.0 {
            return;
        }
        if ph.busy_fraction >= 1.0 {
            self.proc.work_pending = true;
            return;
        }
        let idle_ms = ph.busy_ms * (1.0 - ph.busy_fraction) / ph.busy_fraction;
        let gap = exponential(&mut self.rng_proc, SimDuration::from_ns_f64(idle_ms * 1e6));
        self.q.schedule_at(now + gap, Ev::WorkArrives);
    }

    fn set_line(&mut self, now: SimTime, irq: u8, level: bool) {
        let bit = 1u16 << irq;
        if level {
            self.lines |= bit;
        } else {
            self.lines &= !bit;
        }
        self.pic.set_irq(irq, level);
        self.poke(now);
    }

    fn event(&mut self, now: SimTime, ev: Ev) {
        match ev {
            Ev::Cpu(g) => {
                if g == self.gen {
                    self.step_done(now);
                }
            }
            Ev::PpsRise(n) => {
                if !self.sampled {
                    self.c.lost_pulses += 1;
                }
                self.pulse = n;
                self.latch = self.counter(now);
                self.sampled = false;
                let p = &self.s.platform;
                let f = &self.s.file;
                self.q
                    .schedule_in(SimDuration::from_ns_f64(p.lpt.ack_to_irq_ns), Ev::LptIrq);
                self.q.schedule_in(
                    SimDuration::from_ns_f64(f.pps.pulse_width_ms * 1e6),
                    Ev::PpsFall,
                );
                // The next pulse: the GPS second in board time, with the receiver's wander.
                let jitter = normal(&mut self.rng_pps) * f.pps.jitter_ns * 1e3;
                let next = self.first_pulse.as_ps() as f64 + n as f64 * self.second + jitter;
                self.q.schedule_at(
                    SimTime::from_ps(next.max(now.as_ps() as f64 + 1e9) as u64),
                    Ev::PpsRise(n + 1),
                );
                let ph = &f.phase[self.phase];
                if n == ph.until_sample && self.phase + 1 < f.phase.len() {
                    self.q.schedule_in(
                        SimDuration::from_ps((self.second / 2.0) as u64),
                        Ev::Phase(self.phase + 1),
                    );
                }
            }
            Ev::LptIrq => self.set_line(now, self.s.platform.lpt.irq, true),
            Ev::PpsFall => self.set_line(now, self.s.platform.lpt.irq, false),
            Ev::PitRise => {
                self.q.schedule_in(self.pit_period, Ev::PitRise);
                self.q.schedule_in(
                    SimDuration::from_ps(self.pit_period.as_ps() / 2),
                    Ev::PitFall,
                );
                self.set_line(now, PIT_IRQ, true);
            }
            Ev::PitFall => self.set_line(now, PIT_IRQ, false),
            Ev::Rtc => {
                self.q.schedule_in(self.rtc_period, Ev::Rtc);
                // The RTC holds IRQ 8 until register C is read: a late handler loses a period.
                if self.lines & (1 << RTC_IRQ) == 0 {
                    self.set_line(now, RTC_IRQ, true);
                }
            }
            Ev::Device(k, g) => {
                let d = &mut self.devices[usize::from(k)];
                if g != d.gen {
                    return;
                }
                let (irq, rate) = (d.irq, d.rate);
                let gap = exponential(
                    &mut self.rng_dev,
                    SimDuration::from_ps((1e12 / rate) as u64),
                );
                self.q.schedule_at(now + gap, Ev::Device(k, g));
                if self.lines & (1 << irq) != 0 {
                    self.devices[usize::from(k)].coalesced += 1;
                } else {
                    self.devices[usize::from(k)].interrupts += 1;
                    self.set_line(now, irq, true);
                }
            }
            Ev::WorkArrives => self.proc.work_pending = true,
            Ev::Phase(i) => self.set_phase(now, i),
        }
    }

    /// INTR may have risen: an interruptible step is cut at the next instruction boundary
    /// (code) or ends (HLT, after the wake-up).
    fn poke(&mut self, now: SimTime) {
        if !self.iflag || !self.pic.intr() {
            return;
        }
        let Some(cur) = self.cur.as_mut() else {
            return;
        };
        if !cur.interruptible || cur.cut.is_some() {
            return;
        }
        let at = if cur.end.is_none() {
            cur.cut = Some(0);
            now + self.t.halt_wake
        } else {
            let elapsed = now.since_or_zero(cur.start).as_ps() as f64;
            let boundary = ((elapsed / self.t.cycle_ps).ceil() * self.t.cycle_ps) as u64;
            if boundary >= cur.code_ps {
                return; // the step ends first
            }
            cur.cut = Some(cur.code_ps - boundary);
            cur.start + SimDuration::from_ps(boundary)
        };
        self.gen += 1;
        self.q.schedule_at(at, Ev::Cpu(self.gen));
    }

    fn current_step(&mut self) -> Step {
        if let Some(a) = self.stack.last() {
            return self.progs[usize::from(a.prog)][usize::from(a.pc)];
        }
        if self.proc.pq.is_empty() {
            self.refill_process();
        }
        self.proc.pq[0]
    }

    /// The current step is done: move past it.
    fn consume(&mut self) {
        if let Some(a) = self.stack.last_mut() {
            a.pc += 1;
            a.partial = None;
        } else {
            self.proc.pq.pop_front();
            self.proc.partial = None;
        }
    }

    fn jump(&mut self, prog: u16) {
        let a = self.stack.last_mut().expect("jump in kernel code");
        a.prog = prog;
        a.pc = 0;
        a.partial = None;
    }

    /// Process code for the current phase: user work broken by spl and cli sections, and the
    /// idle loop's HLT between busy stretches.
    fn refill_process(&mut self) {
        let p = &mut self.proc;
        if !p.busy {
            if !p.work_pending {
                p.pq.push_back(Step::Hlt);
                return;
            }
            p.work_pending = false;
            p.busy = true;
            let ms = self.s.file.phase[self.phase].busy_ms;
            p.work_left =
                exponential(&mut self.rng_proc, SimDuration::from_ns_f64(ms * 1e6)).as_ps();
        }
        let gap = if self.section_rate_per_ps > 0.0 {
            exponential(
                &mut self.rng_proc,
                SimDuration::from_ps((1.0 / self.section_rate_per_ps) as u64),
            )
            .as_ps()
        } else {
            u64::MAX
        };
        let user = |ps| Step::Code {
            ps,
            lines: 0,
            user: true,
        };
        if gap >= self.proc.work_left {
            let left = self.proc.work_left;
            self.proc.pq.push_back(user(left.max(1)));
            self.proc.work_left = 0;
            self.proc.busy = false;
            self.proc.pq.push_back(Step::Hlt);
            let now = self.q.now();
            self.schedule_work(now);
            return;
        }
        self.proc.work_left -= gap;
        self.proc.pq.push_back(user(gap.max(1)));
        // Which section: by rate.
        let mut x = self.rng_proc.gen::<f64>() * self.section_rate_per_ps;
        let mut pick = self.sections.len() - 1;
        for (i, s) in self.sections.iter().enumerate() {
            if x < s.per_ps {
                pick = i;
                break;
            }
            x -= s.per_ps;
        }
        let sec = &self.sections[pick];
        let dur = exponential(&mut self.rng_proc, sec.mean).as_ps().max(1);
        let body = Step::Code {
            ps: dur,
            lines: 0,
            user: false,
        };
        let spl = self.spl;
        self.c.sections += 1;
        match sec.mask {
            None => self.proc.pq.extend([Step::Cli, body, Step::Sti]),
            Some((mask, set)) => {
                self.proc
                    .pq
                    .extend([spl, Step::SplRaise { mask, set }, body, Step::Splx, spl])
            }
        }
    }

    /// The CPU is free at `now`: run zero-time steps, take an interrupt if one is pending and
    /// allowed, and start the next timed step.
    fn advance(&mut self, now: SimTime) {
        loop {
            if self.iflag && self.pic.intr() {
                self.stack.push(Act {
                    prog: ENTRY,
                    pc: 0,
                    interrupt: true,
                    saved_if: true,
                    partial: None,
                    from_user: self.in_user,
                });
                self.iflag = false;
            }
            let step = self.current_step();
            match step {
                Step::Code { ps, lines, user } => {
                    let partial = match self.stack.last() {
                        Some(a) => a.partial,
                        None => self.proc.partial,
                    };
                    let code_ps = partial.unwrap_or_else(|| {
                        // Each line the code spans was evicted with the phase's chance.
                        let mut misses = 0u64;
                        if lines > 0 && self.cold > 0.0 {
                            misses = rand_distr::Binomial::new(u64::from(lines), self.cold)
                                .map_or(0, |b| self.rng_cache.sample(b));
                            self.c.cold_misses += misses;
                        }
                        ps + misses * self.t.line_fill.as_ps()
                    });
                    self.in_user = user && self.stack.is_empty();
                    self.start(
                        now,
                        Some(now + SimDuration::from_ps(code_ps)),
                        self.iflag,
                        code_ps,
                    );
                    return;
                }
                Step::Hlt => {
                    self.in_user = false;
                    debug_assert!(self.iflag, "hlt with interrupts off would never wake");
                    self.start(now, None, true, 0);
                    return;
                }
                Step::Isa { clocks, wide, .. } => {
                    self.c.isa_ios += 1;
                    let (bus_end, end) = self.t.isa(now, clocks, self.isa_free);
                    let recovery = if wide {
                        self.t.recovery16
                    } else {
                        self.t.recovery8
                    };
                    self.isa_free = bus_end + recovery;
                    self.start(now, Some(end), false, 0);
                    return;
                }
                Step::Intack => {
                    // The PIIX4 pulses its 8259s' INTA# internally: no ISA cycle, no recovery.
                    let (_, end) =
                        self.t
                            .isa(now, self.s.platform.isa.intack_clocks, SimTime::ZERO);
                    self.start(now, Some(end), false, 0);
                    return;
                }
                Step::PciRead {
                    decode,
                    data,
                    sample,
                    ..
                } => {
                    self.c.pci_reads += 1;
                    let (at, end) = self.t.pci_read(now, decode, data);
                    if sample && !self.sampled && self.pulse > 0 {
                        self.record(at);
                    }
                    self.start(now, Some(end), false, 0);
                    return;
                }
                Step::Gate => {
                    let from_user = self.stack.last().is_some_and(|a| a.from_user);
                    let ps = self.t.gate + if from_user { self.t.privilege } else { 0 };
                    self.in_user = false;
                    self.start(now, Some(now + SimDuration::from_ps(ps)), false, 0);
                    return;
                }
                Step::StubForAcked => match self.acked.take() {
                    Some(irq) => self.jump(stub(irq)),
                    None => {
                        self.c.spurious += 1;
                        self.jump(LEAVE);
                    }
                },
                Step::Cli => {
                    self.iflag = false;
                    self.consume();
                }
                Step::Sti => {
                    self.iflag = true;
                    self.consume();
                }
                Step::CplTest(irq) => {
                    if self.cpl & (1 << irq) != 0 {
                        // Deferred: remembered in ipending, left masked in the IMR.
                        self.ipending |= 1 << irq;
                        if irq == self.s.platform.lpt.irq {
                            self.c.deferred += 1;
                        }
                        self.jump(LEAVE);
                    } else {
                        self.consume();
                    }
                }
                Step::Enter(irq) => {
                    self.cpl_stack.push(self.cpl);
                    self.cpl |= self.intr_mask[usize::from(irq)];
                    if irq == PIT_IRQ {
                        self.c.ticks += 1;
                    } else if irq == RTC_IRQ {
                        self.c.rtc += 1;
                    }
                    self.consume();
                }
                Step::Call(prog) => {
                    self.consume();
                    self.stack.push(Act {
                        prog,
                        pc: 0,
                        interrupt: false,
                        saved_if: self.iflag,
                        partial: None,
                        from_user: false,
                    });
                }
                Step::Ret => {
                    let a = self.stack.pop().expect("ret");
                    debug_assert!(!a.interrupt);
                }
                Step::Doreti => {
                    self.cpl = self.cpl_stack.pop().expect("doreti pops what Enter pushed");
                    let pend = self.ipending & !self.cpl & HWI_MASK;
                    if pend != 0 {
                        let irq = pend.trailing_zeros() as u8;
                        self.ipending &= !(1 << irq);
                        if irq == self.s.platform.lpt.irq {
                            self.c.replay_doreti += 1;
                        }
                        self.jump(resume(irq));
                    } else {
                        self.jump(LEAVE);
                    }
                }
                Step::Iret => {
                    let a = self.stack.pop().expect("iret");
                    debug_assert!(a.interrupt);
                    self.iflag = a.saved_if;
                }
                Step::Jump(prog) => self.jump(prog),
                Step::SplRaise { mask, set } => {
                    self.proc.spl_saved = self.cpl;
                    self.cpl = if set { mask } else { self.cpl | mask };
                    self.consume();
                }
                Step::Splx => {
                    self.consume();
                    self.cpl = self.proc.spl_saved;
                    let pend = self.ipending & !self.cpl & HWI_MASK;
                    if pend != 0 {
                        // splz: `int $ICU_OFFSET + irq` re-enters the stub from the top.
                        let irq = pend.trailing_zeros() as u8;
                        self.ipending &= !(1 << irq);
                        if irq == self.s.platform.lpt.irq {
                            self.c.replay_splz += 1;
                        }
                        self.stack.push(Act {
                            prog: softint(irq),
                            pc: 0,
                            interrupt: true,
                            saved_if: self.iflag,
                            partial: None,
                            from_user: false,
                        });
                        self.iflag = false;
                    }
                }
            }
        }
    }

    fn start(&mut self, now: SimTime, end: Option<SimTime>, interruptible: bool, code_ps: u64) {
        self.gen += 1;
        self.cur = Some(Current {
            start: now,
            end,
            interruptible,
            cut: None,
            code_ps,
        });
        if let Some(end) = end {
            self.q.schedule_at(end, Ev::Cpu(self.gen));
        }
        // An interrupt already pending cuts interruptible code at once.
        if interruptible {
            self.poke(now);
        }
    }

    fn step_done(&mut self, now: SimTime) {
        let cur = self.cur.take().expect("a step was running");
        match cur.cut {
            Some(0) => self.consume(), // HLT ends when an interrupt wakes the core
            Some(left) => match self.stack.last_mut() {
                Some(a) => a.partial = Some(left),
                None => self.proc.partial = Some(left),
            },
            None => {
                let step = self.current_step();
                let eff = match step {
                    Step::Isa { eff, .. } | Step::PciRead { eff, .. } => eff,
                    Step::Intack => {
                        let (_, irq) = self.pic.interrupt_acknowledge();
                        self.acked = irq;
                        Eff::None
                    }
                    _ => Eff::None,
                };
                self.consume();
                self.apply(now, eff);
            }
        }
        self.advance(now);
    }

    fn apply(&mut self, now: SimTime, eff: Eff) {
        match eff {
            Eff::None => return,
            Eff::Mask(irq) | Eff::Unmask(irq) => {
                let bit = 1u16 << irq;
                if matches!(eff, Eff::Mask(_)) {
                    self.imen |= bit;
                } else {
                    self.imen &= !bit;
                }
                if irq < 8 {
                    self.pic.port_write(MASTER_DATA, self.imen as u8);
                } else {
                    self.pic.port_write(SLAVE_DATA, (self.imen >> 8) as u8);
                }
            }
            Eff::EoiMaster => {
                self.pic.port_write(MASTER_CMD, 0x20);
            }
            Eff::EoiSlave => {
                self.pic.port_write(SLAVE_CMD, 0x20);
            }
            Eff::Clear(irq) => {
                self.set_line(now, irq, false);
                return;
            }
        }
        self.poke(now);
    }

    fn record(&mut self, at: SimTime) {
        self.sampled = true;
        let counts = self.counter(at).wrapping_sub(self.latch) & self.counter_mask;
        let ns = (counts as f64 * 1e9 / self.counter_hz).round() as u64;
        self.samples += 1;
        self.latency.record(ns);
        let n = self.pulse;
        let i = self
            .s
            .file
            .phase
            .iter()
            .position(|p| n <= p.until_sample)
            .unwrap_or(self.s.file.phase.len() - 1);
        self.phases[i].record(ns);
        self.counts.push(counts);
        self.series.record(ns);
    }

    fn finish(self) -> PpsResult {
        let c = &self.c;
        let mut counters = vec![
            Count::always("pulses_timestamped", self.samples),
            Count::always("pulses_missed", c.lost_pulses),
            Count::always("irq7_deferred_by_cpl", c.deferred),
            Count::always("irq7_replayed_by_doreti", c.replay_doreti),
            Count::always("irq7_replayed_by_splz", c.replay_splz),
            Count::always("clock_interrupts", c.ticks),
            Count::always("rtc_interrupts", c.rtc),
            Count::always("isa_io_cycles", c.isa_ios),
            Count::always("pci_reads", c.pci_reads),
            Count::always("spl_and_cli_sections", c.sections),
            Count::always("cache_line_misses", c.cold_misses),
            Count::always("spurious_interrupts", c.spurious),
            Count::always("events_simulated", c.events),
        ];
        for (d, f) in self.devices.iter().zip(&self.s.file.device) {
            counters.push(Count::always(
                format!("{}_interrupts", f.name),
                d.interrupts,
            ));
            counters.push(Count::if_nonzero(
                format!("{}_coalesced", f.name),
                d.coalesced,
            ));
        }
        PpsResult {
            latency: self.latency,
            phases: self
                .s
                .file
                .phase
                .iter()
                .map(|p| p.name.clone())
                .zip(self.phases)
                .collect(),
            counts: self.counts,
            count_ns: 1e9 / self.counter_hz,
            series: self.series,
            counters,
        }
    }
}

/// A standard normal draw (Box-Muller).
fn normal(rng: &mut Stream) -> f64 {
    let u1: f64 = 1.0 - rng.gen::<f64>();
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}
