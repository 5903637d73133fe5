//! Static IRQ affinity for NIC flows by seed 001's three rules, on a model's IRQ table:
//! 1. "Each NIC would have its HW interrupt bound to a different CPU core. The transmitting and
//!    receiving NICs of a given flow would be assigned to a pair of cores in the same CPU
//!    socket."
//! 2. "When the number of NICs exceeds the number of CPU cores, then assign the IRQs of the
//!    transmitting and receiving NICs of a given flow to the same CPU core, while distributing
//!    different flows among available cores."
//! 3. "The transmitting and receiving sides of a flow should be allocated to cores in different
//!    CPU sockets only when (1) and (2) cannot be satisfied completely."
//!
//! Affinity is per IRQ: every function on a shared line interrupts the same core (Linux 2.4
//! `set_ioapic_affinity` writes one destination into the line's pin; research-001-003 A3), so
//! the unit placed is an IRQ with the flows' NICs on it. Every placement of the flows' IRQs on
//! the cores is tried (cores^IRQs; at most `MAX_PLACEMENTS`), and the best by, in order:
//! - the fewest flow NICs on the busiest core (the rules' aim, "distributing them evenly among
//!   the available cores"; a NIC of a flow carries one direction's packets, so NICs are the
//!   load). This comes before rule 2: where shared lines make the two conflict (seed 001's
//!   unswizzled eight ports), a flow is split rather than a core overloaded, and the plan says
//!   which flows rule 2 could not keep together;
//! - the fewest idle cores (rule 2's "distributing different flows among available cores"
//!   and the rules' aim: with three flows on four cores, two kept together and one split over
//!   the last two, not three together and a core idle; seed 001's forwarding model gives the
//!   first 2.75 Mpps against 2.12);
//! - when the NICs outnumber the cores, the fewest flows split over two cores (rule 2);
//! - the most even spread (the smallest sum of squared loads: rule 1's "each NIC ... a different
//!   CPU core" where shared lines put some NICs together);
//! - the fewest flows split over two sockets (rules 1 and 3);
//! - the first in CPU order (a deterministic tie-break).

use std::collections::BTreeMap;

/// Placements tried at most; a larger problem is refused (use fewer IRQs or cores).
pub const MAX_PLACEMENTS: u64 = 1 << 22;

// The plan's types are the result model's, which the renderers read (`irqlab_stats::plan`).
pub use irqlab_stats::plan::{AffinityPlan, Cpu, Flow};

/// What goes wrong in planning.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum AffinityError {
    #[error(
        "flow {flow}: no interface '{nic}' signals an interrupt here; the interfaces: {known}"
    )]
    UnknownNic {
        flow: String,
        nic: String,
        known: String,
    },
    #[error("interface '{0}' is in two flows: a NIC forwards to one other NIC here")]
    NicTwice(String),
    #[error("no flows: give at least one (--flow eth2:eth4)")]
    NoFlows,
    #[error("no CPUs to place interrupts on")]
    NoCpus,
    #[error(
        "{irqs} IRQs on {cpus} CPUs are {placements} placements, more than the {max} tried: \
         plan fewer flows at once"
    )]
    TooMany {
        irqs: usize,
        cpus: usize,
        placements: String,
        max: u64,
    },
}

/// A candidate's score, compared lexicographically (the module doc's criteria in order).
type Score = (usize, usize, usize, usize, usize);

/// Each interface's IRQ, from an IRQ table (IRQ -> the interfaces on it).
pub fn irq_map(table: &BTreeMap<u8, Vec<String>>) -> BTreeMap<String, u32> {
    table
        .iter()
        .flat_map(|(&irq, names)| names.iter().map(move |n| (n.clone(), u32::from(irq))))
        .collect()
}

/// Place the flows' IRQs on `cpus` by the rules (module doc). `irq_of` gives each interface's
/// IRQ.
pub fn plan(
    irq_of: &BTreeMap<String, u32>,
    flows: &[Flow],
    cpus: &[Cpu],
) -> Result<AffinityPlan, AffinityError> {
    if flows.is_empty() {
        return Err(AffinityError::NoFlows);
    }
    if cpus.is_empty() {
        return Err(AffinityError::NoCpus);
    }
    let mut seen = std::collections::BTreeSet::new();
    for f in flows {
        for nic in [&f.a, &f.b] {
            if !irq_of.contains_key(nic) {
                return Err(AffinityError::UnknownNic {
                    flow: format!("{}:{}", f.a, f.b),
                    nic: nic.clone(),
                    known: irq_of.keys().cloned().collect::<Vec<_>>().join(", "),
                });
            }
            if !seen.insert(nic.clone()) {
                return Err(AffinityError::NicTwice(nic.clone()));
            }
        }
    }
    let irqs: Vec<u32> = {
        let mut v: Vec<u32> = seen.iter().map(|n| irq_of[n]).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let placements = (cpus.len() as u64).checked_pow(irqs.len() as u32);
    if placements.is_none_or(|p| p > MAX_PLACEMENTS) {
        return Err(AffinityError::TooMany {
            irqs: irqs.len(),
            cpus: cpus.len(),
            placements: placements.map_or("more than 2^64".into(), |p| p.to_string()),
            max: MAX_PLACEMENTS,
        });
    }
    let nics = seen.len();
    let even = nics.div_ceil(cpus.len());
    let rule2 = nics > cpus.len();
    let mut best: Option<(Score, Vec<usize>)> = None;
    let mut assign = vec![0usize; irqs.len()];
    for n in 0..placements.expect("checked") {
        let mut k = n;
        for slot in assign.iter_mut().rev() {
            *slot = (k % cpus.len() as u64) as usize;
            k /= cpus.len() as u64;
        }
        let e = evaluate(irq_of, flows, cpus, &irqs, &assign);
        let squares: usize = e.cpu_nics.values().map(|v| v.len() * v.len()).sum();
        let idle = cpus.len() - e.cpu_nics.len();
        let key = (
            e.busiest,
            idle,
            if rule2 { e.split_cpu } else { 0 },
            squares,
            e.split_socket,
        );
        if best.as_ref().is_none_or(|(k, _)| key < *k) {
            best = Some((key, assign.clone()));
        }
    }
    let (_, assign) = best.expect("at least one placement");
    let mut p = evaluate(irq_of, flows, cpus, &irqs, &assign);
    p.even = even;
    Ok(p)
}

/// Every IRQ of the flows' NICs on `cpu` (the default: Linux's boot CPU takes them all).
pub fn all_on(
    irq_of: &BTreeMap<String, u32>,
    flows: &[Flow],
    cpus: &[Cpu],
    cpu: usize,
) -> AffinityPlan {
    dealt(irq_of, flows, cpus, |_| cpu)
}

/// An irqbalance-like spread that knows nothing of flows: the flows' IRQs in number order,
/// dealt to the CPUs in order, one each in turn (what balancing interrupt counts alone gives
/// when every line carries the same load).
pub fn round_robin(irq_of: &BTreeMap<String, u32>, flows: &[Flow], cpus: &[Cpu]) -> AffinityPlan {
    dealt(irq_of, flows, cpus, |i| i % cpus.len())
}

/// The flows' IRQs in number order, the i-th on `cpus[pick(i)]`, evaluated as a plan.
fn dealt(
    irq_of: &BTreeMap<String, u32>,
    flows: &[Flow],
    cpus: &[Cpu],
    pick: impl Fn(usize) -> usize,
) -> AffinityPlan {
    let mut irqs: Vec<u32> = flows
        .iter()
        .flat_map(|f| [irq_of[&f.a], irq_of[&f.b]])
        .collect();
    irqs.sort_unstable();
    irqs.dedup();
    let assign: Vec<usize> = (0..irqs.len()).map(pick).collect();
    let mut p = evaluate(irq_of, flows, cpus, &irqs, &assign);
    p.even = (2 * flows.len()).div_ceil(cpus.len());
    p
}

fn evaluate(
    irq_of: &BTreeMap<String, u32>,
    flows: &[Flow],
    cpus: &[Cpu],
    irqs: &[u32],
    assign: &[usize],
) -> AffinityPlan {
    let irq_cpu: BTreeMap<u32, usize> = irqs
        .iter()
        .zip(assign)
        .map(|(&irq, &i)| (irq, cpus[i].cpu))
        .collect();
    let socket_of = |cpu: usize| cpus.iter().find(|c| c.cpu == cpu).map_or(0, |c| c.socket);
    let mut cpu_nics: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut out_flows = Vec::new();
    let (mut split_cpu, mut split_socket) = (0, 0);
    for f in flows {
        let (ca, cb) = (irq_cpu[&irq_of[&f.a]], irq_cpu[&irq_of[&f.b]]);
        cpu_nics.entry(ca).or_default().push(f.a.clone());
        cpu_nics.entry(cb).or_default().push(f.b.clone());
        let how = if ca == cb {
            "same CPU"
        } else if socket_of(ca) == socket_of(cb) {
            split_cpu += 1;
            "same socket"
        } else {
            split_cpu += 1;
            split_socket += 1;
            "two sockets"
        };
        out_flows.push((f.clone(), how));
    }
    for v in cpu_nics.values_mut() {
        v.sort_by(|a, b| natural(a).cmp(&natural(b)));
    }
    AffinityPlan {
        busiest: cpu_nics.values().map(Vec::len).max().unwrap_or(0),
        even: 0,
        irq_cpu,
        cpu_nics,
        split_cpu,
        split_socket,
        flows: out_flows,
    }
}

/// A name's sort key with its trailing number as a number: eth2 before eth12.
fn natural(name: &str) -> (&str, u64) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (stem, n) = name.split_at(name.len() - digits);
    (stem, n.parse().unwrap_or(0))
}

// One definition of Linux's mask format, shared with the host's planner (which cannot depend on
// this crate): `irqlab_stats::cpus`.
pub use irqlab_stats::cpus::cpumask;

#[cfg(test)]
mod tests {
    use super::*;

    fn bensley_cpus() -> Vec<Cpu> {
        (0..4)
            .map(|cpu| Cpu {
                cpu,
                socket: cpu / 2,
            })
            .collect()
    }

    fn irqs(rows: &[(&str, u32)]) -> BTreeMap<String, u32> {
        rows.iter().map(|(n, i)| (n.to_string(), *i)).collect()
    }

    fn flows(list: &[&str]) -> Vec<Flow> {
        list.iter().map(|f| f.parse().unwrap()).collect()
    }

    #[test]
    fn the_round_robin_deals_irqs_in_order_blind_to_flows_and_sockets() {
        // Swizzled: eth2 16, eth3 17, eth4 18, eth5 19. Dealt in IRQ order, each flow's two
        // IRQs (16 and 18, 17 and 19) land two CPUs apart: in different sockets.
        let irq_of = irqs(&[("eth2", 16), ("eth3", 17), ("eth4", 18), ("eth5", 19)]);
        let f = flows(&["eth2:eth4", "eth3:eth5"]);
        let r = round_robin(&irq_of, &f, &bensley_cpus());
        assert_eq!(
            r.irq_cpu,
            BTreeMap::from([(16, 0), (17, 1), (18, 2), (19, 3)])
        );
        assert_eq!((r.split_cpu, r.split_socket), (2, 2));
        let p = plan(&irq_of, &f, &bensley_cpus()).unwrap();
        assert_eq!(
            (p.split_cpu, p.split_socket),
            (2, 0),
            "the rules keep sockets"
        );
    }

    /// Table 3's unswizzled IRQs.
    fn unswizzled() -> BTreeMap<String, u32> {
        irqs(&[
            ("eth0", 18),
            ("eth1", 19),
            ("eth2", 16),
            ("eth3", 17),
            ("eth4", 16),
            ("eth5", 17),
            ("eth6", 16),
            ("eth7", 17),
        ])
    }

    #[test]
    fn four_nics_on_four_cpus_each_get_a_cpu_with_flows_inside_a_socket() {
        // Table 4 row 2: eth0<->eth1, eth2<->eth3 unswizzled: four IRQs, rule 1.
        let p = plan(
            &unswizzled(),
            &flows(&["eth0:eth1", "eth2:eth3"]),
            &bensley_cpus(),
        )
        .unwrap();
        assert_eq!((p.busiest, p.split_cpu, p.split_socket), (1, 2, 0));
        assert!(p.is_even());
    }

    #[test]
    fn nics_sharing_an_irq_share_a_cpu() {
        // Table 4 row 1: eth2<->eth4, eth3<->eth5 unswizzled: both flows' NICs on IRQ16 and 17,
        // so two CPUs take everything and each flow stays on one.
        let p = plan(
            &unswizzled(),
            &flows(&["eth2:eth4", "eth3:eth5"]),
            &bensley_cpus(),
        )
        .unwrap();
        assert_eq!(p.cpu_nics.len(), 2);
        assert_eq!((p.busiest, p.split_cpu), (2, 0));
        assert!(!p.is_even());
    }

    #[test]
    fn eight_nics_cannot_spread_evenly_unswizzled_and_can_swizzled() {
        let eight = flows(&["eth0:eth4", "eth1:eth5", "eth2:eth6", "eth3:eth7"]);
        let p = plan(&unswizzled(), &eight, &bensley_cpus()).unwrap();
        assert!(!p.is_even(), "{p:?}");
        assert_eq!(p.busiest, 3);
        let mut swizzled = unswizzled();
        swizzled.insert("eth4".into(), 18);
        swizzled.insert("eth5".into(), 19);
        let p = plan(&swizzled, &eight, &bensley_cpus()).unwrap();
        assert!(p.is_even());
        // Rule 2: eight NICs on four CPUs, each flow on one.
        assert_eq!((p.busiest, p.split_cpu), (2, 0));
    }

    #[test]
    fn no_cpu_is_left_idle_to_keep_a_flow_together() {
        // Three flows, one IRQ per NIC, four CPUs: six NICs outnumber the CPUs (rule 2), but
        // three flows each on one CPU would leave the fourth idle: two stay together and the
        // third is split over the last two, in one socket.
        let irq_of = irqs(&[
            ("eth0", 40),
            ("eth1", 41),
            ("eth2", 42),
            ("eth3", 43),
            ("eth4", 44),
            ("eth5", 45),
        ]);
        let f = flows(&["eth0:eth1", "eth2:eth3", "eth4:eth5"]);
        let p = plan(&irq_of, &f, &bensley_cpus()).unwrap();
        assert_eq!(p.cpu_nics.len(), 4, "{p:?}");
        assert_eq!((p.busiest, p.split_cpu, p.split_socket), (2, 1, 0), "{p:?}");
        // The seed's unswizzled six ports (a user's case): IRQ16 takes three NICs; IRQ17 and
        // IRQ19 go to two CPUs, not one with a CPU idle.
        let six = flows(&["eth0:eth4", "eth1:eth5", "eth2:eth6"]);
        let p = plan(&unswizzled(), &six, &bensley_cpus()).unwrap();
        assert_eq!(p.cpu_nics.len(), 4, "{p:?}");
        assert_ne!(p.irq_cpu[&17], p.irq_cpu[&19], "{p:?}");
    }

    #[test]
    fn nics_that_need_not_share_a_cpu_do_not() {
        // eth2 and eth4 share IRQ16 and so a CPU; eth0 and eth1 then take a CPU each (rule 1),
        // in the other socket, together (rules 1 and 3), not the second CPU of the first.
        let p = plan(
            &unswizzled(),
            &flows(&["eth2:eth4", "eth0:eth1"]),
            &bensley_cpus(),
        )
        .unwrap();
        assert_eq!(p.cpu_nics.len(), 3, "{p:?}");
        assert_eq!(p.split_socket, 0, "{p:?}");
    }

    #[test]
    fn masks_and_names_sort_as_linux_and_people_do() {
        assert_eq!(cpumask(0), "1");
        assert_eq!(cpumask(3), "8");
        assert_eq!(cpumask(40), "100,00000000");
        let mut v = vec!["eth12", "eth2", "eth10"];
        v.sort_by(|a, b| natural(a).cmp(&natural(b)));
        assert_eq!(v, ["eth2", "eth10", "eth12"]);
        assert!("eth0:eth1:eth2".parse::<Flow>().is_err());
    }

    #[test]
    fn the_default_puts_everything_on_cpu_0() {
        let p = all_on(
            &unswizzled(),
            &flows(&["eth0:eth1", "eth2:eth3"]),
            &bensley_cpus(),
            0,
        );
        assert_eq!(p.busiest, 4);
        assert_eq!(p.cpu_nics.keys().copied().collect::<Vec<_>>(), [0]);
    }

    #[test]
    fn bad_flows_are_named() {
        let cpus = bensley_cpus();
        let e = plan(&unswizzled(), &flows(&["eth0:eth9"]), &cpus).unwrap_err();
        assert!(
            e.to_string().contains("'eth9'") && e.to_string().contains("eth7"),
            "{e}"
        );
        let e = plan(&unswizzled(), &flows(&["eth0:eth1", "eth1:eth2"]), &cpus).unwrap_err();
        assert_eq!(e, AffinityError::NicTwice("eth1".into()));
        assert_eq!(
            plan(&unswizzled(), &[], &cpus).unwrap_err(),
            AffinityError::NoFlows
        );
        assert!("eth0".parse::<Flow>().is_err());
        assert!("eth0:eth0".parse::<Flow>().is_err());
    }
}
