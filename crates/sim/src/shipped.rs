//! The data files shipped inside irqlab: every experiment, scenario, platform and kernel of the
//! repository (`experiments/`, `platforms/`, `kernels/`), embedded when the library is built.
//! An installed `irqlab` thus validates and runs the shipped scenarios from any directory.
//!
//! A shipped file has a path under the virtual root [`ROOT`] (`<shipped>/platforms/...`), which
//! every loader reads through [`read`]; a relative name inside it (a scenario's
//! `platform = "../../platforms/x.toml"`) resolves against it as on disk. A path on disk is
//! always read from disk: the shipped copy is only the default.

use std::path::{Component, Path, PathBuf};

include!(concat!(env!("OUT_DIR"), "/shipped.rs"));

/// The virtual root of the shipped files, as paths and messages show it.
pub const ROOT: &str = "<shipped>";

/// The shipped experiments directory.
pub fn experiments_dir() -> PathBuf {
    Path::new(ROOT).join("experiments")
}

/// Whether `path` is under [`ROOT`].
pub fn is_shipped(path: &Path) -> bool {
    path.components().next() == Some(Component::Normal(ROOT.as_ref()))
}

/// `path` with `.` and `a/..` folded away, as text with `/` separators (after [`ROOT`]).
fn key(path: &Path) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    for c in path.components().skip(1) {
        match c {
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(parts.join("/"))
}

/// `path` (under [`ROOT`]) in its shortest form: `<shipped>/experiments/seed000/../../x` is
/// `<shipped>/x`. Other paths are returned as they are.
pub fn normalize(path: &Path) -> PathBuf {
    match is_shipped(path).then(|| key(path)).flatten() {
        Some(k) => Path::new(ROOT).join(k),
        None => path.to_path_buf(),
    }
}

/// The file `name` names from a file in `dir`: a shipped path (`<shipped>/platforms/x.toml`)
/// as it is, from anywhere; any other relative to `dir`, as on disk.
pub fn resolve(dir: &Path, name: impl AsRef<Path>) -> PathBuf {
    let name = name.as_ref();
    if is_shipped(name) {
        normalize(name)
    } else {
        normalize(&dir.join(name))
    }
}

/// The contents of a shipped file.
pub fn get(path: &Path) -> Option<&'static str> {
    let k = key(path)?;
    FILES.iter().find(|(p, _)| *p == k).map(|(_, text)| *text)
}

/// Read a file: a shipped one from the embedded copy, any other from disk.
pub fn read(path: &Path) -> std::io::Result<String> {
    if is_shipped(path) {
        get(path).map(str::to_string).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "irqlab ships no such file (irqlab list shows what it ships)",
            )
        })
    } else {
        std::fs::read_to_string(path).map_err(|e| match shipped_namesake(path) {
            Some(s) if e.kind() == std::io::ErrorKind::NotFound => std::io::Error::new(
                e.kind(),
                format!(
                    "{e}; irqlab ships a file of that name: write {} to use it",
                    s.display()
                ),
            ),
            _ => e,
        })
    }
}

/// The one shipped file named as `path` is (with `.toml` added to a bare name), for a path not
/// on disk: a scenario copied out of the repository names its platform relatively, and that
/// relative path no longer leads anywhere.
fn shipped_namesake(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_string_lossy();
    let name = if name.ends_with(".toml") {
        name.into_owned()
    } else {
        format!("{name}.toml")
    };
    let mut found = FILES
        .iter()
        .filter(|(p, _)| p.rsplit('/').next() == Some(name.as_str()));
    match (found.next(), found.next()) {
        (Some((p, _)), None) => Some(Path::new(ROOT).join(p)),
        _ => None,
    }
}

/// The `*.toml` files directly in `dir` (shipped or on disk), sorted.
pub fn toml_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    if is_shipped(dir) {
        let k = key(dir).unwrap_or_default();
        let mut out: Vec<PathBuf> = FILES
            .iter()
            .filter_map(|(p, _)| {
                let rest = p.strip_prefix(&k)?.strip_prefix('/')?;
                (!rest.contains('/')).then(|| Path::new(ROOT).join(p))
            })
            .collect();
        out.sort();
        if out.is_empty() && !FILES.iter().any(|(p, _)| p.starts_with(&format!("{k}/"))) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "irqlab ships no such directory",
            ));
        }
        return Ok(out);
    }
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml") && p.is_file())
        .collect();
    out.sort();
    Ok(out)
}

/// A shipped scenario by its short name: `seed002/fpga`, `seed002/fpga.toml` or
/// `experiments/seed002/fpga.toml`.
pub fn scenario(name: &str) -> Option<PathBuf> {
    let name = name.trim_start_matches("./");
    let name = name.strip_prefix("experiments/").unwrap_or(name);
    let name = name.strip_suffix(".toml").unwrap_or(name);
    scenarios()
        .into_iter()
        .find(|(short, _)| short == name)
        .map(|(_, p)| p)
}

/// The shipped scenarios: (short name, path), the files one level below `experiments/`.
pub fn scenarios() -> Vec<(String, PathBuf)> {
    FILES
        .iter()
        .filter_map(|(p, _)| {
            let rest = p.strip_prefix("experiments/")?;
            let short = rest.strip_suffix(".toml")?;
            short
                .contains('/')
                .then(|| (short.to_string(), Path::new(ROOT).join(p)))
        })
        .collect()
}

/// A shipped file by the name `irqlab list` shows it under: a scenario (`seed002/fpga`), or a
/// platform or kernel by its file's stem (`desktop-2017-i7-8700k-z370`, with or without
/// `.toml`, or as `platforms/NAME.toml`); or any shipped file by its `<shipped>/...` path.
pub fn named(name: &str) -> Option<PathBuf> {
    if let Some(p) = scenario(name) {
        return Some(p);
    }
    // As a header prints it: `<shipped>/platforms/x.toml`.
    let path = Path::new(name);
    if is_shipped(path) && get(path).is_some() {
        return Some(normalize(path));
    }
    let name = name.trim_start_matches("./");
    let name = name.strip_suffix(".toml").unwrap_or(name);
    ["platforms", "kernels"].iter().find_map(|dir| {
        let stem = name
            .strip_prefix(dir)
            .and_then(|n| n.strip_prefix('/'))
            .unwrap_or(name);
        let key = format!("{dir}/{stem}.toml");
        FILES
            .iter()
            .any(|(p, _)| *p == key)
            .then(|| Path::new(ROOT).join(key))
    })
}

/// A shipped file as a copy to edit (`irqlab show NAME > my.toml`): a scenario's top-level
/// `platform` and `kernel`, which name their files relative to the shipped tree, become
/// `<shipped>/...` paths, so the copy runs from any directory; every other byte, comments
/// included, is the file as shipped.
pub fn copy_text(path: &Path) -> Option<String> {
    let text = get(path)?;
    let dir = path.parent().unwrap_or(Path::new(ROOT));
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    // The two values' byte ranges, rewritten from the last so the first's stay valid.
    let mut edits: Vec<(std::ops::Range<usize>, String)> = ["platform", "kernel"]
        .iter()
        .filter_map(|key| {
            let value = doc.get(key)?.as_value()?;
            let shipped = resolve(dir, value.as_str()?);
            Some((
                value.span()?,
                format!("{:?}", shipped.display().to_string()),
            ))
        })
        .collect();
    edits.sort_by_key(|(span, _)| std::cmp::Reverse(span.start));
    let mut out = text.to_string();
    for (span, with) in edits {
        out.replace_range(span, &with);
    }
    Some(out)
}

/// A shipped scenario as `irqlab list` shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioEntry {
    /// `seed002/fpga`: what `irqlab sim` takes.
    pub name: String,
    pub title: String,
    /// The platform and kernel files it names, by file stem.
    pub platform: String,
    pub kernel: String,
    /// Its default sample count.
    pub samples: u64,
    /// A run of fixed length (a forwarding run counts frames, not samples), in milliseconds;
    /// 0: the run counts samples.
    pub duration_ms: f64,
}

/// Every shipped scenario, by name.
pub fn scenario_entries() -> Vec<ScenarioEntry> {
    let stem = |v: Option<&toml::Value>| {
        v.and_then(toml::Value::as_str)
            .map(|p| {
                Path::new(p)
                    .file_stem()
                    .map_or(p.to_string(), |s| s.to_string_lossy().into_owned())
            })
            .unwrap_or_default()
    };
    scenarios()
        .into_iter()
        .filter_map(|(name, path)| {
            let doc: toml::Table = toml::from_str(get(&path)?).ok()?;
            Some(ScenarioEntry {
                name,
                title: doc.get("title")?.as_str()?.to_string(),
                platform: stem(doc.get("platform")),
                kernel: stem(doc.get("kernel")),
                samples: doc
                    .get("samples")
                    .and_then(toml::Value::as_integer)
                    .map_or(0, |n| n.max(0) as u64),
                duration_ms: doc
                    .get("duration_ms")
                    .and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)))
                    .unwrap_or(0.0),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_data_file_of_the_repository_is_shipped_and_identical() {
        let top = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut on_disk = 0;
        for dir in ["experiments", "platforms", "kernels"] {
            for e in walk(&top.join(dir)) {
                let rel = e.strip_prefix(&top).unwrap();
                let shipped = Path::new(ROOT).join(rel);
                assert_eq!(
                    get(&shipped),
                    Some(std::fs::read_to_string(&e).unwrap().as_str()),
                    "{}",
                    rel.display()
                );
                on_disk += 1;
            }
        }
        assert_eq!(on_disk, FILES.len());
    }

    fn walk(d: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else if p.extension().is_some_and(|x| x == "toml") {
                out.push(p);
            }
        }
        out
    }

    #[test]
    fn a_missing_file_named_as_a_shipped_one_points_at_it() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["ws-2008-core2-ich9.toml", "ws-2008-core2-ich9"] {
            let e = read(&dir.path().join("../../platforms").join(name)).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
            assert!(
                e.to_string()
                    .ends_with("write <shipped>/platforms/ws-2008-core2-ich9.toml to use it"),
                "{e}"
            );
        }
        let e = read(&dir.path().join("no-such-platform.toml")).unwrap_err();
        assert!(!e.to_string().contains("<shipped>"), "{e}");
    }

    #[test]
    fn relative_names_resolve_inside_the_shipped_tree() {
        let s = scenario("seed000/ws").unwrap();
        assert_eq!(s, Path::new("<shipped>/experiments/seed000/ws.toml"));
        assert_eq!(scenario("experiments/seed000/ws.toml"), Some(s.clone()));
        assert_eq!(scenario("seed000/ws.toml"), Some(s.clone()));
        assert_eq!(scenario("seed000"), None);
        let platform = s
            .parent()
            .unwrap()
            .join("../../platforms/ws-2008-core2-ich9.toml");
        assert_eq!(
            normalize(&platform),
            Path::new("<shipped>/platforms/ws-2008-core2-ich9.toml")
        );
        assert!(read(&platform).unwrap().contains("ws-2008"));
        // No escape above the root, and no such file.
        assert!(read(Path::new("<shipped>/../etc/passwd")).is_err());
        assert!(read(Path::new("<shipped>/platforms/none.toml")).is_err());
        let files = toml_files(&experiments_dir()).unwrap();
        assert!(files.iter().all(|f| f.parent() == Some(&experiments_dir())));
        assert!(files.len() >= 3);
        assert!(toml_files(Path::new("<shipped>/nowhere")).is_err());
    }

    #[test]
    fn a_scenario_on_disk_can_name_shipped_parts() {
        let dir = tempfile::tempdir().unwrap();
        let text = get(Path::new("<shipped>/experiments/seed000/ws.toml"))
            .unwrap()
            .replace("../../", "<shipped>/");
        let mine = dir.path().join("my.toml");
        std::fs::write(&mine, text).unwrap();
        let s = crate::scenario::Scenario::load(&mine, &[]).unwrap();
        assert_eq!(
            s.platform_path,
            Path::new("<shipped>/platforms/ws-2008-core2-ich9.toml")
        );
        assert_eq!(
            resolve(dir.path(), "p.toml"),
            dir.path().join("p.toml"),
            "other names stay relative to the file"
        );
    }

    #[test]
    fn a_copy_of_every_shipped_scenario_runs_from_anywhere() {
        let dir = tempfile::tempdir().unwrap();
        for (name, path) in scenarios() {
            let copy = copy_text(&path).unwrap();
            let original = get(&path).unwrap();
            // Only the two values change: comments, order and every other line stay.
            let changed: Vec<(&str, &str)> = original
                .lines()
                .zip(copy.lines())
                .filter(|(a, b)| a != b)
                .collect();
            assert_eq!(original.lines().count(), copy.lines().count(), "{name}");
            assert_eq!(changed.len(), 2, "{name}: {changed:?}");
            let doc: toml::Table = toml::from_str(&copy).unwrap();
            for key in ["platform", "kernel"] {
                let v = doc[key].as_str().unwrap();
                assert!(
                    v.starts_with("<shipped>/") && get(Path::new(v)).is_some(),
                    "{name}: {v}"
                );
            }
            let mine = dir.path().join("my.toml");
            std::fs::write(&mine, &copy).unwrap();
            crate::scenario::Scenario::load(&mine, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        // Any shipped file by its path, and platforms by their stem.
        assert_eq!(
            named("<shipped>/platforms/ws-2008-core2-ich9.toml"),
            Some(PathBuf::from("<shipped>/platforms/ws-2008-core2-ich9.toml"))
        );
        assert_eq!(
            named("ws-2008-core2-ich9"),
            named("platforms/ws-2008-core2-ich9.toml")
        );
        assert_eq!(named("no-such"), None);
    }

    #[test]
    fn every_shipped_scenario_is_listed_with_its_parts() {
        let entries = scenario_entries();
        assert_eq!(entries.len(), scenarios().len());
        let fpga = entries.iter().find(|e| e.name == "seed002/fpga").unwrap();
        assert_eq!(fpga.platform, "desktop-2017-i7-8700k-z370");
        assert_eq!(fpga.kernel, "linux-6.4-x86_64-smp");
        assert!(fpga.samples > 0 && !fpga.title.is_empty());
    }
}
