//! The host planner as it was before its indexes (issue 37, item 7): every choice a scan of
//! every CPU, and each CPU's core load a scan of every other. Quadratic in the CPU count, and
//! kept only as the reference the indexed planner must agree with, placement for placement
//! (`the_indexed_planner_places_as_the_scanning_one`).

use super::PlanError;
use super::{
    cpumask, queues, HostFlow, HostPlan, LeftAlone, LeftOutCpu, PlannedIrq, QueueRole, Side, Unit,
};
use crate::affinity::{HostAffinity, HostCpu};
use std::collections::BTreeSet;

/// A CPU as the planner sees it.
struct Slot<'a> {
    cpu: &'a HostCpu,
    /// Sides placed on it.
    load: usize,
}

/// Place the flows' queues on the host's CPUs (module docs).
pub fn plan(
    host: &HostAffinity,
    flows: Vec<HostFlow>,
    flows_given: bool,
) -> Result<HostPlan, PlanError> {
    let mut cpus_left_out = Vec::new();
    let mut slots: Vec<Slot> = Vec::new();
    for c in &host.cpus {
        let left_out = |why: &str| LeftOutCpu {
            cpu: c.cpu,
            why: why.to_string(),
        };
        if host.isolated.contains(&c.cpu) {
            cpus_left_out.push(left_out("isolated (isolcpus=)"));
        } else if host.nohz_full.contains(&c.cpu) {
            cpus_left_out.push(left_out("tickless (nohz_full=)"));
        } else {
            slots.push(Slot { cpu: c, load: 0 });
        }
    }
    if slots.is_empty() {
        return Err(PlanError::NoCpu);
    }
    let nic = |name: &str| host.nics.iter().find(|n| n.name == name);
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
            side.cpu = slots[i].cpu.cpu;
        }
        u.placement = placement(u, rule, &placed, &slots);
        if u.placement.starts_with("two sockets") {
            split_socket += 1;
        }
    }
    // Back to flow and queue order for printing.
    units.sort_by_key(|u| (u.flow, u.sides.first().map_or(0, |s| s.queue)));

    let mut irqs: Vec<PlannedIrq> = Vec::new();
    let mut left_alone = Vec::new();
    let in_flows: BTreeSet<&str> = flows
        .iter()
        .flat_map(|f| [f.a.as_str(), f.b.as_str()])
        .collect();
    for u in &units {
        for s in &u.sides {
            for &irq in &s.irqs {
                let n = nic(&s.nic).expect("a flow's NIC");
                let i = n.irqs.iter().find(|i| i.irq == irq).expect("the NIC's IRQ");
                if irqs.iter().any(|p| p.irq == irq) {
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
            if irqs.iter().any(|p| p.irq == i.irq) {
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
        cpus: slots.iter().map(|s| s.cpu.cpu).collect(),
        cpus_left_out,
        flows,
        flows_given,
        units,
        irqs,
        left_alone,
        rule,
        busiest: slots.iter().map(|s| s.load).max().unwrap_or(0),
        even,
        split_socket,
    })
}

/// The slot with the least `key`, then the fewest sides on its physical core, then `near`'s
/// last-level cache, then the lowest CPU number.
fn pick(
    slots: &[Slot],
    key: impl Fn(&Slot) -> usize,
    allowed: impl Fn(&Slot) -> usize,
    near: Option<&HostCpu>,
) -> usize {
    let core_load = |s: &Slot| -> usize {
        super::looked_at(slots.len());
        slots
            .iter()
            .filter(|o| s.cpu.core_cpus.contains(o.cpu.cpu))
            .map(|o| o.load)
            .sum()
    };
    let far = |s: &Slot| -> bool {
        near.is_some_and(|n| {
            n.last_level_cache()
                .is_some_and(|c| !c.shared_cpus.contains(s.cpu.cpu))
        })
    };
    (0..slots.len())
        .min_by_key(|&i| {
            let s = &slots[i];
            (allowed(s), key(s), core_load(s), far(s), s.cpu.cpu)
        })
        .expect("at least one CPU")
}

/// Rule 1: `n` free CPUs (n is 1 or 2), in the socket with the most free CPUs that has `n`;
/// two sockets only when none has.
fn place_rule1(slots: &mut [Slot], n: usize) -> Vec<usize> {
    let free_in = |slots: &[Slot], socket: u32| {
        super::looked_at(slots.len());
        slots
            .iter()
            .filter(|s| s.load == 0 && s.cpu.socket == socket)
            .count()
    };
    let sockets: BTreeSet<u32> = slots.iter().map(|s| s.cpu.socket).collect();
    // The most free CPUs first, then the lower socket.
    let best = |slots: &[Slot], need: usize| {
        sockets
            .iter()
            .copied()
            .filter(|&s| free_in(slots, s) >= need)
            .min_by_key(|&s| (std::cmp::Reverse(free_in(slots, s)), s))
    };
    let mut out: Vec<usize> = Vec::new();
    let socket = best(slots, n).or_else(|| best(slots, 1));
    for k in 0..n {
        // The second side stays in the first's socket if it can (rule 1), else any (rule 3).
        let socket = if k == 0 {
            socket
        } else {
            let first = slots[out[0]].cpu.socket;
            (free_in(slots, first) > 0)
                .then_some(first)
                .or_else(|| best(slots, 1))
        };
        let near = out.first().map(|&i| slots[i].cpu);
        let i = pick(
            slots,
            |s| s.load,
            |s| usize::from(Some(s.cpu.socket) != socket),
            near,
        );
        slots[i].load += 1;
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
fn place_rule2(slots: &mut [Slot], n: usize, even: usize, left: usize) -> Vec<usize> {
    let i = pick(slots, |s| s.load, |_| 0, None);
    let idle_after = slots.iter().filter(|s| s.load == 0).count() - usize::from(slots[i].load == 0);
    if slots[i].load + n <= even && left - n >= idle_after {
        slots[i].load += n;
        return vec![i; n];
    }
    let mut out: Vec<usize> = Vec::new();
    for _ in 0..n {
        let socket = out.first().map(|&f| slots[f].cpu.socket);
        let near = out.first().map(|&f| slots[f].cpu);
        let i = pick(
            slots,
            |s| s.load,
            |s| {
                usize::from(s.load >= even) * 2
                    + usize::from(socket.is_some_and(|k| k != s.cpu.socket))
            },
            near,
        );
        slots[i].load += 1;
        out.push(i);
    }
    out
}

/// How a unit was placed, in words.
fn placement(u: &Unit, rule: u8, placed: &[usize], slots: &[Slot]) -> String {
    let cpus: Vec<&HostCpu> = placed.iter().map(|&i| slots[i].cpu).collect();
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
