//! IPv4 forwarding between seed 003's two 82572EI: each frame received on one port is routed
//! out of the other (`forward_to`), through the transmit ring, and cleaned in the output
//! port's poll. e1000e of 2.6.29 keeps a poll that cleaned any transmitted frame on the poll
//! list (`if (tx_cleaned) work_done = budget;`), so a steady forwarded flood holds NAPI in
//! polling with its interrupts masked.

use irqlab_sim::scenario::{Outcome, Scenario};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Per-frame costs light enough that nothing is lost at the gaps below (the file's are the
/// kernel's estimates).
const LIGHT: [&str; 2] = ["kernel.net.rx_packet=450", "kernel.net.forward=500"];

fn run(gap_us: u32, forward: bool, strict: bool) -> Outcome {
    run_with(gap_us, forward, strict, &LIGHT)
}

fn run_with(gap_us: u32, forward: bool, strict: bool, costs: &[&str]) -> Outcome {
    let mut set = vec![
        format!("device.0.nic.gap_us={gap_us}"),
        format!("device.1.nic.gap_us={gap_us}"),
    ];
    set.extend(costs.iter().map(|c| c.to_string()));
    if forward {
        set.push("device.0.nic.forward_to=eth1".into());
        set.push("device.1.nic.forward_to=eth0".into());
    }
    let s = Scenario::load(repo().join("experiments/seed003/flood.toml"), &set).expect("loads");
    s.run_with(1, 1000, 0, strict).expect("runs")
}

#[test]
fn every_frame_received_on_one_port_leaves_by_the_other() {
    let o = run(20, true, false);
    let (a, b) = (&o.nics[0], &o.nics[1]);
    assert_eq!(a.dropped + b.dropped + a.tx_dropped + b.tx_dropped, 0);
    // What eth0 received went out of eth1 (a few may still be on their way at the end).
    assert!(b.transmitted <= a.received && a.received - b.transmitted <= 4);
    assert!(a.transmitted <= b.received && b.received - a.transmitted <= 4);
    assert!(a.transmitted > 20_000);
    // Receive only: nothing is transmitted.
    let r = run(20, false, false);
    assert_eq!(r.nics[0].transmitted + r.nics[1].transmitted, 0);
}

#[test]
fn a_poll_that_cleaned_transmitted_frames_stays_in_polling_and_interrupts_stop() {
    // Receive only, each poll ends the interrupt's work and enables the interrupt again: the
    // 20,000/s throttle per port. Forwarding, a poll that finds the other port's frames sent
    // reports its whole weight and NAPI polls on, its interrupts masked, until a poll finds
    // none: with the kernel's per-frame estimates at 10 us that halves the interrupts, and
    // at 8 us they stop.
    let interrupts = |o: &Outcome| o.nics.iter().map(|n| n.interrupts).sum::<u64>();
    let receive = run_with(10, false, false, &[]);
    let forward = run_with(10, true, false, &[]);
    // Two ports at 20,000/s for the run's 0.5 s.
    assert!(interrupts(&receive) > 19_000, "{}", interrupts(&receive));
    assert!(
        interrupts(&forward) * 2 < interrupts(&receive),
        "forwarding {} against receive-only {}",
        interrupts(&forward),
        interrupts(&receive)
    );
    let forward8 = run_with(8, true, false, &[]);
    assert!(interrupts(&forward8) < 10, "{}", interrupts(&forward8));
    // Light per-frame work leaves time between polls for the transmit write-backs: most
    // polls find nothing sent and end.
    let light = run(10, true, false);
    assert!(interrupts(&light) > 15_000, "{}", interrupts(&light));
}

#[test]
fn forwarding_fast_paths_equal_the_reference() {
    let (fast, strict) = (run(10, true, false), run(10, true, true));
    assert_eq!(fast.cyclictest, strict.cyclictest);
    assert_eq!(fast.nics, strict.nics);
}

#[test]
fn forwarding_to_a_device_that_is_not_another_nic_is_refused_with_the_choices() {
    let set = vec!["device.0.nic.forward_to=eth0".to_string()];
    let err = Scenario::load(repo().join("experiments/seed003/flood.toml"), &set)
        .expect_err("refused")
        .to_string();
    assert!(err.contains("forward to one of [eth1]"), "{err}");
}
