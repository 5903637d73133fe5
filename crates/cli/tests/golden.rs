//! Golden outputs of the simulator, frozen before the move to one machine (issue 13): every
//! shipped scenario with fixed seeds, the knobs docs/sim.md documents, and the whole `validate`
//! result. Each case runs this build's `irqlab` with `--json` and compares the file's `settings`
//! and `result` (summaries, counters, analyzer traces, histograms, series) byte for byte with
//! `tests/golden/CASE.json`.
//!
//! A change to the model that moves a number shows here as a diff. Seeds 000 and 002 must stay
//! byte-identical through restructurings; a deliberate change is regenerated with
//! `IRQLAB_GOLDEN=update cargo test -p irqlab --test golden` and explained in its commit.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

/// A case: its file name and the `irqlab` arguments (before `--json`).
const CASES: &[(&str, &[&str])] = &[
    // Seed 000: both platforms, the three delivery methods, with the analyzer trace.
    ("seed000-ws-msi", &["sim", "seed000/ws", "--set", "delivery=msi", "--samples", "2000", "--trace", "64"]),
    ("seed000-ws-ioapic", &["sim", "seed000/ws", "--set", "delivery=ioapic", "--samples", "2000", "--trace", "64"]),
    ("seed000-ws-xtpic", &["sim", "seed000/ws", "--set", "delivery=xtpic", "--samples", "2000", "--trace", "64"]),
    ("seed000-soc-msi", &["sim", "seed000/soc", "--set", "delivery=msi", "--samples", "2000", "--trace", "64"]),
    ("seed000-soc-ioapic", &["sim", "seed000/soc", "--set", "delivery=ioapic", "--samples", "2000", "--trace", "64"]),
    ("seed000-soc-xtpic", &["sim", "seed000/soc", "--set", "delivery=xtpic", "--samples", "2000", "--trace", "64", "--seed", "7"]),
    // Seed 000's what-ifs (docs/sim.md): the tick, a sharer on the line, the master 8259, a faster link
    // on a slower CPU.
    ("seed000-ws-ioapic-tick", &["sim", "seed000/ws", "--set", "delivery=ioapic", "--set", "kernel.tick.hz=250", "--samples", "3000"]),
    ("seed000-ws-xtpic-sharer", &["sim", "seed000/ws", "--set", "delivery=xtpic", "--set", "platform.ich.functions=[{name=\"uhci_hcd\", pirq=\"A\", status_port=0xE000, isr_instructions=40}]", "--samples", "1000", "--trace", "32"]),
    ("seed000-soc-ioapic-sharer", &["sim", "seed000/soc", "--set", "delivery=ioapic", "--set", "platform.ich.functions=[{name=\"uhci_hcd\", pirq=\"A\", status_port=0xE000, isr_instructions=40}]", "--samples", "1000", "--trace", "32"]),
    ("seed000-ws-xtpic-master", &["sim", "seed000/ws", "--set", "delivery=xtpic", "--set", "platform.ich.pirq_pic_irq=[5,10,11,10,11,10,11,10]", "--samples", "1000"]),
    ("seed000-ws-msi-gen3-1ghz", &["sim", "seed000/ws", "--set", "device.0.link_generation=3", "--set", "device.0.link_width=8", "--set", "platform.cpu.clock_hz=1.0e9", "--samples", "1000"]),
    // Seed 002 and every knob of its table in docs/sim.md.
    ("seed002", &["sim", "seed002/fpga", "--samples", "20000", "--trace", "64"]),
    ("seed002-switches", &["sim", "seed002/fpga", "--samples", "20000", "--set", "device.0.switches=2"]),
    ("seed002-dma-writes", &["sim", "seed002/fpga", "--samples", "5000", "--set", "device.0.dma_write_mb_per_s=4000"]),
    ("seed002-dma-reads", &["sim", "seed002/fpga", "--samples", "3000", "--set", "device.0.dma_read_mb_per_s=3000"]),
    ("seed002-ber", &["sim", "seed002/fpga", "--samples", "20000", "--set", "device.0.bit_error_rate=1e-6"]),
    ("seed002-smi", &["sim", "seed002/fpga", "--samples", "20000", "--set", "platform.smi.rate_per_s=200"]),
    ("seed002-idle-limit", &["sim", "seed002/fpga", "--samples", "20000", "--set", "kernel.idle.latency_limit_us=0"]),
    ("seed002-clock", &["sim", "seed002/fpga", "--samples", "20000", "--set", "platform.cpu.clock_hz=2.0e9", "--set", "platform.cpu.frequency.low_hz=2.0e9", "--set", "platform.cpu.frequency.high_hz=2.0e9"]),
    ("seed002-tick1000", &["sim", "seed002/fpga", "--samples", "20000", "--set", "kernel.tick.hz=1000"]),
    ("seed002-no-sharer", &["sim", "seed002/fpga", "--samples", "20000", "--set", "device.1.interrupts=none"]),
    ("seed002-from-service", &["sim", "seed002/fpga", "--samples", "20000", "--set", "device.0.interval_from=service", "--set", "device.0.interval_us=3"]),
    ("seed002-replications", &["sim", "seed002/fpga", "--samples", "30000", "--replications", "3", "--seed", "9"]),
    // Seed 004: the whole pulse timeline, and a shorter one split into replications (each through
    // the phases in proportion).
    ("seed004", &["sim", "seed004/pps"]),
    ("seed004-replications", &["sim", "seed004/pps", "--samples", "1200", "--replications", "2"]),
    // Seed 003: the flood on the vanilla kernel, and the two threaded kernels with their knobs.
    ("seed003-flood", &["sim", "seed003/flood", "--samples", "1000", "--set", "device.0.nic.gap_us=6", "--set", "device.1.nic.gap_us=6"]),
    ("seed003-rt-low", &["sim", "seed003/flood", "--samples", "1000", "--set", "device.0.nic.gap_us=6", "--set", "device.1.nic.gap_us=6", "--set", "kernel.threads.enabled=true", "--set", "kernel.sched.preemption=rt", "--set", "cyclictest.priority=40", "--set", "kernel.net.rx_packet=1350"]),
    ("seed003-threaded-hrtimer-softirq", &["sim", "seed003/flood", "--samples", "1000", "--set", "device.0.nic.gap_us=5", "--set", "device.1.nic.gap_us=5", "--set", "kernel.threads.enabled=true", "--set", "kernel.sched.preemption=preempt", "--set", "kernel.threads.hrtimer_wakeup=softirq", "--set", "kernel.threads.softirq_priority=49"]),
    // Every validation row at the default sample counts, with the runs' histograms.
    ("validate", &["validate"]),
];

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Run one case and return its `settings` and `result`, pretty-printed.
fn run_case(args: &[&str], scratch: &Path) -> String {
    let out = scratch.join("out.json");
    let run = Command::cargo_bin("irqlab")
        .expect("the irqlab binary is built")
        .current_dir(scratch)
        .args(args)
        .arg("--json")
        .arg(&out)
        .output()
        .expect("irqlab runs");
    // `validate` exits 1 while a row fails: that is a result, not an error.
    assert!(
        matches!(run.status.code(), Some(0) | Some(1)),
        "irqlab {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&run.stderr)
    );
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("the JSON was written"))
            .expect("valid JSON");
    let mut result = file["result"].clone();
    // A series holds thousands of points: kept as its length and a digest, so that the file
    // stays readable and a change to any point still shows.
    if let Some(series) = result.get_mut("series").and_then(|s| s.as_array_mut()) {
        for s in series {
            let points = s["series"]["points"].take();
            s["series"]["points"] = serde_json::json!({
                "count": points.as_array().map_or(0, Vec::len),
                "fnv1a64": format!("{:016x}", fnv1a64(points.to_string().as_bytes())),
            });
        }
    }
    let kept = serde_json::json!({
        "settings": file["settings"],
        "result": result,
    });
    serde_json::to_string_pretty(&kept).expect("serializes") + "\n"
}

/// FNV-1a, 64 bits: a digest that needs no dependency.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[test]
fn golden_outputs_are_unchanged() {
    let update = std::env::var("IRQLAB_GOLDEN").as_deref() == Ok("update");
    let dir = golden_dir();
    if update {
        std::fs::create_dir_all(&dir).unwrap();
    }
    // The cases are independent: run them on all cores, each in its own directory.
    let results: Vec<(&str, String)> = std::thread::scope(|s| {
        let handles: Vec<_> = CASES
            .iter()
            .map(|(name, args)| {
                s.spawn(move || {
                    let scratch = tempfile::tempdir().unwrap();
                    (*name, run_case(args, scratch.path()))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut changed = Vec::new();
    for (name, got) in results {
        let path = dir.join(format!("{name}.json"));
        if update {
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; create it with IRQLAB_GOLDEN=update cargo test -p irqlab --test golden",
                path.display()
            )
        });
        if want != got {
            let line = want
                .lines()
                .zip(got.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(want.lines().count().min(got.lines().count()));
            let show = |t: &str| t.lines().nth(line).unwrap_or("<end>").to_string();
            changed.push(format!(
                "{name}: first difference at line {}:\n  golden: {}\n  now:    {}",
                line + 1,
                show(&want),
                show(&got)
            ));
        }
    }
    assert!(
        changed.is_empty(),
        "golden outputs changed (IRQLAB_GOLDEN=update regenerates them; say why in the \
         commit):\n{}",
        changed.join("\n")
    );
}

/// Every golden file belongs to a case: a renamed or dropped case leaves no stale file behind.
#[test]
fn every_golden_file_is_a_case() {
    for entry in std::fs::read_dir(golden_dir()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let stem = name.trim_end_matches(".json");
        assert!(
            CASES.iter().any(|(c, _)| *c == stem),
            "tests/golden/{name} is no case of golden.rs: remove it or add its case"
        );
    }
}
