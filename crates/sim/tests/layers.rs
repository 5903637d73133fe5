//! The layer rules of `docs/architecture.md`, checked on the source itself: which crate may
//! depend on which, and, inside the simulator, which module may import which. A rule broken
//! here is an arrow back up the architecture (hardware that knows the OS, a driver that reaches
//! into its device's model, the kernel that knows the machine around it).
//!
//! Imports are read as the text `crate::NAME` (and `crate::{NAME, ...}`) in each module's
//! files, up to its first `#[cfg(test)]`: a test may build what it checks from any layer.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `irqlab-*` packages a crate's `[dependencies]` name.
fn irqlab_dependencies(krate: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(repo().join("crates").join(krate).join("Cargo.toml"))
        .expect("the crate's manifest");
    let manifest: toml::Table = text.parse().expect("a valid manifest");
    manifest
        .get("dependencies")
        .and_then(|d| d.as_table())
        .map(|d| {
            d.keys()
                .filter(|k| k.starts_with("irqlab-"))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_crate_graph_has_no_arrow_back_up() {
    // `stats` is the shared model; `sim`, `host` and `report` build on it alone; `cli` glues.
    assert_eq!(irqlab_dependencies("stats"), BTreeSet::new());
    for krate in ["sim", "host", "report"] {
        assert_eq!(
            irqlab_dependencies(krate),
            BTreeSet::from(["irqlab-stats".to_string()]),
            "crates/{krate} may depend on irqlab-stats only"
        );
    }
}

/// The top-level modules of `crates/sim/src` that `file` (relative to it) imports, outside
/// its tests.
fn imports(text: &str) -> BTreeSet<String> {
    let body = text.split("\n#[cfg(test)]").next().unwrap_or(text);
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for (i, _) in body.match_indices("crate::") {
        let rest = &body[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for part in group.split(',') {
                let name = ident(part.trim());
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

/// Every `.rs` file under `dir` (or `dir.rs` itself), with its text.
fn sources(src: &Path, module: &str) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let file = src.join(format!("{module}.rs"));
    if file.is_file() {
        out.push((file.clone(), std::fs::read_to_string(&file).unwrap()));
    }
    let mut stack = vec![src.join(module)];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                out.push((p, text));
            }
        }
    }
    out
}

#[test]
fn each_simulator_layer_imports_only_the_layers_below_it() {
    // Lowest first. A module may import itself and what is listed; the layers above these
    // (the assembler `scenario` with each kernel family's model, `simulation`, `experiment`,
    // the rows of `validate`, the what-ifs and sweeps) may import any layer below them, and
    // none of these imports them.
    let rules: BTreeMap<&str, &[&str]> = BTreeMap::from([
        ("engine", &[][..]),
        ("hw", &["engine"][..]),
        ("text", &["hw"][..]),
        ("devices", &["engine", "hw"][..]),
        ("workload", &["engine"][..]),
        ("topology", &["hw", "text"][..]),
        // The kernel knows the hardware's registers (hw/regs.rs: the datasheets' maps), never
        // a device's model, the machine around it or how it was assembled.
        ("kernel", &["engine", "hw", "workload"][..]),
        // A probe reads the parts it measures.
        ("probes", &["engine", "hw", "devices", "kernel"][..]),
        (
            "machine",
            &[
                "engine", "hw", "devices", "kernel", "probes", "workload", "topology",
            ][..],
        ),
        // A row judges results; it never reaches into the model, nor into the experiment that
        // runs it (which imports the rows). A row worked out on a platform's topology loads
        // that platform: `shipped` finds the named file, `scenario` is its error.
        (
            "validate",
            &[
                "result",
                "report",
                "plan",
                "uncertainty",
                "scenario",
                "shipped",
            ][..],
        ),
    ]);
    let src = repo().join("crates/sim/src");
    let mut broken = Vec::new();
    for (module, allowed) in &rules {
        let files = sources(&src, module);
        assert!(!files.is_empty(), "crates/sim/src has no module {module}");
        for (path, text) in files {
            for import in imports(&text) {
                if import != *module && !allowed.contains(&import.as_str()) {
                    broken.push(format!(
                        "{} imports crate::{import} ({module} may import {allowed:?})",
                        path.strip_prefix(&src).unwrap().display()
                    ));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "layer rules broken:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_import_reader_sees_grouped_and_plain_paths_and_skips_tests() {
    let text = "use crate::hw::pic8259::PicPair;\nuse crate::{engine::SimTime, kernel};\n\
                fn f() { crate::devices::x(); }\n#[cfg(test)]\nmod tests { use crate::scenario; }\n";
    assert_eq!(
        imports(text),
        BTreeSet::from(["hw", "engine", "kernel", "devices"].map(String::from))
    );
}
