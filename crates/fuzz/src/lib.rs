//! Fuzz targets over irqlab's parsers of what the kernel and other irqlab runs write: one body
//! per parser, `fn(&[u8])`, which must never panic whatever the bytes. The same bodies run
//!
//! - under libFuzzer, coverage-guided, on nightly: `fuzz/` is a cargo-fuzz crate whose targets
//!   call these functions (`fuzz/run.sh`, `cargo fuzz run NAME`);
//! - on stable, in CI, by this crate's `irqlab-fuzz` runner: the committed corpus replayed, then
//!   random mutations of it for a bounded time ([`mutate`]);
//! - in `cargo test`: every committed corpus file once (`tests/corpus.rs`), so an input that
//!   once crashed a parser, once added to `fuzz/corpus/`, stays a regression test.
//!
//! `fuzz/README.md` says where each corpus file came from.

pub mod mutate;
pub mod tree;

use std::path::Path;

/// A fuzz target: its name (the `fuzz/corpus/` and `fuzz/fuzz_targets/` name), the body, and
/// tokens the stable runner's mutator splices in (libFuzzer finds its own).
pub struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]),
    pub tokens: &'static [&'static str],
}

/// Every target, in the order `fuzz/run.sh` runs them.
pub const TARGETS: &[Target] = &[
    Target {
        name: "proc_interrupts",
        run: proc_interrupts,
        tokens: &[
            "CPU",
            "CPU0",
            ":",
            " ",
            "\n",
            "-edge",
            "-fasteoi",
            " Level",
            " Edge",
            "IR-",
            "IO-APIC",
            "PCI-MSI",
            "PCI-MSIX-0000:00:02.0",
            "XT-PIC-XT",
            "GICv3",
            ", ",
            "NMI:",
            "ERR:",
            "4294967295",
            "18446744073709551615",
            "18446744073709551616",
            " -",
            "-",
        ],
    },
    Target {
        name: "ringbuf_page",
        run: ringbuf_page,
        tokens: &[],
    },
    Target {
        name: "trace_format",
        run: trace_format,
        tokens: &[
            "name:",
            "ID:",
            "format:",
            "\tfield:",
            "offset:",
            "size:",
            "signed:",
            ";",
            "\n",
            "__data_loc char[] ",
            "unsigned int ",
            "char comm[16]",
            "18446744073709551615",
            "4294967295",
            "65535",
            "65536",
        ],
    },
    Target {
        name: "sysfs_tree",
        run: sysfs_tree,
        tokens: &[
            "\n== ",
            "proc/interrupts\n",
            "proc/irq/",
            "/smp_affinity\n",
            "/smp_affinity_list\n",
            "/effective_affinity_list\n",
            "sys/kernel/irq/",
            "/type\n",
            "/chip_name\n",
            "sys/bus/pci/devices/0000:00:03.0/",
            "msi_irqs/",
            "msix",
            "msi",
            "config\n",
            "sys/devices/system/cpu/",
            "online\n",
            "cpu0/topology/core_cpus_list\n",
            "cache/index0/shared_cpu_list\n",
            "sys/class/net/eth0/device -> ",
            "../",
            "0-3",
            "ffffffff,ffffffff",
            "4294967295",
            "-",
        ],
    },
    Target {
        name: "scenario_toml",
        run: scenario_toml,
        tokens: &[
            "\n",
            " = ",
            "[",
            "]",
            "[[device]]",
            "\"",
            "<shipped>/platforms/",
            "1e308",
            "-1",
            "nan",
            "inf",
            "0",
            "18446744073709551615",
            "set = [\"",
            ".",
            "true",
        ],
    },
    Target {
        name: "sweep_shard",
        run: sweep_shard,
        tokens: &[
            "\"",
            ":",
            ",",
            "{",
            "}",
            "[",
            "]",
            "null",
            "\"NaN\"",
            "\"inf\"",
            "\"-inf\"",
            "18446744073709551615",
            "18446744073709551616",
            "-1",
            "1e400",
            "\"kind\": \"run\"",
            "\"kind\": \"draw\"",
            "\"hdr_v2_base64\": \"",
            "HISTFAAAA",
        ],
    },
];

/// The target named `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// `/proc/interrupts` (`irqlab_host::interrupts`): the table, and what the inventory asks of
/// each row.
pub fn proc_interrupts(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(table) = irqlab_host::interrupts::Table::parse(text) {
        for row in &table.rows {
            let _ = (
                row.is_numbered(),
                row.delivery(),
                row.trigger(),
                row.remapped(),
            );
        }
        let _ = table.irq(0);
    }
}

/// One page of a per-CPU `trace_pipe_raw` (`irqlab_host::ringbuf::parse_page`), with each
/// record read through the 6.18 `irq` and `irq_vectors` formats as `measure irqs` reads them.
pub fn ringbuf_page(data: &[u8]) {
    let formats = formats_6_18();
    let _ = irqlab_host::ringbuf::lost_before(data);
    let _ = irqlab_host::ringbuf::parse_page(data, |_ts, rec| {
        let id = irqlab_host::ringbuf::record_type(rec);
        for f in formats.iter().filter(|f| f.id == id) {
            for field in f.fields.values() {
                let _ = (field.int(rec), field.chars(rec), field.str(rec));
            }
        }
    });
}

/// An event's `format` file (`irqlab_host::ringbuf::Format::parse`), and its fields read from
/// records of several lengths.
pub fn trace_format(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(f) = irqlab_host::ringbuf::Format::parse(text) {
        let record: Vec<u8> = (0..=255u8).collect();
        for field in f.fields.values() {
            for len in [0, 1, 8, 16, 64, 256] {
                let rec = &record[..len];
                let _ = (field.int(rec), field.chars(rec), field.str(rec));
            }
        }
    }
}

/// A `/proc` and `/sys` tree ([`tree`]: the input is a small archive of files and symlinks,
/// written into a temporary directory) read as `irqlab host` and `plan affinity --host` read
/// the host's, and the inventory rendered.
pub fn sysfs_tree(data: &[u8]) {
    let Ok(dir) = scratch_dir() else {
        return;
    };
    tree::unpack(data, dir.path());
    read_tree(dir.path());
}

/// A temporary directory for one input, in memory where `/dev/shm` is (the 6.18 fixture's
/// tree, 250 files, took 390 ms to write, read and remove on the project's VM disk, 15 ms
/// there).
fn scratch_dir() -> std::io::Result<tempfile::TempDir> {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::Builder::new()
            .prefix("irqlab-fuzz")
            .tempdir_in(shm)
        {
            return Ok(d);
        }
    }
    tempfile::tempdir()
}

/// What `irqlab host` and `plan affinity --host` read of a tree under `root`.
pub fn read_tree(root: &Path) {
    if let Ok(inv) = irqlab_host::inventory::collect(root, None) {
        let _ = irqlab_report::inventory_text(&inv);
    }
    let _ = irqlab_host::affinity::read(root);
    let _ = irqlab_host::pci::functions(root);
}

/// A scenario file (`irqlab_sim::scenario::Scenario::load`): loaded, checked, its settings
/// and ranges listed, as `irqlab show` and `sim` do before a run. Not run.
pub fn scenario_toml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if !names_only_safe_files(text) {
        return;
    }
    let Ok(dir) = scratch_dir() else {
        return;
    };
    let path = dir.path().join("scenario.toml");
    if std::fs::write(&path, text).is_err() {
        return;
    }
    if let Ok(sim) = irqlab_sim::scenario::Scenario::load(&path, &[]) {
        let _ = (sim.settings(), sim.ranges(), sim.seed(), sim.samples());
    }
}

/// The scenario names its platform and kernel files; the loader reads them. A fuzzed name must
/// not make it read the host's files (`/dev/zero` would never end), so only shipped files
/// (`<shipped>/...`, read from the binary) and names inside the scenario's own temporary
/// directory are let through.
fn names_only_safe_files(text: &str) -> bool {
    let Ok(doc) = text.parse::<toml::Table>() else {
        return true; // refused before any other file is read
    };
    ["platform", "kernel"]
        .iter()
        .all(|key| match doc.get(*key) {
            Some(toml::Value::String(name)) => {
                name.starts_with("<shipped>/")
                    || Path::new(name)
                        .components()
                        .all(|c| matches!(c, std::path::Component::Normal(_)))
            }
            _ => true,
        })
}

/// A sweep shard's result file as `sweep merge` reads it (`irqlab_report::json::read_result`
/// of a `sweep-shard` envelope), and each run point's histograms decoded.
pub fn sweep_shard(data: &[u8]) {
    use irqlab_sim::sweep::{PointResult, ShardResults};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok((_, shard)) = irqlab_report::json::read_result::<ShardResults>(
        text,
        irqlab_report::json::Kind::SweepShard,
        "not a shard's result",
    ) else {
        return;
    };
    for p in &shard.points {
        let _ = p.index();
        if let PointResult::Run { metrics, .. } = p {
            for m in metrics {
                if let Ok(h) = irqlab_stats::LatencyHistogram::from_serialized(&m.histogram) {
                    let _ = (h.summary(), h.quantile_ns(0.99), h.mean_ns(), h.stdev_ns());
                }
            }
        }
    }
}

/// The `irq` and `irq_vectors` event formats of the 6.18 capture (the host crate's fixture),
/// compiled in so that the target reads no file.
fn formats_6_18() -> &'static [irqlab_host::ringbuf::Format] {
    use std::sync::OnceLock;
    static FORMATS: OnceLock<Vec<irqlab_host::ringbuf::Format>> = OnceLock::new();
    FORMATS.get_or_init(|| {
        FORMAT_TEXTS
            .iter()
            .map(|t| irqlab_host::ringbuf::Format::parse(t).expect("a captured format parses"))
            .collect()
    })
}

macro_rules! fixture_format {
    ($sys:literal, $name:literal) => {
        include_str!(concat!(
            "../../host/tests/fixtures/tracefs/6.18-x86_64/events/",
            $sys,
            "/",
            $name,
            "/format"
        ))
    };
}

const FORMAT_TEXTS: &[&str] = &[
    fixture_format!("irq", "irq_handler_entry"),
    fixture_format!("irq", "irq_handler_exit"),
    fixture_format!("irq", "softirq_entry"),
    fixture_format!("irq", "softirq_exit"),
    fixture_format!("irq", "softirq_raise"),
    fixture_format!("irq", "tasklet_entry"),
    fixture_format!("irq", "tasklet_exit"),
    fixture_format!("irq_vectors", "local_timer_entry"),
    fixture_format!("irq_vectors", "local_timer_exit"),
];
