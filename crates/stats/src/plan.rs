//! The plans of `irqlab plan`, as the renderers read them. Pure data, made by the planners:
//! - `plan affinity --host`: which CPU each NIC queue's IRQs go to, by seed 001's rules, and
//!   what is left alone ([`HostPlan`], made by `irqlab_host::plan`, whose module docs give the
//!   rules; `--json` writes it as it is);
//! - the model's, on a platform file (`irqlab_sim::plan`, whose module docs say how): the IRQ
//!   affinity of NIC flows ([`AffinityPlan`]), the INTXSWZCTRL values of an Intel 5000's root
//!   ports ([`SwizzlePlan`]), and a placement simulated ([`Throughput`]).

#![allow(missing_docs)] // field names carry their meaning; the structs are documented

use crate::affinity::QueueRole;
use crate::cpus::mask_words;
use crate::pcie::Bdf;
use serde::Serialize;
use std::collections::BTreeMap;

/// A flow on the host: packets received on `a` leave on `b`, and back; `a == b` for a NIC that
/// is a flow of its own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HostFlow {
    pub a: String,
    pub b: String,
}

impl HostFlow {
    /// `a<->b`, or the NIC's name for a flow of its own.
    pub fn label(&self) -> String {
        if self.a == self.b {
            self.a.clone()
        } else {
            format!("{}<->{}", self.a, self.b)
        }
    }
}

/// One NIC queue's IRQs, placed on one CPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Side {
    pub nic: String,
    pub queue: u32,
    pub irqs: Vec<u32>,
    pub cpu: u32,
}

/// Queue i of a flow's NICs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unit {
    /// Index into [`HostPlan::flows`].
    pub flow: usize,
    pub sides: Vec<Side>,
    /// How it was placed, and by which rule.
    pub placement: String,
}

/// A planned IRQ.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlannedIrq {
    pub irq: u32,
    pub nic: String,
    pub name: String,
    pub role: QueueRole,
    pub cpu: u32,
    /// The mask to write (`smp_affinity`'s form).
    pub mask: String,
    /// The mask now, as read.
    pub now: Option<String>,
}

impl PlannedIrq {
    /// Its mask already is the planned one.
    pub fn unchanged(&self) -> bool {
        // By 32-bit groups, not CPU by CPU: a mask of 65,536 CPUs is 2,048 groups.
        self.now
            .as_deref()
            .is_some_and(|now| mask_words(now).ok() == mask_words(&self.mask).ok())
    }
}

/// An IRQ the plan does not touch, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LeftAlone {
    pub irq: u32,
    pub nic: String,
    pub name: String,
    pub why: String,
}

/// An online CPU the plan leaves out, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LeftOutCpu {
    pub cpu: u32,
    pub why: String,
}

/// The plan for the host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HostPlan {
    /// The CPUs planned over.
    pub cpus: Vec<u32>,
    /// CPUs left out, each with why.
    pub cpus_left_out: Vec<LeftOutCpu>,
    pub flows: Vec<HostFlow>,
    /// Whether flows were given (else every NIC is a flow of its own).
    pub flows_given: bool,
    pub units: Vec<Unit>,
    pub irqs: Vec<PlannedIrq>,
    pub left_alone: Vec<LeftAlone>,
    /// 1: a CPU per side; 2: more sides than CPUs, a unit per CPU.
    pub rule: u8,
    /// Sides on the busiest CPU, and at most that many in an even spread.
    pub busiest: usize,
    pub even: usize,
    /// Units whose sides are on two sockets.
    pub split_socket: usize,
}

// The model's plans (`irqlab_sim::plan`): `plan affinity PLATFORM` and `plan swizzle`.

/// A CPU: its number and the socket it is in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Cpu {
    pub cpu: usize,
    pub socket: usize,
}

/// A flow: packets received on `a` leave on `b`, and back (seed 001's "eth2 <-> eth4").
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Flow {
    pub a: String,
    pub b: String,
}

impl std::str::FromStr for Flow {
    type Err = String;
    fn from_str(s: &str) -> Result<Flow, String> {
        let (a, b) = s
            .split_once(':')
            .filter(|(a, b)| !a.trim().is_empty() && !b.trim().is_empty() && !b.contains(':'))
            .ok_or_else(|| {
                format!("'{s}': expected NIC:NIC, the flow's two interfaces (eth2:eth4)")
            })?;
        if a.trim() == b.trim() {
            return Err(format!("'{s}': a flow joins two different interfaces"));
        }
        Ok(Flow {
            a: a.trim().to_string(),
            b: b.trim().to_string(),
        })
    }
}

/// Where each IRQ goes and what that gives each flow.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AffinityPlan {
    /// IRQ -> CPU, for the IRQs the flows' NICs are on.
    pub irq_cpu: BTreeMap<u32, usize>,
    /// CPU -> the flows' NICs whose interrupts it takes.
    pub cpu_nics: BTreeMap<usize, Vec<String>>,
    /// The most flow NICs on one CPU, and what an even spread would put there at most.
    pub busiest: usize,
    pub even: usize,
    /// Flows whose two NICs interrupt different CPUs, and different sockets.
    pub split_cpu: usize,
    pub split_socket: usize,
    /// Each flow: "same CPU", "same socket" or "two sockets".
    pub flows: Vec<(Flow, &'static str)>,
}

impl AffinityPlan {
    /// Every CPU carries the same number of flow NICs, to within one.
    pub fn is_even(&self) -> bool {
        self.busiest <= self.even
    }
}

/// One function of a card: where it sits and what it signals.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Function {
    /// eth0, eth1, ... in bus order.
    pub name: String,
    pub port: String,
    #[serde(serialize_with = "crate::pcie::serialize_bdf")]
    pub bdf: Bdf,
    /// The pin the function signals on: A-D.
    pub pin: char,
    /// Router input and IRQ without swizzling (every INTXSWZCTRL as the platform file has it)
    /// and with the plan.
    pub pirq_before: char,
    pub irq_before: Option<u8>,
    pub pirq_after: char,
    pub irq_after: Option<u8>,
}

/// A register the plan sets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Register {
    /// The root port (a part of the platform).
    pub port: String,
    /// Its bus:device.function (bus 0).
    pub device: u8,
    pub before: u8,
    pub after: u8,
}

/// The plan: the values, and every function's IRQ without and with them.
#[derive(Clone, Debug, Serialize)]
pub struct SwizzlePlan {
    pub platform: String,
    pub registers: Vec<Register>,
    pub functions: Vec<Function>,
    /// IRQ -> the functions on it, without and with the plan.
    pub table_before: BTreeMap<u8, Vec<String>>,
    pub table_after: BTreeMap<u8, Vec<String>>,
    /// The most functions on one IRQ, without and with.
    pub busiest_before: usize,
    pub busiest_after: usize,
}

/// What one placement forwarded.
#[derive(Clone, Debug, PartialEq)]
pub struct Throughput {
    /// Frames on the wire before the traffic ended, per second, every port together.
    pub pps: f64,
    /// The CPUs that took a flow NIC's interrupts.
    pub busy_cpus: usize,
}
