//! The plan of `irqlab plan affinity --host`: which CPU each NIC queue's IRQs go to, by seed
//! 001's rules, and what is left alone. Pure data: the host crate's planner makes it
//! (`irqlab_host::plan`, whose module docs give the rules), the renderers read it, and `--json`
//! writes it as it is.

#![allow(missing_docs)] // field names carry their meaning; the structs are documented

use crate::affinity::QueueRole;
use crate::cpus::mask_words;
use serde::Serialize;

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
