//! Kernel code is programs of one step language (`kernel/program.rs`), built when the machine is
//! assembled: the Linux paths (`kernel/linux.rs`) and the drivers (`kernel/drivers/`). These
//! tests read the programs the shipped scenarios build: each path has the shape of the kernel
//! function it models, and every call and jump lands where it should.

use irqlab_sim::kernel::program::{Operand, Step};
use irqlab_sim::kernel::Kernel;
use irqlab_sim::scenario::Scenario;
use std::path::Path;

fn kernel(scenario: &str, set: &[&str]) -> Kernel {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let s = Scenario::load(repo.join(scenario), &set).expect("scenario loads");
    s.build(1, 10, 0).expect("builds").kernel
}

const WS: &str = "experiments/seed000/ws.toml";

/// The entry of the program named `name`, which must exist.
fn entry(k: &Kernel, name: &str) -> u32 {
    k.code
        .entry(name)
        .unwrap_or_else(|| panic!("no program '{name}' among {:?}", names(k)))
}

fn names(k: &Kernel) -> Vec<&str> {
    k.code.programs.iter().map(|p| p.name.as_str()).collect()
}

#[test]
fn every_call_lands_on_a_program_and_every_jump_stays_in_its_own() {
    let cases: &[(&str, &[&str])] = &[
        (WS, &["delivery=xtpic"]),
        (WS, &["delivery=ioapic"]),
        (WS, &["delivery=msi", "kernel.tick.hz=1000"]),
        ("experiments/seed000/soc.toml", &["delivery=xtpic"]),
        ("experiments/seed002/fpga.toml", &[]),
        // Seed 003: the watchdog's timer, work and worker, the transmit ring's clean loop
        // and e1000_xmit_frame, and the threaded kernel's thread loops.
        ("experiments/seed003/idle.toml", &[]),
        (
            "experiments/seed003/flood.toml",
            &[
                "device.0.nic.forward_to=eth1",
                "device.1.nic.forward_to=eth0",
            ],
        ),
        (
            "experiments/seed003/flood.toml",
            &["kernel.threads.enabled=true", "kernel.sched.preemption=rt"],
        ),
    ];
    for (scenario, set) in cases {
        let k = kernel(scenario, set);
        let entries: Vec<u32> = k.code.programs.iter().map(|p| p.entry).collect();
        let mut end = 0;
        for p in &k.code.programs {
            assert_eq!(p.entry, end, "programs are contiguous");
            end = p.entry + p.len;
            let within = |to: u32| (p.entry..p.entry + p.len).contains(&to);
            let steps = k.code.program(&p.name).unwrap();
            for s in steps {
                if let Step::Call(e) = *s {
                    assert!(entries.contains(&e), "{}: {s:?}", p.name);
                }
                if let Some(&mut to) = s.clone().target_mut() {
                    assert!(within(to), "{}: {s:?} leaves the program", p.name);
                }
            }
            // A program ends where it cannot fall through into the next one.
            assert!(
                matches!(
                    steps.last(),
                    Some(Step::Return(_) | Step::Iret | Step::Jump(_))
                ),
                "{} ends with {:?}",
                p.name,
                steps.last()
            );
        }
        assert_eq!(end as usize, k.code.steps.len());
        // Every vector of both tables and every tasklet leads to a program.
        assert!(
            k.idt.iter().all(|e| entries.contains(e)),
            "{scenario} {set:?}"
        );
        assert!(k.tasklets.iter().all(|t| entries.contains(&t.func)));
    }
}

#[test]
fn the_flow_handlers_make_the_chip_calls_of_their_kernel_function() {
    use Step::*;
    // XT-PIC: handle_level_irq masks and acknowledges before the chain and unmasks after it.
    let k = kernel(WS, &["delivery=xtpic"]);
    let d = k
        .irqs
        .iter()
        .find(|d| d.irq == 11)
        .expect("the card on IRQ 11");
    let level = k.code.program("handle_level_irq(irq 11)").unwrap();
    let calls: Vec<u32> = level
        .iter()
        .filter_map(|s| match s {
            Call(e) => Some(*e),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        [
            entry(&k, "mask_and_ack_8259A(irq 11)"),
            entry(&k, "handle_IRQ_event(irq 11)"),
            entry(&k, "enable_8259A_irq(irq 11)"),
        ]
    );
    assert_eq!(level[0], Inc(d.count), "kstat first");
    // mask_and_ack_8259A for a slave IRQ: inb IMR, outb IMR, specific EOI to the slave, then
    // to the master's cascade input (IR2).
    let ack = k.code.program("mask_and_ack_8259A(irq 11)").unwrap();
    let io: Vec<&Step> = ack
        .iter()
        .filter(|s| matches!(s, In(_) | Out(..)))
        .collect();
    assert_eq!(io.len(), 4);
    assert_eq!(*io[0], In(0xA1));
    assert_eq!(*io[2], Out(0xA0, Operand::Const(0x63)));
    assert_eq!(*io[3], Out(0x20, Operand::Const(0x62)));

    // MSI: handle_edge_irq writes the EOI before the chain.
    let k = kernel(WS, &["delivery=msi"]);
    let d = k
        .irqs
        .iter()
        .find(|d| d.vector != 0 && d.irq >= 1000)
        .unwrap();
    let edge = k
        .code
        .program(&format!("handle_edge_irq(irq {})", d.irq))
        .unwrap();
    let eoi = edge
        .iter()
        .position(|s| matches!(s, LapicWrite(..)))
        .unwrap();
    let chain = edge.iter().position(|s| matches!(s, Call(_))).unwrap();
    assert!(eoi < chain, "{edge:?}");
    // Figure 5's ISR reads no status register; Figure 4's (legacy) does, and returns IRQ_NONE
    // when the pending bit is clear.
    let msi_isr = k.code.program("exerciser_isr(exerciser)").unwrap();
    assert!(!msi_isr.iter().any(|s| matches!(s, Read(_))), "{msi_isr:?}");
    let k = kernel(WS, &["delivery=ioapic"]);
    let legacy = k.code.program("exerciser_isr(exerciser)").unwrap();
    assert!(matches!(legacy[1], Read(_)));
    assert!(matches!(legacy[2], BranchIfClear(..)));
    assert_eq!(*legacy.last().unwrap(), Return(Operand::Const(0)));
}
