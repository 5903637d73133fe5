//! irqlab's simulator: a discrete-event model of the path a hardware interrupt travels, from the
//! device through the PCIe fabric and the interrupt controllers (8259A pair, IO-APIC, Local APIC,
//! MSI) to the CPU and the Linux kernel's handling (hard IRQ, softirq and tasklets).
//!
//! Every latency it reports is the sum of modelled steps: TLPs serialized on links, hub
//! crossings, register accesses that stall the CPU, and kernel code paths costed in instructions.
//! The model's contract: `docs/model.md`.
//!
//! ```no_run
//! use irqlab_sim::scenario::Scenario;
//! let scenario = Scenario::load("experiments/seed000/ws.toml", &[]).unwrap();
//! let result = scenario.run(1, 10_000, 0).unwrap();
//! println!("ISR p50 = {:?} ns", result.isr.summary().p50_ns);
//! ```

#![forbid(unsafe_code)]

pub mod devices;
pub mod engine;
pub mod experiment;
pub mod hw;
pub mod kernel;
pub mod machine;
pub mod plan;
pub mod probes;
pub mod report;
pub mod result;
pub mod scenario;
pub mod shipped;
pub mod simulation;
pub mod sweep;
pub(crate) mod text;
pub mod topology;
pub mod uncertainty;
pub mod validate;
pub mod whatif;
pub mod workload;
