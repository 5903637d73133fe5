//! Seed 004 (the 1998 ISA PC): its validation rows, and the mechanisms behind them.
//!
//! As for seeds 000 and 002, every row must pass except those in `KNOWN_GAPS`, and a listed
//! row that starts to pass fails the test until it is taken off the list.

mod common;

use irqlab_stats::results::Verdict;

use irqlab_sim::result::RunResult;
use irqlab_sim::scenario::Scenario;
use irqlab_stats::fence::step_period;
use std::path::{Path, PathBuf};

/// Rows the model does not reproduce yet, and why (see the README's "Validation" section).
const KNOWN_GAPS: &[(&str, Verdict, &str)] = &[
    (
        "pps-min",
        Verdict::Fail,
        "the fastest path is 3.42 us, under the published ~4 us (3.5-5 us): every step is \
         modelled (INTA, two 8259 writes at ISA speed with I/O recovery, the call chain, the \
         card's decode) but the interrupt acknowledge and the PIIX4's internal register timing \
         are estimates",
    ),
    (
        "pps-isa-quantum",
        Verdict::Fail,
        "only the idle samples form a clean block one ISA clock wide; cache misses after the \
         last ISA cycle (host-clock quantised) and the loaded phases blur the rest, so the \
         whole run's step period depends on the seed (within 10% of 120 ns for 2 of seeds 1-8)",
    ),
    (
        "pps-load",
        Verdict::Undecided,
        "make world's p99 (12.2 us) is above idle's (4.0 us), but idle's 400 samples put its \
         p99 anywhere from 3.9 to 19.9 us (95% order-statistic interval: the top ranks include a \
         clock collision), which overlaps make world's 7.8-25.4 us; about 1,700 samples per phase \
         would decide it",
    ),
];

fn scenario_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/seed004/pps.toml")
}

/// A short run on an idle machine with warm caches (the seed's samples 1100-1500), `extra`
/// overrides on top.
fn idle(extra: &[&str], samples: u64) -> RunResult {
    let mut set: Vec<String> = [
        "workload.phase.0.busy_fraction=0.005",
        "workload.phase.0.cold_fraction=0.0",
        "workload.phase.0.rates.ncr0=0.1",
        "workload.phase.0.rates.sc0=0.0",
    ]
    .iter()
    .chain(extra)
    .map(|s| s.to_string())
    .collect();
    set.dedup();
    let s = Scenario::load(scenario_path(), &set).expect("scenario loads");
    run(&s, s.file.seed, samples)
}

/// One replication of `samples` pulses.
fn run(s: &Scenario, seed: u64, samples: u64) -> RunResult {
    s.simulate(seed, samples, 0, 1, None).expect("runs")
}

/// Every sample in counter counts, and the nanoseconds a count is.
fn counts(r: &RunResult) -> (&[u64], f64) {
    let c = r.counts.as_ref().expect("the probe counts");
    (&c.values, c.count_ns)
}

fn latency(r: &RunResult) -> &irqlab_stats::LatencyHistogram {
    r.metric("pps_latency").expect("the probe's metric")
}

fn counter(r: &RunResult, name: &str) -> u64 {
    r.counters
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no counter {name}"))
        .value
}

#[test]
fn seed004_rows() {
    let report = common::validate_rows("pps-*", None, &["pps-min", "pps-isa-quantum", "pps-load"]);
    common::check_rows(&report, KNOWN_GAPS);
}

/// The histogram's step period is the ISA clock's: at PCICLK/3 (11.1 MHz) it follows.
#[test]
fn the_step_period_follows_the_isa_clock() {
    for (divisor, period_ns) in [(4, 120.0), (3, 90.0)] {
        let set = format!("platform.link.isa.pci_clock_divisor={divisor}");
        let r = idle(&[&set], 400);
        let (values, count_ns) = counts(&r);
        let p = step_period(values, count_ns, 40.0, 400.0).expect("edges");
        assert!(
            (p.period_ns / period_ns - 1.0).abs() < 0.1,
            "SYSCLK = PCICLK/{divisor}: steps every {:.1} ns, expected {period_ns}",
            p.period_ns
        );
    }
}

/// Each SYSCLK added to an 8-bit ISA cycle delays the timestamp by two SYSCLKs: the stub's IMR
/// write and EOI come before it (the status read comes after).
#[test]
fn two_isa_cycles_precede_the_timestamp() {
    let min = |clocks: u32| {
        let set = format!("platform.link.isa.io8_clocks={clocks}");
        latency(&idle(&[&set], 300)).min_ns().expect("samples") as f64
    };
    let d = min(7) - min(6);
    assert!(
        (d - 240.0).abs() < 40.0,
        "one more SYSCLK per cycle moved the minimum {d} ns"
    );
}

/// `--trace` on the ISA PC: the analyzer sits on the parallel port's ISA bus and logs the CPU's
/// I/O cycles there (the handler's status read of the port among them), each at its first
/// SYSCLK edge, one cycle after another; watching changes nothing the run measures.
#[test]
fn the_trace_shows_the_cpus_cycles_on_the_isa_bus_and_changes_nothing() {
    use irqlab_sim::hw::pcie::{Dir, TlpKind};
    let s = Scenario::load(scenario_path(), &[]).expect("scenario loads");
    // Enough cycles to reach the first pulse's interrupt (the clock's and the RTC's come
    // before it, a second into the run).
    let traced = s.simulate(s.file.seed, 3, 20_000, 1, None).expect("runs");
    let plain = run(&s, s.file.seed, 3);
    // Every I/O cycle the bus ran is in the trace, once.
    assert_eq!(traced.trace.len() as u64, counter(&traced, "isa_io_cycles"));
    assert!(plain.trace.is_empty());
    assert_eq!(counts(&traced), counts(&plain), "every sample as it was");
    assert_eq!(traced.counters, plain.counters);
    let sysclk_ps = 120_000;
    for r in &traced.trace {
        assert_eq!(r.dir, Dir::Down, "a reply rides in its cycle: {r:?}");
        assert!(
            matches!(r.tlp.kind, TlpKind::IoRead | TlpKind::IoWrite),
            "{r:?}"
        );
        assert_eq!(
            r.time_ps % sysclk_ps,
            0,
            "a cycle starts on a SYSCLK edge: {r:?}"
        );
    }
    for w in traced.trace.windows(2) {
        assert!(
            w[1].time_ps >= w[0].time_ps + 3 * sysclk_ps,
            "one cycle at a time on the bus: {w:?}"
        );
    }
    // The handler reads the port's status register (nACK latched).
    assert!(traced
        .trace
        .iter()
        .any(|r| r.tlp.kind == TlpKind::IoRead && r.tlp.addr == 0x379));
}

/// With `pseudo-device sl`, net-class work (the ATM card's interrupts, splimp) holds off the
/// tty-class parallel port, and IRQ 7 is deferred more often.
#[test]
fn slip_merges_net_into_tty() {
    let net = [
        "workload.phase.0.busy_fraction=0.5",
        "workload.phase.0.rates.en0=2000.0",
        "workload.phase.0.section.2.per_busy_s=5000.0",
    ];
    let deferred = |slip: &str| {
        let mut set = net.to_vec();
        set.push(slip);
        let s = Scenario::load(
            scenario_path(),
            &set.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
        .expect("loads");
        let r = run(&s, s.file.seed, 300);
        counter(&r, "irq7_deferred_by_cpl")
    };
    let (without, with) = (deferred("kernel.slip=false"), deferred("kernel.slip=true"));
    assert!(
        with > 2 * without.max(1),
        "deferred: {without} without sl, {with} with"
    );
}

/// A deferred pulse is replayed, by doreti or by splx, and every pulse is timestamped once.
#[test]
fn deferred_pulses_are_replayed_once() {
    let s = Scenario::load(
        scenario_path(),
        &[
            "workload.phase.0.section.0.per_busy_s=20000.0".into(),
            "workload.phase.0.busy_fraction=0.9".into(),
        ],
    )
    .expect("loads");
    let r = run(&s, s.file.seed, 200);
    let deferred = counter(&r, "irq7_deferred_by_cpl");
    assert!(deferred > 0);
    assert_eq!(
        deferred,
        counter(&r, "irq7_replayed_by_doreti") + counter(&r, "irq7_replayed_by_splz")
    );
    assert_eq!(counter(&r, "pulses_timestamped"), 200);
    assert_eq!(counter(&r, "pulses_missed"), 0);
    assert_eq!(counts(&r).0.len(), 200);
}

#[test]
fn same_seed_same_samples() {
    let a = idle(&[], 100);
    let b = idle(&[], 100);
    assert_eq!(counts(&a).0, counts(&b).0);
    let s = Scenario::load(scenario_path(), &[]).expect("loads");
    let c = run(&s, 5, 100);
    assert_ne!(counts(&a).0, counts(&c).0);
}

/// `--replications` means what it means for every scenario: the samples are split among the
/// replications, and each replication's share passes through the phases in proportion.
#[test]
fn replications_split_the_samples_and_count_progress() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let s = Scenario::load(scenario_path(), &[]).expect("loads");
    let progress = Arc::new(AtomicU64::new(0));
    let r = s
        .simulate(s.file.seed, 60, 0, 3, Some(progress.clone()))
        .expect("runs");
    assert_eq!(progress.load(Ordering::Relaxed), 60, "every pulse, once");
    assert_eq!(latency(&r).count(), 60);
    // Replication 0 is the plain run of its share with the scenario's seed (20 pulses of the
    // first phase either way: 1100 of 4400 is 5 of 20 only for a run of 80).
    let plain = run(&s, s.file.seed, 20);
    assert_eq!(counts(&r).0, counts(&plain).0);
    // The phases follow each share: four replications of 4400 give each phase its share of
    // the run, not the first 1467 samples' phases only.
    let r = s.simulate(s.file.seed, 4400, 0, 4, None).expect("runs");
    for phase in ["command-line", "idle", "make-world"] {
        let h = r.phase("pps_latency", Some(phase)).expect("a phase metric");
        assert!(h.count() > 0, "{phase} has samples");
    }
}

#[test]
fn bad_configurations_are_refused_with_the_flag_and_a_fix() {
    let err = |set: &str| {
        Scenario::load(scenario_path(), &[set.to_string()])
            .expect_err(set)
            .to_string()
    };
    for (set, says) in [
        ("device.0.irq=7", "IRQ 7 is already the parallel port's"),
        ("device.0.irq=16", "the 8259 pair has lines 0 to 15"),
        ("device.1.class=disk", "expected one of `tty`, `net`, `bio`"),
        (
            "workload.phase.1.until_sample=50",
            "does not come after the previous phase's 1100",
        ),
        (
            "workload.phase.4.until_sample=4000",
            "before the run's 4400 samples",
        ),
        (
            "workload.phase.0.section.0.kind=splvm",
            "expected one of `irqs-off`, `spl-tty`",
        ),
        (
            "workload.cold_fraction=0.5",
            "each phase gives its own load",
        ),
        ("delivery=\"msi\"", "the 8259 pair alone"),
        ("device.2.kind=\"pcie\"", "unknown field `bus`"),
        ("platform.link.isa.io8_clockz=6", "no key 'io8_clockz'"),
        // The board's devices are parts of the platform, read and checked as such.
        ("platform.part.xrpu.counter_bits=40", "give 1 to 32 bits"),
        ("platform.part.rtc.periodic_hz=1.0", "outside the range"),
        ("platform.part.lpt.irq=8", "IRQ 8 is already the RTC's"),
        ("device.0.decode_clocks=5000", "outside the range"),
        // The topology with the cards in it is checked as the files load, not at the run.
        ("platform.link.isa.clock_hz=5.0", "outside the range"),
        (
            "platform.link.xrpu-decode.up=\"nosuch\"",
            "no [part.nosuch] table",
        ),
        ("platform.cpu.clock_hz=fast", "is a decimal number"),
        // A window shorter than what a sample remembers, or one that leaves nothing to skip.
        ("probe.window_ms=0.5", "outside the range"),
        ("probe.window_ms=950", "outside the range"),
    ] {
        let e = err(set);
        assert!(e.contains(set) && e.contains(says), "--set {set}: {e}");
    }
}

/// A card's bad value is pointed at where it stands, though `[[device]]` holds several kinds:
/// the file is read with the kind's own table.
#[test]
fn a_bad_card_value_names_its_line_and_column() {
    let (e, at) = refused_edit(
        "handler_instructions = 3000",
        "handler_instructions = \"many\"",
    );
    assert!(
        e.contains(&format!("{at}:24")) && e.contains("whole number"),
        "{e}"
    );
}

#[test]
fn an_unknown_key_names_file_line_and_column() {
    let (e, at) = refused_edit("jitter_ns = 50.0", "jitter_us = 0.05");
    assert!(
        e.contains(&format!("{at}:1")) && e.contains("unknown field `jitter_us`"),
        "{e}"
    );
}

/// Load a copy of the scenario with the first `from` made `to`, which must be refused: the
/// error, and `PATH:LINE` of the edited line in the copy.
fn refused_edit(from: &str, to: &str) -> (String, String) {
    let text = std::fs::read_to_string(scenario_path()).expect("reads");
    let bad = text.replacen(from, to, 1);
    let line = bad.lines().position(|l| l.starts_with(to)).expect("edited") + 1;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("pps.toml");
    std::fs::write(&path, bad).expect("writes");
    let e = Scenario::load(&path, &[]).expect_err(to).to_string();
    (e, format!("{}:{line}", path.display()))
}

#[test]
fn the_pc_is_a_platform_of_the_one_schema_and_says_what_each_machine_lacks() {
    // The workstation's exerciser scenario on the PC: the platform file reads (one schema),
    // and the PCIe-era machine says what this board does not have.
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(repo.join("experiments/seed000/ws.toml")).expect("reads");
    let text = text.replace("ws-2008-core2-ich9.toml", "pc-1998-k6-233-tx97.toml");
    let dir = std::env::temp_dir().join(format!("irqlab-schema-{}", std::process::id()));
    let sub = dir.join("experiments/seed000");
    std::fs::create_dir_all(&sub).expect("temp dir");
    std::fs::create_dir_all(dir.join("platforms")).expect("temp dir");
    std::fs::create_dir_all(dir.join("kernels")).expect("temp dir");
    for f in [
        "platforms/pc-1998-k6-233-tx97.toml",
        "kernels/linux-2.6.18-i386-up.toml",
    ] {
        std::fs::copy(repo.join(f), dir.join(f)).expect("copies");
    }
    let path = sub.join("ws.toml");
    std::fs::write(&path, text).expect("writes");
    let load = |path: &std::path::Path| {
        irqlab_sim::scenario::Scenario::load(path, &[])
            .expect_err("the PCIe-era machine on the PC")
            .to_string()
    };
    let e = load(&path);
    assert!(
        e.contains("device.0.port") && e.contains("it has none (no part of kind \"bridge\")"),
        "{e}"
    );
    // The workstation without its [ich]: the machine reads its interrupt block from it.
    let ws =
        std::fs::read_to_string(repo.join("platforms/ws-2008-core2-ich9.toml")).expect("reads");
    let (head, rest) = ws.split_once("\n[ich]\n").expect("an [ich]");
    let tail = &rest[rest.find("\n# ---- The topology").expect("the topology")..];
    std::fs::write(dir.join("platforms/ws.toml"), format!("{head}\n{tail}")).expect("writes");
    let text = std::fs::read_to_string(&path).expect("reads");
    std::fs::write(&path, text.replace("pc-1998-k6-233-tx97.toml", "ws.toml")).expect("writes");
    let e = load(&path);
    assert!(
        e.contains("platform.ich") && e.contains("has no [ich] section"),
        "{e}"
    );
    // And the PC's own machine refuses an [ich] it would not read.
    let pc =
        std::fs::read_to_string(repo.join("platforms/pc-1998-k6-233-tx97.toml")).expect("reads");
    let ich = &ws[ws.find("\n[ich]\n").expect("an [ich]")
        ..ws.find("\n# ---- The topology").expect("the topology")];
    let (head, tail) = pc.split_once("\n[cpu]\n").expect("a [cpu]");
    std::fs::write(
        dir.join("platforms/pc-1998-k6-233-tx97.toml"),
        format!("{head}\n{ich}\n[cpu]\n{tail}"),
    )
    .expect("writes");
    std::fs::create_dir_all(dir.join("experiments/seed004")).expect("temp dir");
    for f in [
        "experiments/seed004/pps.toml",
        "kernels/freebsd-1998-07-i386.toml",
    ] {
        std::fs::copy(repo.join(f), dir.join(f)).expect("copies");
    }
    let e = Scenario::load(dir.join("experiments/seed004/pps.toml"), &[])
        .expect_err("an [ich] on the PC")
        .to_string();
    std::fs::remove_dir_all(&dir).ok();
    assert!(e.to_string().contains("remove [ich]"), "{e}");
}

#[test]
fn keys_a_platform_may_leave_out_are_still_reached_by_set() {
    // `--set` edits the files as read, with every default in place: a key at its default (the
    // crystal's error, the user-mode gate's extra cycles) is there to be set.
    let s = Scenario::load(scenario_path(), &["platform.crystal_ppm=5".to_string()]).unwrap();
    assert_eq!(s.platform.crystal_ppm, 5.0);
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let ws = irqlab_sim::scenario::Scenario::load(
        repo.join("experiments/seed000/ws.toml"),
        &["platform.cpu.privilege_change_cycles=30".to_string()],
    )
    .unwrap();
    assert_eq!(ws.platform.cpu.privilege_change_cycles, 30.0);
}

/// The two-sample Kolmogorov-Smirnov statistic of two histograms: the largest gap between
/// their empirical distribution functions (their samples are exact counter counts, 11 ns
/// apart, which the histogram's 1 ns buckets keep apart).
fn ks_statistic(a: &irqlab_stats::LatencyHistogram, b: &irqlab_stats::LatencyHistogram) -> f64 {
    let (na, nb) = (a.count() as f64, b.count() as f64);
    let (mut xa, mut xb) = (a.iter_buckets(1).peekable(), b.iter_buckets(1).peekable());
    let (mut fa, mut fb, mut d) = (0.0, 0.0, 0.0f64);
    loop {
        let next = match (xa.peek(), xb.peek()) {
            (None, None) => break,
            (Some(&(va, _)), Some(&(vb, _))) => va.min(vb),
            (Some(&(v, _)), None) | (None, Some(&(v, _))) => v,
        };
        while let Some((_, n)) = xa.next_if(|&(v, _)| v == next) {
            fa += n as f64 / na;
        }
        while let Some((_, n)) = xb.next_if(|&(v, _)| v == next) {
            fb += n as f64 / nb;
        }
        d = d.max((fa - fb).abs());
    }
    d
}

/// A windowed run (`[probe] window_ms`, which `validate --uncertainty`'s draws of this run
/// take) draws its samples from the law of the whole timeline's, phase by phase: two seeds of
/// the whole 4,400-pulse run against eight windowed ones, a two-sample Kolmogorov-Smirnov test
/// per phase at a 0.1% level each (critical D = 1.95 sqrt((n + m) / nm)); the largest D here
/// is about two thirds of its critical value. It fails for a skip that leaves the workload in the wrong
/// state: ending every skip idle gives make world D 0.100 against 0.035, ending every skip busy
/// gives command-line work D 0.119 against 0.047. The windowed runs simulate about 2% of the
/// timeline.
#[test]
fn a_windowed_run_draws_the_whole_timelines_samples() {
    // Long stretches, from the ends of their ranges, so that the state a skip ends in is the
    // chain's to draw: a 20 ms window alone would forget a wrong one in the phases whose
    // stretches and gaps are a few ms.
    let load: Vec<String> = [
        "workload.phase.0.busy_ms=100",
        "workload.phase.4.busy_ms=500",
        "workload.phase.4.busy_fraction=0.85",
    ]
    .map(String::from)
    .to_vec();
    let whole = Scenario::load(scenario_path(), &load).expect("loads");
    let mut set = load.clone();
    set.push("probe.window_ms=20".to_string());
    let windowed = Scenario::load(scenario_path(), &set).expect("loads");
    let phases = [
        "command-line",
        "idle",
        "cvs-over-nfs-atm",
        "light",
        "make-world",
    ];
    // Each phase's samples over the seeds, and the runs' events and skipped time.
    let merged = |s: &Scenario, seeds: std::ops::Range<u64>| {
        let mut hists = vec![irqlab_stats::LatencyHistogram::new(); phases.len()];
        let (mut events, mut skipped_ms) = (0, 0);
        for seed in seeds {
            let r = run(s, seed, 4400);
            for (h, phase) in hists.iter_mut().zip(phases) {
                h.merge(r.phase("pps_latency", Some(phase)).expect("phase"));
            }
            events += counter(&r, "events_simulated");
            skipped_ms += r
                .counters
                .iter()
                .find(|c| c.name == "ms_skipped")
                .map_or(0, |c| c.value);
        }
        (hists, events, skipped_ms)
    };
    let (a, a_events, a_skipped) = merged(&whole, 1..3);
    let (b, b_events, b_skipped) = merged(&windowed, 11..19);
    assert_eq!(a_skipped, 0, "the whole timeline skips nothing");
    assert!(
        b_skipped > 8 * 4_000_000,
        "the windowed runs skip most of theirs: {b_skipped} ms"
    );
    assert!(
        b_events < a_events / 5,
        "and simulate far fewer events: {b_events} for 8 runs, {a_events} for 2"
    );
    let mut report = Vec::new();
    let mut failed = false;
    for (phase, (ha, hb)) in phases.iter().zip(a.iter().zip(&b)) {
        let (n, m) = (ha.count() as f64, hb.count() as f64);
        let d = ks_statistic(ha, hb);
        let critical = 1.95 * ((n + m) / (n * m)).sqrt();
        failed |= d > critical;
        report.push(format!(
            "{phase}: D {d:.4} (critical {critical:.4}); p50 {:?} / {:?}, p90 {:?} / {:?}",
            ha.quantile_ns(0.5).ok().flatten(),
            hb.quantile_ns(0.5).ok().flatten(),
            ha.quantile_ns(0.9).ok().flatten(),
            hb.quantile_ns(0.9).ok().flatten(),
        ));
    }
    eprintln!("{}", report.join("\n"));
    assert!(!failed, "{}", report.join("\n"));
}
