//! Transactions on the fabric: a packet crosses its route hop by hop (ahead of the clock where
//! that is exact) and reaches its endpoint: a device, host memory, the core or the hub.

use super::fabric::{Endpoint, RouteId};
use super::{CpuState, Ev, Machine};
use crate::devices::Device;
use crate::engine::{SimDuration, SimTime};
use crate::hw::bus::Cycle;
use crate::hw::msi::MsiMessage;
use crate::hw::pcie::{Tlp, TlpKind};

pub(super) struct Packet {
    pub(super) tlp: Tlp,
    /// `tlp.wire_bytes()`, computed once: every stateful hop needs it.
    pub(super) wire_bytes: u32,
    pub(super) route: RouteId,
    pub(super) hop: u8,
    pub(super) dest: Endpoint,
    /// The bus cycle it needs where buses tell them apart (ISA: 8 or 16 bits, INTA).
    pub(super) cycle: Cycle,
    /// A CPU store: the core may go on once the FSB has taken it.
    pub(super) releases_cpu: bool,
    pub(super) live: bool,
}

impl Machine {
    // ---- packets -------------------------------------------------------------------------

    pub(super) fn alloc(&mut self, pkt: Packet) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.packets[i as usize] = pkt;
                i
            }
            None => {
                self.packets.push(pkt);
                (self.packets.len() - 1) as u32
            }
        }
    }

    pub(super) fn release(&mut self, p: u32) {
        self.packets[p as usize].live = false;
        self.free.push(p);
    }

    /// Start `tlp` on its way from `from` to `to` after `delay`.
    pub(super) fn send(
        &mut self,
        from: Endpoint,
        to: Endpoint,
        tlp: Tlp,
        delay: SimDuration,
    ) -> u32 {
        self.send_packet(
            from,
            to,
            tlp,
            self.q.now() + delay,
            false,
            true,
            Cycle::of(&tlp),
        )
        .0
    }

    /// Start `tlp` on its way at `at`. `early`: it may cross hops ahead of the clock right away.
    /// That is exact only while every future action of the core is in the queue (it is not
    /// while the core runs ahead of the clock and goes on after this send), because a hop
    /// crossed early is taken before anything the core would put on it in the meantime.
    pub(super) fn send_at(
        &mut self,
        from: Endpoint,
        to: Endpoint,
        tlp: Tlp,
        at: SimTime,
        early: bool,
    ) {
        self.send_packet(from, to, tlp, at, false, early, Cycle::of(&tlp));
    }

    /// Start a packet at `t`; `releases_cpu` marks a CPU store, which lets the core go on once
    /// the FSB has taken it; `early` as for [`Self::send_at`]; `cycle`: the bus cycle it needs.
    /// Returns the packet and, if it already crossed the FSB, when that was.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn send_packet(
        &mut self,
        from: Endpoint,
        to: Endpoint,
        tlp: Tlp,
        t: SimTime,
        releases_cpu: bool,
        early: bool,
        cycle: Cycle,
    ) -> (u32, Option<SimTime>) {
        let p = self.alloc(Packet {
            tlp,
            wire_bytes: tlp.wire_bytes(),
            route: self.fabric.route(from, to),
            hop: 0,
            dest: to,
            cycle,
            releases_cpu,
            live: true,
        });
        // Cross right away only if nothing is scheduled up to the entry time (see `advance`).
        if early && !self.strict && self.next_due().is_none_or(|next| next > t) {
            // A store (the core goes on after it) runs ahead of the clock; a read stalls it.
            let ahead = releases_cpu;
            let released = self.advance(p, t, true, ahead);
            (p, released)
        } else {
            self.q.schedule_at(t, Ev::Hop(p));
            (p, None)
        }
    }

    /// When the next thing is due that a packet crossing ahead of the clock must not pass: the
    /// next queued event, or a read's completion that `issue` has not yet taken (it stands for
    /// the event it would have been).
    pub(super) fn next_due(&self) -> Option<SimTime> {
        match (self.q.peek_time(), self.completed) {
            (Some(a), Some((_, b, _))) => Some(a.min(b)),
            (a, b) => a.or(b.map(|c| c.1)),
        }
    }

    pub(super) fn on_hop(&mut self, p: u32) {
        let pkt = &self.packets[p as usize];
        debug_assert!(pkt.live);
        if pkt.hop >= self.fabric.route_len(pkt.route) {
            self.deliver(p);
            return;
        }
        self.advance(p, self.q.now(), false, false);
    }

    /// Cross hops from time `t` until the packet must wait for the clock: a stateful hop (bus,
    /// link) may be crossed ahead of time only if nothing else is scheduled before the packet
    /// reaches it, so nothing else can take that bus first (exact, like the CPU's run-ahead).
    /// With `inline_release`, a CPU store's release time is returned instead of scheduled.
    ///
    /// A packet that reaches a device with nothing scheduled before it is delivered there and
    /// then (nothing else can reach the device first, and a later packet on the same link
    /// arrives after this one). `ahead`: the core that sent it runs on ahead of the clock, so
    /// what the device does that others can see (a reply, a new interrupt, which changes the
    /// run's sample count) waits for its own event (see `send_at`, `Effect::Due`, `Device::in_order`).
    pub(super) fn advance(
        &mut self,
        p: u32,
        mut t: SimTime,
        inline_release: bool,
        ahead: bool,
    ) -> Option<SimTime> {
        let mut released = None;
        let pkt = &self.packets[p as usize];
        let (route, wire_bytes, cycle, releases, mut i) = (
            pkt.route,
            pkt.wire_bytes,
            pkt.cycle,
            pkt.releases_cpu,
            pkt.hop,
        );
        let hops = self.fabric.route_of(route);
        let len = hops.len();
        loop {
            let hop = hops.at(i);
            i += 1;
            let crossing = self.fabric.cross(hop, t, wire_bytes, cycle);
            if let (true, Some(start)) = (hop.link == self.analyzed_link, crossing.wire_start) {
                let tlp = &self.packets[p as usize].tlp;
                self.analyzer.observe(start, hop.dir, tlp);
                self.probe.observe(start, hop.dir, tlp);
            }
            // A CPU store lets the core go on once its own bus, the route's first hop, took it.
            if releases && i == 1 {
                if inline_release {
                    released = Some(crossing.arrival);
                } else {
                    let c = self.tag_core[usize::from(self.packets[p as usize].tlp.tag)];
                    self.q.schedule_at(crossing.arrival, Ev::CpuResume(c));
                }
            }
            // Crossings without state (a hub's delays, clocked decode paths) take the same time
            // whatever else happens: fold them in up to the next hop that has state.
            t = crossing.arrival;
            while i < len {
                match self.fabric.stateless_cross(hops.at(i), t) {
                    Some(arrival) => {
                        t = arrival;
                        i += 1;
                    }
                    None => break,
                }
            }
            if self.strict || i >= len || self.next_due().is_some_and(|next| next <= t) {
                break;
            }
        }
        if !self.strict && i >= len && self.next_due().is_none_or(|next| next > t) {
            let pkt = &self.packets[p as usize];
            let (tlp, dest) = (pkt.tlp, pkt.dest);
            match dest {
                // A device takes a request ahead of the clock, unless the core that sent it runs
                // on ahead and the device must see requests in time order (`Device::in_order`).
                Endpoint::Device(k) if !ahead || !self.devices[usize::from(k)].in_order() => {
                    self.release(p);
                    self.last_inline = self.last_inline.max(t);
                    self.device_access(k, tlp, t, !ahead);
                    return released;
                }
                // The completion of the read its core is issuing now (`Machine::issue`): the
                // core has done nothing since, and nothing is queued before it arrives, so the
                // core takes it there and goes on, ahead of the clock, as the completion's own
                // event would have had it.
                Endpoint::Core(_)
                    if matches!(tlp.kind, TlpKind::Cpl | TlpKind::CplD)
                        && self.issuing == Some(self.tag_core[usize::from(tlp.tag)]) =>
                {
                    self.packets[p as usize].hop = i;
                    let seq = self.q.reserve();
                    self.completed = Some((p, t, seq));
                    return released;
                }
                // The hub takes a request there and then, as a device does, unless the core
                // that sent it runs on ahead (the hub's state, the 8259's INTR among it, must
                // not change before what the core does meanwhile) or an observer looks at the
                // machine after every event.
                Endpoint::Ich if !ahead && self.observer.is_none() => {
                    self.last_inline = self.last_inline.max(t);
                    self.ich_receive(p, tlp, t);
                    return released;
                }
                // An interrupt message for halted cores: nothing of them runs before their
                // wake-up, which is an event.
                Endpoint::Core(_) if tlp.kind == TlpKind::MemWrite => {
                    if let Some(m) = MsiMessage::decode(tlp.addr, tlp.data) {
                        let addressed = self.addressed(&m);
                        if self.all_halted(addressed) {
                            self.release(p);
                            self.last_inline = self.last_inline.max(t);
                            self.accept_message(&m, addressed, t);
                            return released;
                        }
                    }
                }
                _ => {}
            }
        }
        self.packets[p as usize].hop = i;
        self.q.schedule_at(t, Ev::Hop(p));
        released
    }

    pub(super) fn deliver(&mut self, p: u32) {
        let pkt = &self.packets[p as usize];
        let (tlp, dest) = (pkt.tlp, pkt.dest);
        match dest {
            Endpoint::Device(k) => {
                self.release(p);
                self.device_access(k, tlp, self.q.now(), true);
            }
            Endpoint::Memory => {
                self.release(p);
                if tlp.kind == TlpKind::MemRead {
                    self.memory_read(tlp);
                }
            }
            Endpoint::Core(_) => {
                self.release(p);
                match tlp.kind {
                    TlpKind::MemWrite => self.interrupt_message(tlp, self.q.now()),
                    TlpKind::Cpl | TlpKind::CplD => {
                        let c = usize::from(self.tag_core[usize::from(tlp.tag)]);
                        let core = &mut self.cores[c];
                        debug_assert_eq!(core.state, CpuState::Stalled);
                        core.ctx.value = tlp.data;
                        core.state = CpuState::Running;
                        self.cpu_run(c);
                    }
                    _ => {}
                }
            }
            Endpoint::Ich => self.ich_receive(p, tlp, self.q.now()),
        }
    }

    /// A device's DMA read reaches host memory: after the memory's latency the root complex
    /// returns the data in completions of at most the read completion boundary each (64 B: what
    /// Intel root complexes use; base spec 2.3.1.1).
    pub(super) fn memory_read(&mut self, req: Tlp) {
        const RCB_BYTES: u32 = 64;
        let by = |d: &Device| d.card().is_some_and(|d| d.cfg.bdf == req.requester);
        let Some(k) = self.devices.iter().position(by) else {
            return;
        };
        let mut left = u32::from(req.len_dw) * 4;
        while left > 0 {
            let chunk = left.min(RCB_BYTES);
            left -= chunk;
            let cpl = Tlp {
                kind: TlpKind::CplD,
                requester: req.requester,
                completer: self.root_requester,
                tag: req.tag,
                addr: req.addr,
                len_dw: (chunk / 4) as u16,
                data: 0,
            };
            let latency = self.fabric.memory_read;
            self.send(Endpoint::Memory, Endpoint::Device(k as u8), cpl, latency);
        }
    }
}
