#!/usr/bin/env python3
"""Seed 000's single-device MSI chain written in SimPy: the peer model of `bench/vs-simpy.sh`.

It models the chain `irqlab sim seed000/ws --set delivery=msi` runs (experiments/seed000/ws.toml
on platforms/ws-2008-core2-ich9.toml with kernels/linux-2.6.18-i386-up.toml), with the same
transactions and the same costs, read from those files with tomllib, so that irqlab's speed can be
compared with a plain SimPy program doing the same work. SimPy (simpy 4) is a peer tool for this
comparison only, never a dependency of irqlab. Time is kept in integer picoseconds, as irqlab's
SimTime is, and every cost is rounded to the picosecond the way irqlab rounds it, so the two
models' latencies agree to the nanosecond (the random streams differ, so the samples do not
match one by one).

What it models, hop by hop (irqlab's file and function in parentheses):

1. The exerciser (crates/sim/src/devices/exerciser.rs) raises interrupts as a Poisson process,
   mean gap `device.interval_us` (100 us), gaps counted from trigger to trigger. One interrupt
   at a time, as seed 000's method needs: a trigger that falls while the previous interrupt is
   in service (its tasklet signature write has not reached the card) is held and fires when that
   write arrives. Its MSI is a 32-bit memory write (3 DW header + 1 DW data + 8 B framing = 24 B
   on the wire, hw/pcie.rs).
2. The MSI write crosses the card's PCIe link upstream (`link_generation` 1, `link_width` 1:
   4 ns a byte, 96 ns for 24 B; the link's transmitter in each direction is a SimPy Resource the
   TLP holds while it serialises, FIFO, hw/pcie.rs Link::transmit), then the link pipeline
   (`part.peg.link_pipeline_ns`, 100 ns), then the MCH core (`link.mch-core.ns`, 150 ns, a
   stateless delay), then the front-side bus (`link.fsb`: 333 MHz; a transaction starts on a bus
   clock edge once the previous one's request phase, `request_phase_clocks` = 2, is over, and
   arrives `transaction_clocks` = 6 clocks after its start; the bus is one Resource, held from
   the start for the request phase, hw/bus.rs SharedBus::transact).
3. The Local APIC of core 0 accepts the message: its vector's IRR bit is set (hw/lapic.rs). A
   halted core is woken: leaving HLT takes `cpu.halt_exit_ns` (200 ns). The 2.6.18 kernel has no
   cpuidle governor and the platform no idle-state table, so irqlab's core also leaves HLT with
   this fixed delay (machine/core.rs poke_cpu_at, `halt_exit`); nothing is drawn there. A core
   that finds an interrupt already pending when it reaches HLT does not halt.
4. The core takes the interrupt at the instruction boundary: IRR -> ISR, vectoring
   (`interrupt_vectoring_cycles`, 150 cycles at 3.0 GHz), then the kernel's path
   (kernel/linux.rs `link`, drivers/exerciser.rs `probe`) as costed instruction blocks, each a
   SimPy timeout of n instructions x `cycles_per_instruction` / `clock_hz`:
   common_interrupt (`entry_stub`), do_IRQ (`do_irq`), handle_edge_irq's first half
   (`flow_handler` / 2), chip->ack (`apic_chip_op`) with the Local APIC EOI write
   (`lapic_access_cycles`, on the core, no bus cycle: an MSI is edge-triggered, so no EOI message
   leaves), handle_IRQ_event (`handle_irq_event`, `per_action`), the seed's MSI-mode ISR
   (Figure 5: `driver_isr`, then its ISR-signature write), tasklet_schedule
   (`tasklet_schedule`), the flow handler's rest (`note_interrupt` + the other half of
   `flow_handler`), irq_exit (`irq_exit`), __do_softirq (`do_softirq`), tasklet_action
   (`tasklet_action`), the seed's tasklet (`driver_tasklet`, then its tasklet-signature write),
   ret_from_intr (`exit_path`), IRET (`iret_cycles`), and the idle loop (`idle_loop`) back to HLT.
5. Each signature write is a posted CPU store (machine/core.rs `issue`): the core goes on once
   the front-side bus has taken it (the bus crossing's arrival); the write goes on by itself
   through the MCH core and down the card's link (its downstream transmitter, the same
   serialisation and pipeline) to the card. The tasklet signature's arrival ends the interrupt's
   service at the card (`serviced_addr`).
6. The analyzer on the card's link (probes/analyzer.rs) timestamps each TLP's first symbol on the
   wire: isr_latency is the MSI write's to the ISR signature's, tasklet_latency the MSI write's to
   the tasklet signature's, in rounded nanoseconds, counted into a histogram (a dict of counts).

The MMIO status read: in MSI mode the seed's ISR (Figure 5) neither reads the card's status nor
clears it, and irqlab's `drivers/exerciser.rs` follows it (its `cpu_mmio_reads` counter is 0 on
this scenario), so the comparison leaves both out. `--status-read` adds Figure 4's legacy-mode
accesses to the ISR: a non-posted status read (the request down the fabric, the card's
`read_turnaround_ns`, the completion back up, the core stalled throughout) and the posted clear
write; that chain has no counterpart in an irqlab MSI run and is not what the benchmark times.

What it simplifies relative to irqlab:
- The route is the one this scenario's packets take (card link <-> MCH core <-> FSB), checked
  against the platform file but not computed from a general topology; the ICH, DMI, the
  IO-APIC, the 8259 pair and the second core are not built, since no packet of this chain
  reaches them (irqlab builds them and its MSI runs never touch them either).
- The kernel's paths are written out as one Python function instead of programs of a step
  language run by an interpreter; steps that take no time in irqlab (preempt-count updates,
  `Inc`, `NoteHandled`, branches, the softirq bookkeeping) are plain Python statements. The
  tasklet list and the softirq pending mask are two flags; no tick (the kernel's `tick.hz` is 0),
  no SMIs, no workload, no replays or switches on the link (none configured), no clock changes.
- An interrupt that reaches the core while it runs the path waits for IRET (irqlab would take it
  in __do_softirq's interrupts-on window); none does here, since the card holds its next
  interrupt until the tasklet's write has reached it.
- Local APIC priority is one class comparison (IRR's highest class above ISR's); the message's
  destination is core 0 (the UP kernel's only CPU) without decoding the MSI address.
- irqlab runs the core ahead of its event queue where that is exact and folds consecutive blocks
  into one step; SimPy has no such shortcut, so here every instruction block is its own timeout,
  as a plain SimPy model would write it. `--fold` merges the blocks between two accesses into one
  timeout (the same times, fewer events) to show how much that choice weighs.

Usage: python3 bench/simpy/msi_chain.py [--samples N] [--seed S] [--fold] [--status-read]
It prints the simulated interrupts, the wall time of the simulation (env.run only: Python's
start-up, imports and reading the TOML files are left out, which favours SimPy), interrupts per
second of wall time, both latencies' count, mean, min, p50, p99 and max, and a last line
`RESULT key=value ...` for scripts.
"""

import argparse
import math
import os
import random
import sys
import time
import tomllib

try:
    import simpy
except ImportError:
    print("msi_chain.py needs SimPy, a peer tool for comparison: pip install simpy", file=sys.stderr)
    sys.exit(2)

UP, DOWN = 0, 1
MEM_WRITE, MEM_READ, CPL_D = "MWr", "MRd", "CplD"
TLP_FRAMING_BYTES = 8  # hw/pcie.rs TLP_FRAMING_BYTES


def ps_of_ns(ns):
    """SimDuration::from_ns_f64: nanoseconds to whole picoseconds, rounded."""
    return int(round(ns * 1000.0))


def ps_of_cycles(cycles, hz):
    """SimDuration::from_cycles: cycles of a clock at hz, rounded to the picosecond."""
    return int(round(cycles * 1e12 / hz))


def next_edge(t, period):
    """SimTime::next_edge: the first edge of a clock of `period` at or after t."""
    rem = t % period
    return t if rem == 0 else t + period - rem


class Packet:
    """A TLP: its kind, address, data, bytes on the wire, and where it goes."""

    __slots__ = ("kind", "addr", "data", "wire_bytes", "released")

    def __init__(self, kind, addr, data=0, released=None):
        self.kind = kind
        self.addr = addr
        self.data = data
        # 3 DW header (32-bit address, completion); one DW of payload on writes and completions.
        payload = 4 if kind in (MEM_WRITE, CPL_D) else 0
        self.wire_bytes = 12 + payload + TLP_FRAMING_BYTES
        # A CPU store: the event the core waits on until its bus has taken the store.
        self.released = released


class SerialLink:
    """A PCIe link: a FIFO transmitter each way, held while a TLP serialises, then the pipeline."""

    def __init__(self, env, generation, width, pipeline_ps, analyzer=None):
        if generation not in (1, 2):
            raise SystemExit("this model knows 8b/10b links (Gen1, Gen2) only")
        self.env = env
        self.tx = (simpy.Resource(env, 1), simpy.Resource(env, 1))
        attoseconds_per_byte = (4_000_000_000, 2_000_000_000)[generation - 1]
        # LinkConfig::serialization: bytes striped over the lanes, rounded to the picosecond.
        self.ser = lambda b: (-(-b // width) * attoseconds_per_byte + 500_000) // 1_000_000
        self.pipeline = pipeline_ps
        self.analyzer = analyzer

    def cross(self, pkt, direction):
        env = self.env
        with self.tx[direction].request() as req:
            yield req
            if self.analyzer is not None:
                self.analyzer.observe(env.now, direction, pkt)
            yield env.timeout(self.ser(pkt.wire_bytes))
        yield env.timeout(self.pipeline)


class Delay:
    """A crossing with a fixed latency and no state (inside the MCH)."""

    def __init__(self, env, ps):
        self.env, self.ps = env, ps

    def cross(self, pkt, direction):
        yield self.env.timeout(self.ps)


class SharedBus:
    """The front-side bus: transactions start on bus-clock edges, one request phase apart."""

    def __init__(self, env, clock_hz, request_phase_clocks, transaction_clocks):
        self.env = env
        self.bus = simpy.Resource(env, 1)
        self.period = ps_of_cycles(1.0, clock_hz)
        self.request_phase = self.period * request_phase_clocks
        self.rest = self.period * (transaction_clocks - request_phase_clocks)

    def cross(self, pkt, direction):
        env = self.env
        with self.bus.request() as req:
            yield req
            edge = next_edge(env.now, self.period)
            if edge > env.now:
                yield env.timeout(edge - env.now)
            yield env.timeout(self.request_phase)
        yield env.timeout(self.rest)


class Fabric:
    """The two routes of the chain: card -> core (MSI, completions) and core -> card (stores,
    reads). A packet crosses its hops one after another in a process of its own."""

    def __init__(self, env, card_link, mch_core, fsb):
        self.env = env
        self.to_core = ((card_link, UP), (mch_core, UP), (fsb, DOWN))
        self.to_card = ((fsb, UP), (mch_core, DOWN), (card_link, DOWN))
        self.core = None
        self.card = None

    def send(self, pkt, to_core):
        self.env.process(self.travel(pkt, to_core))

    def travel(self, pkt, to_core):
        route = self.to_core if to_core else self.to_card
        for i, (hop, direction) in enumerate(route):
            yield from hop.cross(pkt, direction)
            if i == 0 and pkt.released is not None:
                pkt.released.succeed()
        if to_core:
            self.core.receive(pkt)
        else:
            self.card.receive(pkt)


class LocalApic:
    """IRR and ISR of core 0's Local APIC (sets of vectors) and their priority classes."""

    def __init__(self):
        self.irr = set()
        self.isr = set()

    def accept(self, vector):
        self.irr.add(vector)

    def deliverable(self):
        if not self.irr:
            return False
        top = max(self.irr) >> 4
        return not self.isr or top > max(self.isr) >> 4

    def acknowledge(self):
        v = max(self.irr)
        self.irr.discard(v)
        self.isr.add(v)
        return v

    def eoi(self):
        if self.isr:
            self.isr.discard(max(self.isr))


class Core:
    """Core 0 running Linux 2.6.18's idle loop and MSI interrupt path (kernel/linux.rs)."""

    def __init__(self, env, fabric, cpu, ins, card_cfg, fold, status_read):
        self.env = env
        self.fabric = fabric
        self.lapic = LocalApic()
        self.halted = False
        self.wake = None
        self.read_done = None
        self.fold = fold
        self.status_read = status_read
        self.acc = 0  # folded instruction time not yet charged (--fold)
        clock = cpu["clock_hz"]
        # CpuCosts: one instruction in femtoseconds, rounded once; n instructions rounded to ps.
        self.fs_per_instruction = int(round(cpu["cycles_per_instruction"] * 1e15 / clock))
        self.vectoring = ps_of_cycles(cpu["interrupt_vectoring_cycles"], clock)
        self.iret = ps_of_cycles(cpu["iret_cycles"], clock)
        self.lapic_access = ps_of_cycles(cpu["lapic_access_cycles"], clock)
        self.halt_exit = ps_of_ns(cpu["halt_exit_ns"])
        self.ins = ins
        self.half = ins["flow_handler"] // 2
        self.rest = ins["note_interrupt"] + ins["flow_handler"] - self.half
        c = card_cfg
        self.isr_signature = c["signature_bar"] + c["isr_signature_offset"]
        self.tasklet_signature = c["signature_bar"] + c["tasklet_signature_offset"]
        self.status_addr = c["reg_bar"] + c["status_offset"]
        self.clear_addr = c["reg_bar"] + c["clear_offset"]
        self.pending_flag = c["pending_flag"]
        self.int_count = 0
        self.tasklet_scheduled = False
        self.softirq_pending = False
        self.interrupts = 0

    def instructions(self, n):
        return (n * self.fs_per_instruction + 500) // 1000

    def code(self, n):
        """n instructions of kernel code: a timeout of their time (or, with --fold, added to
        the time charged at the next access or wait)."""
        t = self.instructions(n)
        if self.fold:
            self.acc += t
        else:
            yield self.env.timeout(t)

    def cycles(self, ps):
        """A fixed cost in core time (vectoring, IRET, a Local APIC access)."""
        if self.fold:
            self.acc += ps
        else:
            yield self.env.timeout(ps)

    def flush(self):
        if self.acc:
            t, self.acc = self.acc, 0
            yield self.env.timeout(t)

    def mmio_write(self, addr, data):
        """A posted store: the core goes on once the front-side bus has taken it."""
        yield from self.flush()
        released = self.env.event()
        self.fabric.send(Packet(MEM_WRITE, addr, data, released), to_core=False)
        yield released

    def mmio_read(self, addr):
        """A non-posted read: the core stalls until the completion is back."""
        yield from self.flush()
        self.read_done = self.env.event()
        self.fabric.send(Packet(MEM_READ, addr), to_core=False)
        value = yield self.read_done
        return value

    def receive(self, pkt):
        """A packet reaches the core: an interrupt message, or a read's completion."""
        if pkt.kind == MEM_WRITE:
            self.lapic.accept(pkt.data & 0xFF)
            if self.halted and not self.wake.triggered:
                self.wake.succeed()
        elif pkt.kind == CPL_D:
            done, self.read_done = self.read_done, None
            done.succeed(pkt.data)

    def run(self):
        """cpu_idle -> default_idle -> safe_halt (sti; hlt), and the interrupt when it comes."""
        env, ins = self.env, self.ins
        while True:
            yield from self.code(ins["idle_loop"])
            yield from self.flush()
            if not self.lapic.deliverable():
                self.halted = True
                self.wake = env.event()
                yield self.wake
                self.halted = False
                yield env.timeout(self.halt_exit)
            # One interrupt, and any that came meanwhile: after IRET the next one is taken at
            # the first instruction boundary, before the idle loop goes on.
            while True:
                yield from self.interrupt()
                yield from self.flush()
                if not self.lapic.deliverable():
                    break

    def interrupt(self):
        """Take the interrupt: vectoring, common_interrupt, do_IRQ, handle_edge_irq, the ISR,
        irq_exit with the softirq and the tasklet, ret_from_intr, IRET."""
        ins = self.ins
        self.lapic.acknowledge()
        self.interrupts += 1
        yield from self.cycles(self.vectoring)
        yield from self.code(ins["entry_stub"])  # common_interrupt: SAVE_ALL, call do_IRQ
        yield from self.code(ins["do_irq"])  # irq_enter, 4K-stack switch, desc lookup
        yield from self.code(self.half)  # handle_edge_irq: lock, status bits, kstat
        yield from self.code(ins["apic_chip_op"])  # chip->ack: ack_APIC_irq
        yield from self.cycles(self.lapic_access)  # the EOI register write
        self.lapic.eoi()
        yield from self.code(ins["handle_irq_event"])
        yield from self.code(ins["per_action"])
        yield from self.isr()
        yield from self.code(self.rest)  # note_interrupt, the flow handler's unlock
        yield from self.code(ins["irq_exit"])
        if self.softirq_pending:  # irq_exit -> do_softirq -> __do_softirq
            self.softirq_pending = False
            yield from self.code(ins["do_softirq"])
            if self.tasklet_scheduled:  # TASKLET_SOFTIRQ -> tasklet_action
                self.tasklet_scheduled = False
                yield from self.code(ins["tasklet_action"])
                yield from self.tasklet()
        yield from self.code(ins["exit_path"])  # ret_from_intr, RESTORE_ALL
        yield from self.cycles(self.iret)

    def isr(self):
        """The seed's ISR in MSI mode (Figure 5); with --status-read, Figure 4's accesses."""
        yield from self.code(self.ins["driver_isr"])
        if self.status_read:
            status = yield from self.mmio_read(self.status_addr)
            if status & self.pending_flag == 0:
                return
            yield from self.mmio_write(self.clear_addr, self.pending_flag)
        self.int_count += 1
        yield from self.mmio_write(self.isr_signature, self.int_count)
        self.tasklet_scheduled = True  # tasklet_schedule: raise TASKLET_SOFTIRQ
        self.softirq_pending = True
        yield from self.code(self.ins["tasklet_schedule"])

    def tasklet(self):
        yield from self.code(self.ins["driver_tasklet"])
        yield from self.mmio_write(self.tasklet_signature, self.int_count)


class Card:
    """The PCIe exerciser: Poisson triggers, one interrupt in service at a time, an MSI write
    per interrupt, registers that answer reads after the card's turnaround."""

    def __init__(self, env, fabric, cfg, vector, samples, rng):
        self.env = env
        self.fabric = fabric
        self.rng = rng
        self.samples = samples
        self.vector = vector
        if cfg.get("interrupts", "poisson") != "poisson":
            raise SystemExit("this model raises Poisson interrupts only (seed 000's)")
        # The card's clock is nominal (clock_ppm absent): the mean gap in ps.
        self.mean_gap_ps = cfg["interval_us"] * 1e6
        self.read_turnaround = ps_of_ns(cfg["read_turnaround_ns"])
        self.serviced = cfg["signature_bar"] + cfg["tasklet_signature_offset"]
        self.status_addr = cfg["reg_bar"] + cfg["status_offset"]
        self.clear_addr = cfg["reg_bar"] + cfg["clear_offset"]
        self.pending_flag = cfg["pending_flag"]
        self.status = 0
        self.generated = 0
        self.in_service = False
        self.held = False
        self.held_triggers = 0

    def gap(self):
        # engine::exponential: a gap drawn from the exponential distribution, whole picoseconds.
        return int(round(self.rng.expovariate(1.0 / self.mean_gap_ps)))

    def generator(self):
        """Triggers at Poisson times until the run has its samples; gaps from trigger to trigger."""
        env = self.env
        while True:
            yield env.timeout(self.gap())
            if self.generated >= self.samples:
                return
            self.trigger()

    def trigger(self):
        if self.in_service:
            self.held = True
            self.held_triggers += 1
            return
        self.in_service = True
        self.generated += 1
        self.status |= self.pending_flag
        # MSI address 0xFEE00000 (APIC ID 0, physical), data: edge, fixed, the vector.
        self.fabric.send(Packet(MEM_WRITE, 0xFEE0_0000, 0x4000 | self.vector), to_core=True)

    def receive(self, pkt):
        if pkt.kind == MEM_READ:
            self.env.process(self.answer(pkt))
        elif pkt.addr == self.clear_addr:
            self.status &= ~pkt.data
        elif pkt.addr == self.serviced:
            self.in_service = False
            if self.held:
                self.held = False
                if self.generated < self.samples:
                    self.trigger()

    def answer(self, pkt):
        yield self.env.timeout(self.read_turnaround)
        value = self.status if pkt.addr == self.status_addr else 0
        self.fabric.send(Packet(CPL_D, pkt.addr, value), to_core=True)


class Analyzer:
    """The analyzer on the card's link and the latency probe reading it (probes/analyzer.rs)."""

    def __init__(self, isr_signature, tasklet_signature):
        self.isr_signature = isr_signature
        self.tasklet_signature = tasklet_signature
        self.start = None
        self.isr_seen = False
        self.isr = {}  # latency in ns -> count
        self.tasklet = {}
        self.overlapped = 0
        self.packets = 0

    def observe(self, t, direction, pkt):
        self.packets += 1
        if direction == UP and pkt.kind == MEM_WRITE and pkt.addr >> 20 == 0xFEE:
            if self.start is not None:
                self.overlapped += 1
            self.start = t
            self.isr_seen = False
            return
        if direction != DOWN or pkt.kind != MEM_WRITE or self.start is None or t < self.start:
            return
        ns = (t - self.start + 500) // 1000
        if pkt.addr == self.isr_signature and not self.isr_seen:
            self.isr_seen = True
            self.isr[ns] = self.isr.get(ns, 0) + 1
        elif pkt.addr == self.tasklet_signature and self.isr_seen:
            self.tasklet[ns] = self.tasklet.get(ns, 0) + 1
            self.start = None


def summary(hist):
    """count, mean, min, p50, p99, max of a histogram {ns: count}."""
    n = sum(hist.values())
    if n == 0:
        return (0, math.nan, 0, 0, 0, 0)
    keys = sorted(hist)
    mean = sum(k * c for k, c in hist.items()) / n

    def quantile(q):
        rank, seen = math.ceil(q * n), 0
        for k in keys:
            seen += hist[k]
            if seen >= rank:
                return k
        return keys[-1]

    return (n, mean, keys[0], quantile(0.5), quantile(0.99), keys[-1])


def load(repo, scenario):
    path = os.path.join(repo, scenario)
    with open(path, "rb") as f:
        s = tomllib.load(f)
    base = os.path.dirname(path)
    with open(os.path.join(base, s["platform"]), "rb") as f:
        platform = tomllib.load(f)
    with open(os.path.join(base, s["kernel"]), "rb") as f:
        kernel = tomllib.load(f)
    return s, platform, kernel


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--samples", type=int, default=50_000, help="interrupts to raise")
    p.add_argument("--seed", type=int, default=1, help="random seed of the card's gaps")
    p.add_argument("--fold", action="store_true",
                   help="one timeout per run of instruction blocks between accesses")
    p.add_argument("--status-read", action="store_true",
                   help="add Figure 4's status read and clear write (not irqlab's MSI chain)")
    p.add_argument("--repo", default=os.path.normpath(os.path.join(here, "../..")),
                   help="the irqlab tree holding the scenario's files")
    p.add_argument("--scenario", default="experiments/seed000/ws.toml")
    a = p.parse_args()

    s, platform, kernel = load(a.repo, a.scenario)
    card_cfg = s["device"][0]
    links, parts = platform["link"], platform["part"]
    port = card_cfg["port"]
    # The route this model hard-codes: card link -> root port -> MCH core (a delay) -> MCH ->
    # FSB (a shared bus) -> core 0. Check that the platform file says so.
    mch_core = next(k for k, l in links.items() if port in l.get("down", []))
    fsb = next(k for k, l in links.items() if "cpu0" in l.get("down", []))
    if (links[mch_core]["kind"], links[fsb]["kind"]) != ("delay", "shared-bus") or \
            links[mch_core]["up"] != links[fsb]["up"]:
        raise SystemExit("this model knows a card below a delay link beside the CPUs' bus only")
    if kernel.get("smp") or platform.get("cpu", {}).get("idle_states") or kernel.get("idle"):
        raise SystemExit("this model knows a UP kernel halting with HLT only")
    if kernel.get("tick", {}).get("hz", 0):
        raise SystemExit("this model has no tick (the kernel's tick.hz must be 0)")
    ins = kernel["instructions"]
    vector = card_cfg.get("msi_vector") or kernel["first_device_vector"]

    env = simpy.Environment()
    analyzer = Analyzer(card_cfg["signature_bar"] + card_cfg["isr_signature_offset"],
                        card_cfg["signature_bar"] + card_cfg["tasklet_signature_offset"])
    card_link = SerialLink(env, card_cfg["link_generation"], card_cfg["link_width"],
                           ps_of_ns(parts[port]["link_pipeline_ns"]), analyzer)
    fb = links[fsb]
    fabric = Fabric(env, card_link, Delay(env, ps_of_ns(links[mch_core]["ns"])),
                    SharedBus(env, fb["clock_hz"], fb["request_phase_clocks"],
                              fb["transaction_clocks"]))
    core = Core(env, fabric, platform["cpu"], ins, card_cfg, a.fold, a.status_read)
    card = Card(env, fabric, card_cfg, vector, a.samples, random.Random(a.seed))
    fabric.core, fabric.card = core, card
    env.process(core.run())
    env.process(card.generator())

    t0 = time.perf_counter()
    env.run()  # until the card stops and the last interrupt drains
    wall = time.perf_counter() - t0

    n = card.generated
    mode = "folded blocks" if a.fold else "one timeout per block"
    if a.status_read:
        mode += ", with Figure 4's status read and clear write"
    print(f"SimPy {simpy.__version__} model of seed 000's MSI chain ({mode}), seed {a.seed}")
    print(f"  {n:,} interrupts simulated ({core.interrupts:,} taken, {card.held_triggers:,} "
          f"triggers held for the previous, {analyzer.overlapped} overlapped), "
          f"{env.now / 1e6:,.0f} us simulated")
    print(f"  wall {wall:.3f} s: {n / wall:,.0f} simulated interrupts/s")
    print(f"  {'metric':<16} {'count':>8} {'mean':>8} {'min':>5} {'p50':>5} {'p99':>5} {'max':>5}  (ns)")
    for name, h in (("isr_latency", analyzer.isr), ("tasklet_latency", analyzer.tasklet)):
        c, mean, lo, p50, p99, hi = summary(h)
        print(f"  {name:<16} {c:>8,} {mean:>8.1f} {lo:>5} {p50:>5} {p99:>5} {hi:>5}")
    isr_mean, tasklet_mean = summary(analyzer.isr)[1], summary(analyzer.tasklet)[1]
    print(f"RESULT interrupts={n} wall_s={wall:.6f} rate={n / wall:.1f} "
          f"isr_mean_ns={isr_mean:.2f} tasklet_mean_ns={tasklet_mean:.2f}")


if __name__ == "__main__":
    main()
