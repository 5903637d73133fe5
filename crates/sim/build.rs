//! Embeds the shipped data files (`experiments/`, `platforms/`, `kernels/` at the repository's
//! top) in the library, so that an installed `irqlab` validates and simulates from any
//! directory (`crate::shipped`). A path on disk still wins where one is given.

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let top = manifest.join("../..");
    let mut files = Vec::new();
    for dir in ["experiments", "platforms", "kernels"] {
        let d = top.join(dir);
        // A directory: cargo reruns the script when anything below it changes.
        println!("cargo::rerun-if-changed={}", d.display());
        collect(&top, &d, &mut files);
    }
    files.sort();
    let mut out = String::from(
        "/// The shipped data files: (path from the repository's top, contents).\n\
         pub static FILES: &[(&str, &str)] = &[\n",
    );
    for rel in &files {
        out.push_str(&format!(
            "    ({rel:?}, include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/../../{rel}\"))),\n"
        ));
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it")).join("shipped.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
}

/// Every `*.toml` below `dir`, as paths from `top` with `/` separators.
fn collect(top: &Path, dir: &Path, files: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(top, &p, files);
        } else if p.extension().is_some_and(|x| x == "toml") {
            let rel = p.strip_prefix(top).expect("below the top");
            let rel: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            files.push(rel.join("/"));
        }
    }
}
