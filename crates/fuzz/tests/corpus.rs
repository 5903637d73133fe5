//! The committed fuzz corpus (`fuzz/corpus/`, origins in `fuzz/README.md`): every file runs
//! through its target without a panic (an input that once crashed a parser stays a regression
//! test), and the seeds from real kernels are what their parsers accept, so that fuzzing starts
//! deep in each parser rather than at its first error.

use irqlab_fuzz::{target, TARGETS};
use std::path::{Path, PathBuf};

fn corpus(name: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(name);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let data = std::fs::read(&p).unwrap();
            (p, data)
        })
        .collect()
}

/// Seeds from real files, not inputs saved from a crash (`crash-*`), as bytes.
fn seed_bytes(name: &str) -> Vec<(PathBuf, Vec<u8>)> {
    corpus(name)
        .into_iter()
        .filter(|(p, _)| {
            !p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("crash-")
        })
        .collect()
}

/// [`seed_bytes`] of a text format.
fn seeds(name: &str) -> Vec<(PathBuf, String)> {
    seed_bytes(name)
        .into_iter()
        .map(|(p, d)| (p, String::from_utf8(d).unwrap()))
        .collect()
}

#[test]
fn every_corpus_file_runs_through_its_target_without_a_panic() {
    for t in TARGETS {
        let files = corpus(t.name);
        assert!(!files.is_empty(), "no corpus for {}", t.name);
        for (path, data) in files {
            eprintln!("{}: {}", t.name, path.display());
            (t.run)(&data);
        }
    }
    assert!(target("nope").is_none());
}

#[test]
fn proc_interrupts_seeds_parse() {
    for (path, text) in seeds("proc_interrupts") {
        let t = irqlab_host::interrupts::Table::parse(&text)
            .unwrap_or_else(|e| panic!("{}:{}: {}", path.display(), e.0, e.1));
        assert!(t.rows.len() > 5, "{}", path.display());
    }
}

#[test]
fn trace_format_and_ringbuf_page_seeds_parse() {
    let mut formats = 0;
    for (path, text) in seeds("trace_format") {
        // header_page and header_event describe the page, not an event: no name or ID.
        if path.to_string_lossy().contains("header_") {
            continue;
        }
        let f = irqlab_host::ringbuf::Format::parse(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(f.fields.contains_key("common_type"), "{}", path.display());
        formats += 1;
    }
    assert!(formats >= 19, "{formats} formats");
    for (path, page) in seed_bytes("ringbuf_page") {
        let info = irqlab_host::ringbuf::parse_page(&page, |_, _| {})
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(info.events > 10, "{}: {info:?}", path.display());
    }
}

/// The trees reach the NICs and their vectors, as `plan affinity --host` reads them.
#[test]
fn sysfs_tree_seeds_reach_the_nics_and_vectors() {
    for (path, data) in seed_bytes("sysfs_tree") {
        let dir = tempfile::tempdir().unwrap();
        irqlab_fuzz::tree::unpack(&data, dir.path());
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let inventory = irqlab_host::inventory::collect(dir.path(), None)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            inventory.irqs.iter().any(|i| !i.devices.is_empty()),
            "{name}: no IRQ joined to a PCI function"
        );
        if name.starts_with("6.18-firecracker-fixture") {
            continue; // the fixture has no CPU or network part (capture-host.sh)
        }
        let host =
            irqlab_host::affinity::read(dir.path()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let eth0 = host.nics.iter().find(|n| n.name == "eth0");
        let irqs = eth0.map_or(0, |n| n.irqs.len());
        assert!(irqs >= 3, "{name}: eth0 has {irqs} IRQs: {:?}", host.nics);
    }
}

#[test]
fn scenario_and_shard_seeds_load() {
    for (path, _) in seeds("scenario_toml") {
        irqlab_sim::scenario::Scenario::load(&path, &[])
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    for (path, text) in seeds("sweep_shard") {
        irqlab_report::json::read_result::<irqlab_sim::sweep::ShardResults>(
            &text,
            irqlab_report::json::Kind::SweepShard,
            "a shard",
        )
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}
