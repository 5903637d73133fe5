//! The 82572EI and e1000e under a flood (seed 003's flood scenario, vanilla 2.6.29): interrupt
//! throttling, NAPI's polling under load, frames lost when the host cannot keep up, and the
//! fast paths against the step-by-step reference.

use irqlab_sim::scenario::{Outcome, Scenario};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const FLOOD: &str = "experiments/seed003/flood.toml";

fn load(set: &[&str]) -> Scenario {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    Scenario::load(repo().join(FLOOD), &set).expect("scenario loads")
}

/// `loops` cyclictest loops (500 us each) under frames `gap_us` apart on both ports.
fn flood(gap_us: f64, extra: &[&str], loops: u64) -> Outcome {
    let g0 = format!("device.0.nic.gap_us={gap_us}");
    let g1 = format!("device.1.nic.gap_us={gap_us}");
    let mut set = vec![g0.as_str(), g1.as_str()];
    set.extend(extra);
    load(&set).run(2, loops, 0).expect("runs")
}

fn seconds(o: &Outcome) -> f64 {
    o.counters.simulated_ps as f64 * 1e-12
}

#[test]
fn a_small_frame_flood_interrupts_at_the_throttle_rate_and_loses_nothing() {
    // e1000e's conservative mode holds a 64-byte flood at 20,000 interrupts/s (ITR 195 x 256
    // ns = 49.92 us apart): the host keeps up at a 10 us gap.
    let o = flood(10.0, &[], 2000);
    for n in &o.nics {
        let rate = n.interrupts as f64 / seconds(&o);
        assert!((rate / 20_032.0 - 1.0).abs() < 0.01, "{}: {rate}/s", n.name);
        assert_eq!(n.dropped, 0, "{}", n.name);
        // Every frame but those still in the ring or on their way at the end was received.
        assert!(n.frames - n.received < 64, "{n:?}");
        // The traffic lasts cyclictest's 2,010 loops of 500 us from its start, which has a
        // phase within one 4 ms tick: 100,500 to 100,900 frames 10 us apart.
        assert!((100_500..=100_900).contains(&n.frames), "{n:?}");
    }
}

#[test]
fn a_host_that_cannot_keep_up_polls_instead_of_interrupting_and_loses_frames() {
    // Ten times the per-frame work: 2 x 100,000 frames/s need more than the CPU has. NAPI then
    // stays on the poll list (each poll uses its whole weight), the controllers' interrupts
    // stay masked and their rate falls, and the packet buffers overflow.
    let light = flood(10.0, &[], 1000);
    let heavy = flood(10.0, &["kernel.net.rx_packet=9000"], 1000);
    for (l, h) in light.nics.iter().zip(&heavy.nics) {
        assert!(
            h.interrupts * 4 < l.interrupts,
            "{}: {} interrupts loaded against {} light",
            h.name,
            h.interrupts,
            l.interrupts
        );
        assert!(h.dropped > h.frames / 10, "{h:?}");
        assert_eq!(
            h.frames,
            h.received + h.dropped + (h.frames - h.received - h.dropped)
        );
    }
    // Vanilla runs NAPI in softirq context on interrupt exit (and in ksoftirqd after ten
    // rounds), which cyclictest's task waits behind.
    assert!(heavy.cyclictest.mean_ns() > light.cyclictest.mean_ns());
}

#[test]
fn fast_paths_equal_the_reference_under_a_flood() {
    // The last two: an ICR read answered in 200 ns whose INTx deassert leaves 500 ns after the
    // read, so that the deassert reaches the hub after the read's completion reaches the core
    // (the ends of the two ranges): a completion taken ahead of the clock must not let the
    // deassert, or anything else the chip does after answering, pass what the core does next.
    let late_deassert = [
        "device.0.read_turnaround_ns=200",
        "device.0.deassert_delay_ns=500",
        "device.1.read_turnaround_ns=200",
        "device.1.deassert_delay_ns=500",
    ];
    for (delivery, extra) in [
        ("delivery=msi", &[][..]),
        ("delivery=ioapic", &[][..]),
        ("delivery=ioapic", &late_deassert[..]),
        ("delivery=msi", &late_deassert[..]),
    ] {
        let mut set = vec![delivery, "device.0.nic.gap_us=7", "device.1.nic.gap_us=9"];
        set.extend_from_slice(extra);
        let s = load(&set);
        let fast = s.run_with(4, 200, 0, false).unwrap();
        let strict = s.run_with(4, 200, 0, true).unwrap();
        assert_eq!(fast.cyclictest, strict.cyclictest, "{delivery}");
        assert_eq!(fast.nics, strict.nics, "{delivery}");
        assert_eq!(
            fast.tasks.context_switches, strict.tasks.context_switches,
            "{delivery}"
        );
        let (mut f, mut r) = (fast.counters.clone(), strict.counters.clone());
        assert!(f.events < r.events, "the fast paths save events");
        (f.events, r.events) = (0, 0);
        assert_eq!(format!("{f:?}"), format!("{r:?}"), "{delivery}");
    }
}

#[test]
fn a_gap_faster_than_line_rate_is_refused_with_the_line_rate() {
    let set = ["device.1.nic.gap_us=0.5".to_string()];
    let e = Scenario::load(repo().join(FLOOD), &set)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("device.1.nic.gap_us") && e.contains("0.672"),
        "{e}"
    );
}
