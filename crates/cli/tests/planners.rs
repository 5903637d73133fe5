//! The host's greedy planner (`irqlab_host::plan`) against the model's exhaustive one
//! (`irqlab_sim::plan::affinity`), where both run. The check lives here, in the crate that
//! depends on both, since neither crate may depend on the other.

use irqlab_host::affinity::QueueRole;
use irqlab_host::affinity::{Cache, HostAffinity, HostCpu, IrqMask, IrqSource, Nic, NicIrq};
use irqlab_host::cpu_list::CpuList;
use irqlab_host::plan::{plan, HostFlow};
use irqlab_sim::plan::affinity as model;
use std::collections::BTreeMap;

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

/// A NIC with one TxRx IRQ, `irq`.
fn nic(name: &str, irq: u32) -> Nic {
    Nic {
        name: name.into(),
        device: "0000:00:00.0".into(),
        virtio: None,
        driver: Some("ixgbe".into()),
        source: IrqSource::MsiIrqs,
        irqs: vec![NicIrq {
            irq,
            name: format!("{name}-TxRx-0"),
            role: QueueRole::RxTx(0),
            affinity: IrqMask {
                mask: Some("f".into()),
                cpus: vec![0, 1, 2, 3],
                effective_cpus: None,
                writable: true,
            },
        }],
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

/// One IRQ per NIC, as in the model: the greedy plan loads the busiest CPU, splits flows
/// over CPUs and over sockets as the exhaustive one does, for every number of flows that
/// fits four CPUs in two sockets and two CPUs in one.
#[test]
fn the_greedy_plan_matches_the_exhaustive_one_where_both_run() {
    for (sockets, cores) in [(2, 2), (1, 2), (2, 4)] {
        for nflows in 1..=5 {
            let names: Vec<String> = (0..2 * nflows).map(|i| format!("eth{i}")).collect();
            let nics: Vec<Nic> = names
                .iter()
                .enumerate()
                .map(|(i, n)| nic(n, 100 + i as u32))
                .collect();
            let list: Vec<String> = (0..nflows)
                .map(|f| format!("eth{}:eth{}", 2 * f, 2 * f + 1))
                .collect();
            let refs: Vec<&str> = list.iter().map(String::as_str).collect();
            let h = host(cpus(sockets, cores), nics);
            let p = plan(&h, flows(&refs), true).unwrap();
            let irq_of: BTreeMap<String, u32> = names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), 100 + i as u32))
                .collect();
            let model_cpus: Vec<model::Cpu> = h
                .cpus
                .iter()
                .map(|c| model::Cpu {
                    cpu: c.cpu as usize,
                    socket: c.socket as usize,
                })
                .collect();
            let model_flows: Vec<model::Flow> = refs.iter().map(|f| f.parse().unwrap()).collect();
            if (model_cpus.len() as u64).pow(names.len() as u32) > model::MAX_PLACEMENTS {
                continue;
            }
            let m = model::plan(&irq_of, &model_flows, &model_cpus).unwrap();
            let split_cpu = p
                .units
                .iter()
                .filter(|u| u.sides.len() == 2 && u.sides[0].cpu != u.sides[1].cpu)
                .count();
            assert_eq!(
                (p.busiest, split_cpu, p.split_socket),
                (m.busiest, m.split_cpu, m.split_socket),
                "{sockets}x{cores} CPUs, {nflows} flows: {p:#?}"
            );
        }
    }
}
