//! The host planner of `irqlab plan affinity --host`: seed 001's three rules on this host's CPUs
//! and NICs, queue by queue. It reads what [`crate::affinity::read`] found and makes the result
//! model's [`HostPlan`] (`irqlab_stats::plan`), which the renderers read; `--apply` writes it
//! through [`crate::affinity`].
//!
//! The model's planner (`irqlab_sim::plan::affinity::plan`) tries every placement of one IRQ
//! per NIC, which a host's queues outgrow at once (16 queue IRQs on 16 CPUs are 16^16
//! placements; it stops at 2^22). This one is greedy, deterministic, and applies the same rules
//! to NIC queues:
//!
//! - A *side* is one NIC's queue i: its rx and tx IRQs, or its TxRx IRQ. They go on one CPU
//!   (they serve one ring pair, and drivers name them together). A NIC with a single IRQ for
//!   everything is one side, as in seed 001.
//! - A flow a:b pairs a's i-th queue with b's i-th queue into a *unit* of two sides (the queue
//!   that receives a packet and the one that sends it on, either way); a NIC that is a flow of
//!   its own (`--nic`, or no flows given) makes units of one side.
//! - Rule 1, when the sides are no more than the CPUs: every side its own CPU, the two sides of
//!   a unit in one socket (the socket with the most free CPUs; ties to the lower number), on
//!   separate physical cores before SMT siblings, and sharing the last-level cache where the
//!   socket has several.
//! - Rule 2, when the sides outnumber the CPUs: a unit's sides together on one CPU, each unit on
//!   the CPU with the fewest sides so far (then the fewest on its core, then the lower number),
//!   unless that CPU would then take more than an even spread (sides / CPUs, rounded up), or
//!   too few sides would be left to give every idle CPU one: then its two sides go to two
//!   CPUs, in one socket where one has room. The model ranks the busiest CPU and the idle CPUs
//!   before rule 2 in the same way (a flow is split rather than a CPU overloaded or left
//!   idle).
//! - Rule 3: a unit's sides go to two sockets only when no socket has two free CPUs left.
//!
//! Units of two sides are placed before units of one, each in flow and queue order. The load of
//! a CPU is the number of sides (NIC queues) it takes, as the model counts NICs. For one IRQ per
//! NIC, the greedy plan takes the model's exhaustive plan's busiest CPU and splits
//! (`the_greedy_plan_matches_the_exhaustive_one_where_both_run`, in `crates/cli/tests/planners.rs`:
//! the one crate that depends on both planners).
//!
//! IRQs that are not queues (virtio's config vector, a link interrupt), IRQs the kernel manages
//! (a read-only `smp_affinity`), NICs in no flow, and CPUs kept for isolation (`isolcpus=`,
//! `nohz_full=`) are left alone and listed.

use crate::affinity::{HostAffinity, HostCpu, Nic, NicIrq, QueueRole};
use crate::cpu_list::CpuList;
use irqlab_stats::cpus::cpumask;
pub use irqlab_stats::plan::{HostFlow, HostPlan, LeftAlone, LeftOutCpu, PlannedIrq, Side, Unit};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Why there is no plan. Each says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A flag names a NIC the host does not have (or one without a device).
    #[error("{flag}: this host has no NIC '{name}' with a device; its NICs: {known}")]
    NoSuchNic {
        flag: String,
        name: String,
        known: String,
    },
    /// A NIC in two flows: its queues can go with one only.
    #[error("{flag}: NIC '{name}' is in another flow too; a NIC's queues go with one flow")]
    NicInTwoFlows { flag: String, name: String },
    /// Every online CPU is kept free of device interrupts.
    #[error(
        "no CPU to place interrupts on: every online CPU is isolated or tickless (isolcpus=, \
         nohz_full=)"
    )]
    NoCpu,
}

/// The flows to plan: `--flow` and `--nic` (`flow`, and `nic` as flows of their own), or every
/// NIC with queue IRQs as its own; whether flows were given. Errors name the flag they come
/// from, as the user typed it.
pub fn flows_of(
    flow: &[HostFlow],
    nic: &[String],
    host: &HostAffinity,
) -> Result<(Vec<HostFlow>, bool), PlanError> {
    let known = || {
        let names: Vec<&str> = host.nics.iter().map(|n| n.name.as_str()).collect();
        if names.is_empty() {
            "none (interfaces without a device, such as lo, bridges and veth, have no IRQs)"
                .to_string()
        } else {
            names.join(", ")
        }
    };
    let mut flows: Vec<(String, HostFlow)> = flow
        .iter()
        .map(|f| (format!("--flow {}:{}", f.a, f.b), f.clone()))
        .collect();
    flows.extend(nic.iter().map(|n| {
        (
            format!("--nic {n}"),
            HostFlow {
                a: n.clone(),
                b: n.clone(),
            },
        )
    }));
    if flows.is_empty() {
        return Ok((
            host.nics
                .iter()
                .filter(|n| !queues(n).is_empty())
                .map(|n| HostFlow {
                    a: n.name.clone(),
                    b: n.name.clone(),
                })
                .collect(),
            false,
        ));
    }
    let mut seen = BTreeSet::new();
    for (flag, f) in &flows {
        for name in [&f.a, &f.b] {
            if !host.nics.iter().any(|n| n.name == *name) {
                return Err(PlanError::NoSuchNic {
                    flag: flag.clone(),
                    name: name.clone(),
                    known: known(),
                });
            }
        }
        let names: BTreeSet<&String> = [&f.a, &f.b].into_iter().collect();
        for name in names {
            if !seen.insert(name.clone()) {
                return Err(PlanError::NicInTwoFlows {
                    flag: flag.clone(),
                    name: name.clone(),
                });
            }
        }
    }
    Ok((flows.into_iter().map(|(_, f)| f).collect(), true))
}

/// A NIC's queues that can be moved: queue number -> its IRQs.
pub(crate) fn queues(nic: &Nic) -> BTreeMap<u32, Vec<u32>> {
    let mut q: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for i in &nic.irqs {
        if let Some(n) = i.role.queue() {
            if i.affinity.writable && i.affinity.mask.is_some() {
                q.entry(n).or_default().push(i.irq);
            }
        }
    }
    q
}

/// The planner's CPUs: each one's load (sides placed on it) and the indexes that find the CPU
/// each rule wants in O(log n), where scanning every CPU for each side, and every other CPU
/// for each one's core, made a plan quadratic in the CPU count (issue 37: 65,536 CPUs did not
/// finish in 120 s). Every choice is the one the scan made: the least of (load, sides on its
/// physical core, outside `near`'s last-level cache, CPU number) among the CPUs a rule allows
/// (`the_indexed_planner_places_as_the_scanning_one`).
struct Slots<'a> {
    cpus: Vec<&'a HostCpu>,
    load: Vec<usize>,
    /// Each slot's socket, as an index into `sockets` (ascending socket numbers).
    socket: Vec<usize>,
    sockets: Vec<u32>,
    /// Free (load 0) slots per socket, and the sockets ordered by that (most first, then the
    /// lower number).
    free: Vec<usize>,
    by_free: BTreeSet<(std::cmp::Reverse<usize>, u32, usize)>,
    /// Slots with load 0.
    idle: usize,
    /// Distinct core lists (`core_cpus`): a slot's core load is the load of the slots its
    /// list names, the same for every slot with that list.
    core: Vec<usize>,
    core_load: Vec<usize>,
    core_members: Vec<Vec<usize>>,
    /// Per slot, the core lists that name its CPU (whose load it adds to).
    cores_naming: Vec<Vec<usize>>,
    /// Distinct last-level caches: each slot's own (as `near`), their CPU lists, and per slot
    /// the caches whose list names its CPU.
    llc: Vec<Option<usize>>,
    llc_cpus: Vec<&'a CpuList>,
    llcs_naming: Vec<Vec<usize>>,
    /// Slots ordered by [`Key`]: all, per socket, per cache list, per (cache list, socket).
    all: BTreeSet<Key>,
    in_socket: Vec<BTreeSet<Key>>,
    in_llc: Vec<BTreeSet<Key>>,
    in_llc_socket: HashMap<(usize, usize), BTreeSet<Key>>,
}

// How many CPUs the planner has looked at (an entry of an index touched, or a CPU scanned), in
// this thread: the planner's work, for a bound on it that a test can check without a clock.
#[cfg(test)]
thread_local! {
    static LOOKED_AT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
fn looked_at(n: usize) {
    LOOKED_AT.with(|c| c.set(c.get() + n as u64));
}

#[cfg(not(test))]
fn looked_at(_: usize) {}

/// (load, core load, CPU number, slot): the order in which the rules take CPUs, short of
/// `near`'s cache.
type Key = (usize, usize, u32, usize);

/// Where a CPU is looked for.
#[derive(Clone, Copy)]
enum Scope {
    All,
    Socket(usize),
}

/// Ids for distinct CPU lists: one allocation is one list at once (the reader shares them);
/// lists equal in content but apart (a host built by hand) are found by content.
struct ListIds<'a> {
    by_address: HashMap<usize, usize>,
    by_content: HashMap<&'a [u32], usize>,
    lists: Vec<&'a CpuList>,
}

impl<'a> ListIds<'a> {
    fn new() -> Self {
        ListIds {
            by_address: HashMap::new(),
            by_content: HashMap::new(),
            lists: Vec::new(),
        }
    }

    fn id(&mut self, list: &'a CpuList) -> usize {
        if let Some(&id) = self.by_address.get(&list.address()) {
            return id;
        }
        let next = self.lists.len();
        let id = *self.by_content.entry(list.as_slice()).or_insert(next);
        if id == next {
            self.lists.push(list);
        }
        self.by_address.insert(list.address(), id);
        id
    }
}

impl<'a> Slots<'a> {
    fn new(cpus: Vec<&'a HostCpu>) -> Slots<'a> {
        let n = cpus.len();
        let slot_of: HashMap<u32, usize> =
            cpus.iter().enumerate().map(|(i, c)| (c.cpu, i)).collect();
        let sockets: Vec<u32> = cpus
            .iter()
            .map(|c| c.socket)
            .collect::<BTreeSet<u32>>()
            .into_iter()
            .collect();
        let socket: Vec<usize> = cpus
            .iter()
            .map(|c| sockets.binary_search(&c.socket).expect("a listed socket"))
            .collect();
        // Each distinct list, and the slots it names.
        let named = |lists: &[&CpuList]| -> Vec<Vec<usize>> {
            let mut naming = vec![Vec::new(); n];
            for (id, l) in lists.iter().enumerate() {
                for cpu in l.iter() {
                    if let Some(&s) = slot_of.get(cpu) {
                        naming[s].push(id);
                    }
                }
            }
            naming
        };
        let mut ids = ListIds::new();
        let core: Vec<usize> = cpus.iter().map(|c| ids.id(&c.core_cpus)).collect();
        let cores_naming = named(&ids.lists);
        let mut core_members = vec![Vec::new(); ids.lists.len()];
        for (s, &k) in core.iter().enumerate() {
            core_members[k].push(s);
        }
        let mut ids = ListIds::new();
        let llc: Vec<Option<usize>> = cpus
            .iter()
            .map(|c| c.last_level_cache().map(|l| ids.id(&l.shared_cpus)))
            .collect();
        let llcs_naming = named(&ids.lists);
        let mut free = vec![0; sockets.len()];
        for &k in &socket {
            free[k] += 1;
        }
        let mut slots = Slots {
            load: vec![0; n],
            by_free: free
                .iter()
                .enumerate()
                .map(|(k, &f)| (std::cmp::Reverse(f), sockets[k], k))
                .collect(),
            free,
            idle: n,
            socket,
            sockets,
            core_load: vec![0; core_members.len()],
            core,
            core_members,
            cores_naming,
            llc,
            in_llc: vec![BTreeSet::new(); ids.lists.len()],
            llc_cpus: ids.lists,
            llcs_naming,
            all: BTreeSet::new(),
            in_socket: Vec::new(),
            in_llc_socket: HashMap::new(),
            cpus,
        };
        slots.in_socket = vec![BTreeSet::new(); slots.sockets.len()];
        for s in 0..n {
            slots.index(s, true);
        }
        slots
    }

    fn len(&self) -> usize {
        self.cpus.len()
    }

    fn key(&self, s: usize) -> Key {
        (
            self.load[s],
            self.core_load[self.core[s]],
            self.cpus[s].cpu,
            s,
        )
    }

    /// Put slot `s` into its indexes (`insert`) or take it out, under its key now.
    fn index(&mut self, s: usize, insert: bool) {
        let key = self.key(s);
        let k = self.socket[s];
        let put = |set: &mut BTreeSet<Key>| {
            if insert {
                set.insert(key);
            } else {
                set.remove(&key);
            }
        };
        looked_at(2 + 2 * self.llcs_naming[s].len());
        put(&mut self.all);
        put(&mut self.in_socket[k]);
        for &l in &self.llcs_naming[s] {
            put(&mut self.in_llc[l]);
            put(self.in_llc_socket.entry((l, k)).or_default());
        }
    }

    /// Place `sides` more on slot `s`.
    fn add(&mut self, s: usize, sides: usize) {
        let mut moved: Vec<usize> = vec![s];
        for &c in &self.cores_naming[s] {
            moved.extend(&self.core_members[c]);
        }
        moved.sort_unstable();
        moved.dedup();
        for &m in &moved {
            self.index(m, false);
        }
        if self.load[s] == 0 && sides > 0 {
            let k = self.socket[s];
            self.by_free
                .remove(&(std::cmp::Reverse(self.free[k]), self.sockets[k], k));
            self.free[k] -= 1;
            self.by_free
                .insert((std::cmp::Reverse(self.free[k]), self.sockets[k], k));
            self.idle -= 1;
        }
        self.load[s] += sides;
        for &c in &self.cores_naming[s] {
            self.core_load[c] += sides;
        }
        for &m in &moved {
            self.index(m, true);
        }
    }

    /// The socket with the most free CPUs, if it has at least `need` (ties to the lower
    /// number).
    fn roomiest(&self, need: usize) -> Option<usize> {
        self.by_free
            .first()
            .filter(|(free, _, _)| free.0 >= need)
            .map(|&(_, _, k)| k)
    }

    /// The least of (load, core load, outside `near`'s last-level cache, CPU number) in
    /// `scope`. The least by (load, core load, CPU) there is it, unless a CPU in `near`'s cache
    /// ties it on load and core load and is not in the cache itself: then the least of those
    /// in the cache is (so the least of the two is the answer).
    fn least(&self, scope: Scope, near: Option<usize>) -> Option<usize> {
        looked_at(2);
        let set = match scope {
            Scope::All => &self.all,
            Scope::Socket(k) => &self.in_socket[k],
        };
        let &(load, core, cpu, b) = set.first()?;
        let Some(l) = near.and_then(|f| self.llc[f]) else {
            return Some(b);
        };
        let far = !self.llc_cpus[l].contains(cpu);
        let inside = match scope {
            Scope::All => self.in_llc[l].first(),
            Scope::Socket(k) => self.in_llc_socket.get(&(l, k)).and_then(|s| s.first()),
        };
        Some(match inside {
            Some(&(al, ac, acpu, a)) if (al, ac, false, acpu) < (load, core, far, cpu) => a,
            _ => b,
        })
    }
}

/// Place the flows' queues on the host's CPUs (module docs).
pub fn plan(
    host: &HostAffinity,
    flows: Vec<HostFlow>,
    flows_given: bool,
) -> Result<HostPlan, PlanError> {
    let mut cpus_left_out = Vec::new();
    let mut planned_cpus: Vec<&HostCpu> = Vec::new();
    let isolated: BTreeSet<u32> = host.isolated.iter().copied().collect();
    let nohz_full: BTreeSet<u32> = host.nohz_full.iter().copied().collect();
    for c in &host.cpus {
        let left_out = |why: &str| LeftOutCpu {
            cpu: c.cpu,
            why: why.to_string(),
        };
        if isolated.contains(&c.cpu) {
            cpus_left_out.push(left_out("isolated (isolcpus=)"));
        } else if nohz_full.contains(&c.cpu) {
            cpus_left_out.push(left_out("tickless (nohz_full=)"));
        } else {
            planned_cpus.push(c);
        }
    }
    if planned_cpus.is_empty() {
        return Err(PlanError::NoCpu);
    }
    let mut slots = Slots::new(planned_cpus);
    // The first NIC of a name, as a scan finds it.
    let mut nics: HashMap<&str, &Nic> = HashMap::new();
    for n in &host.nics {
        nics.entry(n.name.as_str()).or_insert(n);
    }
    let nic = |name: &str| nics.get(name).copied();
    // Units, two-sided first, each in flow and queue order.
    let mut units: Vec<Unit> = Vec::new();
    for (fi, f) in flows.iter().enumerate() {
        let side_list = |name: &str| -> Vec<Side> {
            nic(name)
                .map(queues)
                .unwrap_or_default()
                .into_iter()
                .map(|(queue, irqs)| Side {
                    nic: name.to_string(),
                    queue,
                    irqs,
                    cpu: 0,
                })
                .collect()
        };
        let qa = side_list(&f.a);
        let qb = if f.a == f.b {
            Vec::new()
        } else {
            side_list(&f.b)
        };
        for i in 0..qa.len().max(qb.len()) {
            let sides: Vec<Side> = [qa.get(i), qb.get(i)]
                .into_iter()
                .flatten()
                .cloned()
                .collect();
            units.push(Unit {
                flow: fi,
                sides,
                placement: String::new(),
            });
        }
    }
    units.sort_by_key(|u| std::cmp::Reverse(u.sides.len()));
    let sides: usize = units.iter().map(|u| u.sides.len()).sum();
    let rule: u8 = if sides <= slots.len() { 1 } else { 2 };
    let even = sides.div_ceil(slots.len());
    let mut split_socket = 0;
    let mut left = sides;
    for u in &mut units {
        let placed = if rule == 1 {
            place_rule1(&mut slots, u.sides.len())
        } else {
            place_rule2(&mut slots, u.sides.len(), even, left)
        };
        left -= u.sides.len();
        for (side, &i) in u.sides.iter_mut().zip(&placed) {
            side.cpu = slots.cpus[i].cpu;
        }
        u.placement = placement(u, rule, &placed, &slots.cpus);
        if u.placement.starts_with("two sockets") {
            split_socket += 1;
        }
    }
    // Back to flow and queue order for printing.
    units.sort_by_key(|u| (u.flow, u.sides.first().map_or(0, |s| s.queue)));

    let mut irqs: Vec<PlannedIrq> = Vec::new();
    let mut planned: HashSet<u32> = HashSet::new();
    let mut left_alone = Vec::new();
    let in_flows: BTreeSet<&str> = flows
        .iter()
        .flat_map(|f| [f.a.as_str(), f.b.as_str()])
        .collect();
    // Each NIC's IRQs by number (the first of a number, as a scan finds it).
    let mut nic_irqs: HashMap<&str, HashMap<u32, &NicIrq>> = HashMap::new();
    for u in &units {
        for s in &u.sides {
            let by_number = nic_irqs.entry(s.nic.as_str()).or_insert_with(|| {
                let mut m = HashMap::new();
                for i in &nic(&s.nic).expect("a flow's NIC").irqs {
                    m.entry(i.irq).or_insert(i);
                }
                m
            });
            for &irq in &s.irqs {
                let i = by_number.get(&irq).expect("the NIC's IRQ");
                if !planned.insert(irq) {
                    // A line shared by two NICs' queues interrupts one CPU: the first placed.
                    continue;
                }
                irqs.push(PlannedIrq {
                    irq,
                    nic: s.nic.clone(),
                    name: i.name.clone(),
                    role: i.role,
                    cpu: s.cpu,
                    mask: cpumask(s.cpu as usize),
                    now: i.affinity.mask.clone(),
                });
            }
        }
    }
    for n in &host.nics {
        for i in &n.irqs {
            if planned.contains(&i.irq) {
                continue;
            }
            let why = if !in_flows.contains(n.name.as_str()) {
                if flows_given {
                    format!("{} is in no flow", n.name)
                } else {
                    format!("{} has no queue IRQ that can be moved", n.name)
                }
            } else if i.role == QueueRole::Other {
                "not a queue (configuration, link or other events)".to_string()
            } else if i.affinity.mask.is_none() {
                "its smp_affinity cannot be read".to_string()
            } else {
                "managed by the kernel (read-only smp_affinity): the driver spreads these \
                 queues itself"
                    .to_string()
            };
            left_alone.push(LeftAlone {
                irq: i.irq,
                nic: n.name.clone(),
                name: i.name.clone(),
                why,
            });
        }
    }
    Ok(HostPlan {
        cpus: slots.cpus.iter().map(|c| c.cpu).collect(),
        cpus_left_out,
        flows,
        flows_given,
        units,
        irqs,
        left_alone,
        rule,
        busiest: slots.load.iter().copied().max().unwrap_or(0),
        even,
        split_socket,
    })
}

/// Rule 1: `n` free CPUs (n is 1 or 2), in the socket with the most free CPUs that has `n`;
/// two sockets only when none has. In that socket, the least loaded CPU, then the fewest sides
/// on its physical core, then (the second) sharing the first's last-level cache, then the
/// lowest number.
fn place_rule1(slots: &mut Slots, n: usize) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    let socket = slots.roomiest(n).or_else(|| slots.roomiest(1));
    for k in 0..n {
        // The second side stays in the first's socket if it can (rule 1), else any (rule 3).
        let socket = if k == 0 {
            socket
        } else {
            let first = slots.socket[out[0]];
            (slots.free[first] > 0)
                .then_some(first)
                .or_else(|| slots.roomiest(1))
        };
        let near = out.first().copied();
        let i = socket
            .and_then(|k| slots.least(Scope::Socket(k), near))
            .or_else(|| slots.least(Scope::All, near))
            .expect("at least one CPU");
        slots.add(i, 1);
        out.push(i);
    }
    out
}

/// Rule 2: a unit of `n` sides on the least loaded CPU, whole if that CPU stays within an even
/// spread (`even` sides per CPU at most) and the sides still to place after it (`left` counts
/// this unit's) can give every CPU left idle one; else each side on its own, the second in the
/// first's socket where a CPU there has room (rule 3). The model's planner ranks the busiest
/// CPU and the idle CPUs before rule 2 too: a flow is split rather than a CPU loaded beyond an
/// even spread or left idle. Each side goes where the load is below `even`, and there always is
/// such a CPU while sides remain (they are at most `even` times the CPUs), so no CPU ends above
/// `even`.
fn place_rule2(slots: &mut Slots, n: usize, even: usize, left: usize) -> Vec<usize> {
    let i = slots.least(Scope::All, None).expect("at least one CPU");
    let idle_after = slots.idle - usize::from(slots.load[i] == 0);
    if slots.load[i] + n <= even && left - n >= idle_after {
        slots.add(i, n);
        return vec![i; n];
    }
    let mut out: Vec<usize> = Vec::new();
    for _ in 0..n {
        // The least loaded CPU (its load below `even` first, as the least load is); for the
        // second side, one of the first's socket below `even`, else one elsewhere below it,
        // else the first's socket's least loaded.
        let i = match out.first() {
            None => slots.least(Scope::All, None),
            Some(&first) => {
                let own = slots
                    .least(Scope::Socket(slots.socket[first]), Some(first))
                    .expect("the first side's socket has a CPU");
                if slots.load[own] < even {
                    Some(own)
                } else {
                    slots
                        .least(Scope::All, Some(first))
                        .filter(|&o| slots.load[o] < even)
                        .or(Some(own))
                }
            }
        }
        .expect("at least one CPU");
        slots.add(i, 1);
        out.push(i);
    }
    out
}

/// How a unit was placed, in words.
fn placement(u: &Unit, rule: u8, placed: &[usize], slots: &[&HostCpu]) -> String {
    let cpus: Vec<&HostCpu> = placed.iter().map(|&i| slots[i]).collect();
    match (u.sides.len(), rule) {
        (1, 1) => "a CPU of its own (rule 1)".into(),
        (1, _) => "the least loaded CPU (rule 2: more NIC queues than CPUs)".into(),
        (_, 2) if placed[0] == placed[1] => "one CPU (rule 2: more NIC queues than CPUs)".into(),
        (_, 2) if cpus[0].socket != cpus[1].socket => {
            "two sockets (rule 3: kept together, or in one socket, a CPU would take more than \
             an even spread or stay idle)"
                .into()
        }
        (_, 2) => "two CPUs of one socket (rule 2 not met: kept together, a CPU would take \
                   more than an even spread or stay idle)"
            .into(),
        _ if cpus[0].socket != cpus[1].socket => {
            "two sockets (rule 3: no socket had two free CPUs left)".into()
        }
        _ => {
            let shared = [2, 3, 4]
                .iter()
                .filter_map(|&l| cpus[0].unified(l))
                .find(|c| c.shared_cpus.contains(cpus[1].cpu))
                .map(|c| format!(", {} shared", c.label()))
                .unwrap_or_default();
            format!("a CPU each in one socket{shared} (rule 1)")
        }
    }
}

#[cfg(test)]
mod reference;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::affinity::{Cache, IrqMask, IrqSource};

    /// `sockets` x `cores` CPUs, numbered socket by socket, an L3 per socket.
    fn cpus(sockets: u32, cores: u32) -> Vec<HostCpu> {
        (0..sockets * cores)
            .map(|cpu| {
                let socket = cpu / cores;
                HostCpu {
                    cpu,
                    socket,
                    core_id: cpu % cores,
                    core_cpus: CpuList::new([cpu]),
                    caches: vec![Cache {
                        level: 3,
                        kind: "Unified".into(),
                        size: "32768K".into(),
                        shared_cpus: (socket * cores..(socket + 1) * cores).collect(),
                    }],
                }
            })
            .collect()
    }

    fn irq(irq: u32, name: &str, role: QueueRole) -> NicIrq {
        NicIrq {
            irq,
            name: name.into(),
            role,
            affinity: IrqMask {
                mask: Some("f".into()),
                cpus: vec![0, 1, 2, 3],
                effective_cpus: None,
                writable: true,
            },
        }
    }

    /// A NIC with `queues` TxRx IRQs from `first`.
    fn nic(name: &str, first: u32, queues: u32) -> Nic {
        Nic {
            name: name.into(),
            device: "0000:00:00.0".into(),
            virtio: None,
            driver: Some("ixgbe".into()),
            source: IrqSource::MsiIrqs,
            irqs: (0..queues)
                .map(|q| irq(first + q, &format!("{name}-TxRx-{q}"), QueueRole::RxTx(q)))
                .collect(),
        }
    }

    fn host(cpus: Vec<HostCpu>, nics: Vec<Nic>) -> HostAffinity {
        HostAffinity {
            root: "/".into(),
            cpus,
            isolated: vec![],
            nohz_full: vec![],
            nics,
            irqbalance_pid: None,
        }
    }

    fn flows(list: &[&str]) -> Vec<HostFlow> {
        list.iter()
            .map(|f| {
                let (a, b) = f.split_once(':').unwrap_or((f, f));
                HostFlow {
                    a: a.into(),
                    b: b.into(),
                }
            })
            .collect()
    }

    fn cpu_of(p: &HostPlan, irq: u32) -> u32 {
        p.irqs.iter().find(|i| i.irq == irq).unwrap().cpu
    }

    /// Two 4-queue NICs forwarding to each other on 2 sockets x 2 cores: 8 queues on 4 CPUs, so
    /// rule 2: queue i of both on one CPU, the four pairs on four CPUs.
    #[test]
    fn queue_i_of_a_flows_two_nics_shares_a_cpu_when_queues_outnumber_cpus() {
        let h = host(cpus(2, 2), vec![nic("eth0", 40, 4), nic("eth1", 50, 4)]);
        let p = plan(&h, flows(&["eth0:eth1"]), true).unwrap();
        assert_eq!(p.rule, 2);
        for q in 0..4 {
            assert_eq!(cpu_of(&p, 40 + q), cpu_of(&p, 50 + q), "{p:#?}");
        }
        let used: BTreeSet<u32> = p.irqs.iter().map(|i| i.cpu).collect();
        assert_eq!(used.len(), 4);
        assert_eq!((p.busiest, p.even), (2, 2));
    }

    /// Two 2-queue NICs on 2 sockets x 2 cores: 4 queues, 4 CPUs, rule 1: each its own CPU,
    /// queue i's pair in one socket (sharing its L3), the pairs in different sockets.
    #[test]
    fn rule_1_gives_each_queue_a_cpu_and_keeps_a_pair_in_a_socket() {
        let h = host(cpus(2, 2), vec![nic("eth0", 40, 2), nic("eth1", 50, 2)]);
        let p = plan(&h, flows(&["eth0:eth1"]), true).unwrap();
        assert_eq!(p.rule, 1);
        let socket = |irq| cpu_of(&p, irq) / 2;
        assert_eq!(socket(40), socket(50));
        assert_eq!(socket(41), socket(51));
        assert_ne!(socket(40), socket(41));
        let used: BTreeSet<u32> = p.irqs.iter().map(|i| i.cpu).collect();
        assert_eq!(used.len(), 4, "{p:#?}");
        assert!(p.units[0].placement.contains("L3 shared"), "{p:#?}");
        assert_eq!(p.split_socket, 0);
    }

    /// Rule 3: a pair goes to two sockets only when no socket has two free CPUs. Pairs are
    /// placed before single queues, so a single queue never takes the room a pair needs.
    #[test]
    fn a_pair_goes_to_two_sockets_only_when_no_socket_has_room() {
        // Socket 0: cpu0 cpu1; socket 1: cpu2. Were eth0 (alone) placed first it would take
        // cpu0 (most free CPUs: a tie, the lower socket), and the pair would have to split.
        let mut c = cpus(2, 2);
        c.remove(3);
        let three = vec![nic("eth0", 40, 1), nic("eth1", 41, 1), nic("eth2", 42, 1)];
        let p = plan(&host(c, three), flows(&["eth0", "eth1:eth2"]), true).unwrap();
        assert_eq!(p.rule, 1);
        assert_eq!(p.split_socket, 0, "{p:#?}");
        assert_eq!((cpu_of(&p, 41), cpu_of(&p, 42), cpu_of(&p, 40)), (0, 1, 2));
        // One CPU per socket: the pair cannot stay in one.
        let p = plan(
            &host(cpus(2, 1), vec![nic("eth1", 41, 1), nic("eth2", 42, 1)]),
            flows(&["eth1:eth2"]),
            true,
        )
        .unwrap();
        assert_eq!(p.split_socket, 1);
        assert!(p.units[0].placement.contains("rule 3"), "{p:#?}");
    }

    /// Rx and tx IRQs of one queue go together; virtio's config vector and managed queues are
    /// left alone, and say why.
    #[test]
    fn a_queues_rx_and_tx_go_together_and_the_rest_is_left_alone() {
        let mut eth0 = nic("eth0", 0, 0);
        eth0.irqs = vec![
            irq(37, "virtio2-config", QueueRole::Other),
            irq(38, "virtio2-input.0", QueueRole::Rx(0)),
            irq(39, "virtio2-output.0", QueueRole::Tx(0)),
            irq(40, "virtio2-input.1", QueueRole::Rx(1)),
        ];
        eth0.irqs[3].affinity.writable = false;
        let h = host(cpus(1, 2), vec![eth0]);
        let (f, _) = flows_of(&[], &[], &h).unwrap();
        let p = plan(&h, f, false).unwrap();
        assert_eq!(cpu_of(&p, 38), cpu_of(&p, 39));
        assert_eq!(p.irqs.len(), 2);
        let why = |irq| {
            p.left_alone
                .iter()
                .find(|l| l.irq == irq)
                .map(|l| l.why.clone())
                .unwrap()
        };
        assert!(why(37).contains("not a queue"));
        assert!(why(40).contains("managed by the kernel"));
    }

    #[test]
    fn flows_name_the_nics_there_are() {
        let h = host(cpus(1, 2), vec![nic("eth0", 40, 1), nic("eth1", 41, 1)]);
        let f = flows(&["eth0:eth9"]).remove(0);
        let e = flows_of(&[f], &[], &h).unwrap_err().to_string();
        assert!(
            e.contains("--flow eth0:eth9") && e.contains("'eth9'") && e.contains("eth0, eth1"),
            "{e}"
        );
        let f = flows(&["eth0:eth1"]).remove(0);
        let e = flows_of(&[f], &["eth1".into()], &h)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--nic eth1") && e.contains("another flow"),
            "{e}"
        );
    }

    #[test]
    fn isolated_cpus_are_left_out() {
        let mut h = host(cpus(1, 4), vec![nic("eth0", 40, 4)]);
        h.isolated = vec![2, 3];
        let (f, given) = flows_of(&[], &[], &h).unwrap();
        let p = plan(&h, f, given).unwrap();
        assert!(p.irqs.iter().all(|i| i.cpu < 2), "{p:#?}");
        assert_eq!(p.cpus_left_out.len(), 2);
    }

    /// A host drawn from small parameters: per CPU its socket, core, last-level cache (per
    /// socket, per pair of cores, none, or a list that disagrees with its neighbours') and
    /// whether it is isolated; per NIC its queues, how its IRQs are named, and whether its
    /// first queue shares a line with the NIC before.
    fn drawn_host(cpus: &[(u32, u32, u8, bool)], nics: &[(u32, u8, bool)]) -> HostAffinity {
        let n = cpus.len() as u32;
        let same = |f: &dyn Fn(u32) -> bool| -> CpuList { (0..n).filter(|&o| f(o)).collect() };
        let host_cpus: Vec<HostCpu> = cpus
            .iter()
            .enumerate()
            .map(|(i, &(socket, core, llc, _))| {
                let cpu = i as u32;
                let of = |o: u32| cpus[o as usize];
                let shared = match llc {
                    0 => Some(same(&|o| of(o).0 == socket)),
                    1 => Some(same(&|o| of(o).0 == socket && of(o).1 / 2 == core / 2)),
                    2 => None,
                    _ => Some(CpuList::new([cpu, cpu + 1, cpu + 3])),
                };
                HostCpu {
                    cpu,
                    socket,
                    core_id: core,
                    core_cpus: same(&|o| of(o).0 == socket && of(o).1 == core),
                    caches: shared
                        .into_iter()
                        .map(|shared_cpus| Cache {
                            level: 3,
                            kind: "Unified".into(),
                            size: "8M".into(),
                            shared_cpus,
                        })
                        .collect(),
                }
            })
            .collect();
        let mut next = 100;
        let mut previous_first: Option<u32> = None;
        let nics = nics
            .iter()
            .enumerate()
            .map(|(k, &(queues, naming, share))| {
                let name = format!("eth{k}");
                let mut irqs = Vec::new();
                for q in 0..queues {
                    let roles: &[QueueRole] = match naming {
                        0 => &[QueueRole::RxTx(q)],
                        _ => &[QueueRole::Rx(q), QueueRole::Tx(q)],
                    };
                    for &role in roles {
                        let number = match previous_first {
                            Some(p) if share && q == 0 && irqs.is_empty() => p,
                            _ => {
                                next += 1;
                                next
                            }
                        };
                        let mut i = irq(number, &format!("{name}-{}", role.label()), role);
                        // The third naming: a link IRQ, and queue 1 managed by the kernel.
                        i.affinity.writable = !(naming == 2 && q == 1);
                        irqs.push(i);
                    }
                }
                if naming == 2 {
                    next += 1;
                    irqs.push(irq(next, &name, QueueRole::Other));
                }
                previous_first = irqs.first().map(|i| i.irq);
                let mut n = nic(&name, 0, 0);
                n.irqs = irqs;
                n
            })
            .collect();
        let mut h = host(host_cpus, nics);
        h.isolated = cpus
            .iter()
            .enumerate()
            .filter(|(_, c)| c.3)
            .map(|(i, _)| i as u32)
            .collect();
        h
    }

    /// The planner's work grows as (CPUs + queues) x log CPUs: for 128 queues on 512 CPUs it
    /// stays below 64 x 640 x 9 = 368,640 CPUs looked at (it looks at 3,328: four index
    /// entries per CPU, and about ten per queue). The scanning planner it replaced looked at
    /// every CPU for each CPU it weighed (its core's load), 512 x 512 per queue: 34.6M in all,
    /// 94 times the bound, as the same count shows here.
    #[test]
    fn the_planners_work_is_n_log_n_in_the_cpus() {
        let h = host(
            cpus(8, 64),
            vec![nic("eth0", 100, 64), nic("eth1", 200, 64)],
        );
        let (f, given) = flows_of(&[], &[], &h).unwrap();
        let work = |plan: &dyn Fn() -> HostPlan| {
            LOOKED_AT.with(|c| c.set(0));
            let p = plan();
            (LOOKED_AT.with(|c| c.get()), p)
        };
        let bound = 64 * (512 + 128) * 9;
        let (fast, p) = work(&|| plan(&h, f.clone(), given).unwrap());
        assert_eq!(p.irqs.len(), 128);
        assert!(
            fast < bound,
            "the planner looked at {fast} CPUs, above {bound}"
        );
        let (slow, q) = work(&|| reference::plan(&h, f.clone(), given).unwrap());
        assert_eq!(p, q);
        assert!(slow > 50 * bound, "the scanning planner looked at {slow}");
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// The indexed planner places every queue where the scanning one did (the planner
        /// before issue 37's item 7, kept in `reference`), on hosts of odd shapes too: sockets
        /// out of order, caches that disagree, isolated CPUs, shared lines, rule 1 and rule 2.
        #[test]
        fn the_indexed_planner_places_as_the_scanning_one(
            cpus in proptest::collection::vec(
                (0u32..4, 0u32..6, 0u8..4, any::<u8>().prop_map(|b| b < 24)),
                1..40,
            ),
            nics in proptest::collection::vec((1u32..12, 0u8..3, any::<bool>()), 1..5),
            pairing in 0u8..4,
        ) {
            let h = drawn_host(&cpus, &nics);
            let names: Vec<String> = h.nics.iter().map(|n| n.name.clone()).collect();
            let (f, given) = match pairing {
                0 => flows_of(&[], &[], &h).unwrap(),
                _ => {
                    // Pairs of neighbours from the `pairing`-th NIC on, the ones before alone.
                    let start = (pairing as usize - 1).min(names.len());
                    let mut list: Vec<HostFlow> = names[..start]
                        .iter()
                        .map(|n| HostFlow { a: n.clone(), b: n.clone() })
                        .collect();
                    for pair in names[start..].chunks(2) {
                        list.push(HostFlow {
                            a: pair[0].clone(),
                            b: pair[pair.len() - 1].clone(),
                        });
                    }
                    (list, true)
                }
            };
            let fast = plan(&h, f.clone(), given).map_err(|e| e.to_string());
            let slow = reference::plan(&h, f, given).map_err(|e| e.to_string());
            prop_assert_eq!(fast, slow);
        }
    }
}
