//! Reading a run's documents: a scenario file and the platform and kernel files it names,
//! parsed, with the `--set` overrides applied to the three as one document, and the texts kept
//! so that any value can be traced to its file, line and column, or to the flag that set it.

use super::error::{Origin, ScenarioError};
use super::{KernelFile, PlatformFile, ScenarioFile};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub(crate) fn read(path: &Path, named_by: Option<String>) -> Result<String, ScenarioError> {
    crate::shipped::read(path).map_err(|cause| ScenarioError::Io {
        path: path.to_owned(),
        named_by,
        cause,
    })
}

/// The toml crate speaks Rust types ("expected f64"); say it in the file's terms.
fn plain_types(message: &str) -> String {
    let mut m = message.to_string();
    for (rust, plain) in [
        ("f64", "a number such as 3.0e9"),
        ("u64", "a whole number 0 or more"),
        ("u32", "a whole number from 0 to 4294967295"),
        ("u16", "a whole number from 0 to 65535"),
        ("u8", "a whole number from 0 to 255"),
        ("i32", "a whole number"),
    ] {
        m = m.replace(&format!("expected {rust}"), &format!("expected {plain}"));
    }
    m
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

/// Parse `text` (from `path`) as `T`, reporting errors with line and column.
pub fn parse_file<T: for<'de> Deserialize<'de>>(
    path: &Path,
    text: &str,
) -> Result<T, ScenarioError> {
    toml::from_str(text).map_err(|e| {
        let (line, column) = e.span().map_or((1, 1), |s| line_col(text, s.start));
        ScenarioError::Syntax {
            origin: Origin::File {
                path: path.to_owned(),
                line,
                column,
            },
            message: plain_types(e.message().trim()),
        }
    })
}

/// The position of dotted `key` (array-of-tables elements by index, `device.0.bdf`) in a TOML
/// text, for pointing at the line a bad value came from.
pub(crate) fn locate(text: &str, key: &str) -> Option<(usize, usize)> {
    use toml_edit::TableLike;
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    let parts: Vec<&str> = key.split('.').collect();
    let mut table: &dyn TableLike = doc.as_table();
    let mut span = None;
    let mut i = 0;
    while i < parts.len() {
        let (k, v) = table.get_key_value(parts[i])?;
        span = k.span().or(span);
        i += 1;
        if i == parts.len() {
            break;
        }
        if let Some(aot) = v.as_array_of_tables() {
            let t = aot.get(parts[i].parse().ok()?)?;
            span = t.span().or(span);
            i += 1;
            table = t;
        } else {
            table = v.as_table_like()?;
        }
    }
    span.map(|s| line_col(text, s.start))
}

/// A scenario file with the platform and kernel files it names: parsed, with the `--set`
/// overrides applied, and with their texts kept so that an error can point at the line (or the
/// flag) a value came from: the loaded, overridden and checked configuration of one scenario,
/// whichever kernel family runs it (its family's model checks it: `Scenario::check`).
#[derive(Clone, Debug)]
pub struct Scenario {
    pub path: PathBuf,
    pub file: ScenarioFile,
    pub platform_path: PathBuf,
    pub platform: PlatformFile,
    pub kernel_path: PathBuf,
    pub kernel: KernelFile,
    texts: [String; 3],
    overrides: Vec<String>,
}

/// A document a scenario names (its platform or kernel file), read from its text with every
/// error at its line and column.
pub trait Document:
    Sized + Clone + Send + Sync + 'static + Serialize + for<'de> Deserialize<'de>
{
    fn parse(path: &Path, text: &str) -> Result<Self, ScenarioError> {
        parse_file(path, text)
    }
}

impl Document for PlatformFile {}

impl Document for KernelFile {
    fn parse(path: &Path, text: &str) -> Result<Self, ScenarioError> {
        KernelFile::parse(path, text)
    }
}

impl Scenario {
    /// Read `path` and the files it names, and apply `overrides` (`key=value` strings). The
    /// model's own checks come after.
    pub(crate) fn read_all(path: &Path, overrides: &[String]) -> Result<Self, ScenarioError> {
        let path = path.to_owned();
        let text = read(&path, None)?;
        let file = parsed(&path, &text, ScenarioFile::parse)?;
        let (platform_path, ptext, platform) =
            load_named(&path, &text, "platform", &file.platform)?;
        let (kernel_path, ktext, kernel) = load_named(&path, &text, "kernel", &file.kernel)?;
        // The settings the file itself makes in the other two (`set`), as `--set` flags,
        // applied before the command line's.
        let overrides: Vec<String> = file.set.iter().chain(overrides).cloned().collect();
        let overrides = &overrides[..];
        let mut s = Scenario {
            path,
            file,
            platform_path,
            platform,
            kernel_path,
            kernel,
            texts: [text, ptext, ktext],
            overrides: overrides.to_vec(),
        };
        if !overrides.is_empty() {
            apply_combined(&mut s.file, &mut s.platform, &mut s.kernel, overrides)?;
        }
        // A bad range is refused when its file loads, not when a long uncertainty run reaches it
        // (checked once per text, as each document's parse: `ranges::declared` reads the text).
        for (path, text, prefix) in s.documents() {
            parsed_as(prefix, path, text, |path, text| {
                super::ranges::declared(path, text, prefix).map(|_| ())
            })?;
        }
        Ok(s)
    }

    /// Every key `--set` takes, with its value as this run has it (the files', then the
    /// scenario's presets and the command line's overrides): the scenario's keys, then the
    /// platform's under `platform.` and the kernel's under `kernel.`, each document's in key
    /// order (`irqlab show --keys`). A list of tables is addressed element by element
    /// (`device.0.port`); any other list is one value.
    pub fn settings(&self) -> Result<Vec<(String, toml::Value)>, ScenarioError> {
        let ser = |e: toml::ser::Error| ScenarioError::Override {
            flag: String::new(),
            message: e.to_string(),
        };
        let mut scenario = toml::Value::try_from(&self.file).map_err(ser)?;
        if let Some(t) = scenario.as_table_mut() {
            // File names here; their documents' keys follow under these prefixes.
            t.remove("platform");
            t.remove("kernel");
            // The file's own presets, already applied: the keys they set are listed instead.
            t.remove("set");
        }
        let mut out = Vec::new();
        flatten(&scenario, &mut Vec::new(), &mut out);
        let platform = toml::Value::try_from(&self.platform).map_err(ser)?;
        flatten(&platform, &mut vec!["platform".into()], &mut out);
        let kernel = toml::Value::try_from(&self.kernel).map_err(ser)?;
        flatten(&kernel, &mut vec!["kernel".into()], &mut out);
        Ok(out)
    }

    /// The three documents as read: each file's path, its text and the prefix `--set` puts
    /// before its keys (`platform.`, `kernel.`, or none for the scenario).
    pub(crate) fn documents(&self) -> [(&Path, &str, &'static str); 3] {
        [
            (&self.path, &self.texts[0], ""),
            (&self.platform_path, &self.texts[1], "platform."),
            (&self.kernel_path, &self.texts[2], "kernel."),
        ]
    }

    /// Where a key's value came from: the last `--set` naming it, or its line in a file.
    pub(crate) fn origin(&self, key: &str) -> Origin {
        origin_in(
            key,
            &self.overrides,
            [&self.path, &self.platform_path, &self.kernel_path],
            &self.texts,
        )
    }

    /// A refusal of `key`'s value, naming where it came from.
    pub(crate) fn invalid(&self, key: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError::Invalid {
            origin: self.origin(key),
            key: key.to_string(),
            message: message.into(),
        }
    }

    /// The part `found` for the machine, or an error saying the platform has no part that
    /// `what` (does, or is).
    pub(crate) fn need_part<T>(&self, found: Option<T>, what: &str) -> Result<T, ScenarioError> {
        found.ok_or_else(|| {
            self.invalid(
                "platform.part",
                format!("the platform has no part that {what}: add one"),
            )
        })
    }

    /// A physical quantity must lie in the range the model accepts: beyond it the picosecond
    /// clock would overflow or round to nothing, and the model would mean nothing.
    pub(crate) fn in_range(
        &self,
        key: &str,
        v: f64,
        lo: f64,
        hi: f64,
        unit: &str,
    ) -> Result<(), ScenarioError> {
        if v.is_finite() && v >= lo && v <= hi {
            return Ok(());
        }
        Err(self.invalid(
            key,
            format!("{v} {unit} is outside the range this model accepts, {lo} to {hi} {unit}"),
        ))
    }
}

/// `parse(path, text)`, kept for the process by path and text: a validation's uncertainty draws
/// load the same three files thousands of times (seed 003: 6,600 runs), and parsing them was
/// a third of a draw run's set-up (0.9 of 2.5 ms). Only a document that parsed is kept; a text
/// that differs in any byte is parsed afresh, so what a load returns is what parsing would.
fn parsed<T: Clone + Send + Sync + 'static>(
    path: &Path,
    text: &str,
    parse: impl FnOnce(&Path, &str) -> Result<T, ScenarioError>,
) -> Result<T, ScenarioError> {
    parsed_as("", path, text, parse)
}

/// [`parsed`], for a reading of the text that also depends on `how` (the prefix a document's
/// keys take).
fn parsed_as<T: Clone + Send + Sync + 'static>(
    how: &'static str,
    path: &Path,
    text: &str,
    parse: impl FnOnce(&Path, &str) -> Result<T, ScenarioError>,
) -> Result<T, ScenarioError> {
    use std::any::{Any, TypeId};
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    type Key = (TypeId, &'static str, PathBuf, String);
    type Kept = HashMap<Key, Arc<dyn Any + Send + Sync>>;
    // A bound, not a policy: a process reads a handful of files (a sweep of generated
    // scenarios may read more; past this many the oldest are not worth tracking).
    const MAX_KEPT: usize = 64;
    static KEPT: OnceLock<Mutex<Kept>> = OnceLock::new();
    let kept = KEPT.get_or_init(Default::default);
    let key: Key = (TypeId::of::<T>(), how, path.to_owned(), text.to_owned());
    let found = kept
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&key)
        .cloned();
    if let Some(v) = found.and_then(|v| v.downcast::<T>().ok()) {
        return Ok(T::clone(&v));
    }
    let value = parse(path, text)?;
    let mut map = kept.lock().unwrap_or_else(|e| e.into_inner());
    if map.len() >= MAX_KEPT {
        map.clear();
    }
    map.insert(key, Arc::new(value.clone()));
    Ok(value)
}

/// The file a scenario names under `key` (its platform or kernel), relative to the scenario:
/// its path, text and contents. An unreadable file is reported with the line that named it.
pub(crate) fn load_named<T: Document>(
    scenario: &Path,
    text: &str,
    key: &str,
    name: &str,
) -> Result<(PathBuf, String, T), ScenarioError> {
    let path = crate::shipped::resolve(scenario.parent().unwrap_or(Path::new(".")), name);
    let (line, column) = locate(text, key).unwrap_or((1, 1));
    let by = format!("`{key}` at {}:{line}:{column}", scenario.display());
    let body = read(&path, Some(by))?;
    let value = parsed(&path, &body, T::parse)?;
    Ok((path, body, value))
}

/// Apply `--set` flags to a run's three documents as one: scenario keys at the top, the platform
/// under `platform.`, the kernel under `kernel.`. An error names the flag that caused it: a
/// flag that names no key or gives a value of the wrong kind fails as it is applied; a value
/// the documents do not accept (out of a type's range, a table missing a field) is found when
/// the three are read back, once, after the last flag (an uncertainty draw gives ~70 flags,
/// and reading back after each cost more than the run's other set-up), and only then are the
/// flags applied again one at a time, each read back, to name the first that the documents
/// refuse.
pub(crate) fn apply_combined<F, P, K>(
    file: &mut F,
    platform: &mut P,
    kernel: &mut K,
    overrides: &[String],
) -> Result<(), ScenarioError>
where
    F: Serialize + for<'de> Deserialize<'de>,
    P: Serialize + for<'de> Deserialize<'de>,
    K: Serialize + for<'de> Deserialize<'de>,
{
    let ser = |e: toml::ser::Error| ScenarioError::Override {
        flag: String::new(),
        message: e.to_string(),
    };
    // The three as one document, and the scenario's own `platform` and `kernel` keys (file
    // names), which give way to the documents in it.
    type Combined = (toml::Value, Option<toml::Value>, Option<toml::Value>);
    let combined = |file: &F, platform: &P, kernel: &K| -> Result<Combined, ScenarioError> {
        let mut root = toml::Value::try_from(file).map_err(ser)?;
        let table = root
            .as_table_mut()
            .expect("a scenario serializes to a table");
        let (pname, kname) = (table.remove("platform"), table.remove("kernel"));
        table.insert(
            "platform".into(),
            toml::Value::try_from(platform).map_err(ser)?,
        );
        table.insert("kernel".into(), toml::Value::try_from(kernel).map_err(ser)?);
        Ok((root, pname, kname))
    };
    let (mut root, pname, kname) = combined(file, platform, kernel)?;
    // The three documents as `root` has them, or which of them refuses it and why.
    type ReadBack<F, P, K> = Result<(F, P, K), (&'static str, toml::de::Error)>;
    let read_back = |root: &toml::Value| -> ReadBack<F, P, K> {
        let mut t = root.as_table().expect("table").clone();
        let p = t.remove("platform").expect("present");
        let k = t.remove("kernel").expect("present");
        if let Some(v) = &pname {
            t.insert("platform".into(), v.clone());
        }
        if let Some(v) = &kname {
            t.insert("kernel".into(), v.clone());
        }
        let platform = p.try_into().map_err(|e| ("platform", e))?;
        let kernel = k.try_into().map_err(|e| ("kernel", e))?;
        let file = toml::Value::Table(t)
            .try_into()
            .map_err(|e| ("scenario", e))?;
        Ok((file, platform, kernel))
    };
    let refused =
        |flag: &String, (what, e): (&'static str, toml::de::Error)| ScenarioError::Override {
            flag: flag.clone(),
            message: format!(
                "the {what} does not accept it: {}",
                plain_types(e.message())
            ),
        };
    for flag in overrides {
        apply_override(&mut root, flag)?;
    }
    match read_back(&root) {
        Ok((f, p, k)) => {
            (*file, *platform, *kernel) = (f, p, k);
            Ok(())
        }
        Err(last) => {
            // Name the first flag after which the documents do not read back (the replay's
            // last step is the state refused above, so one is found; the last flag otherwise).
            // The documents are as they came (nothing was assigned): start again from them.
            let (mut root, _, _) = combined(file, platform, kernel)?;
            for flag in overrides {
                apply_override(&mut root, flag)?;
                if let Err(e) = read_back(&root) {
                    return Err(refused(flag, e));
                }
            }
            Err(refused(overrides.last().expect("flags were applied"), last))
        }
    }
}

/// Does the `--set` flag `KEY=VALUE` set `key`: name it, or a table or list above it
/// (`device.0.round_trip={...}` sets `device.0.round_trip.interval_ns`)?
pub fn sets(flag: &str, key: &str) -> bool {
    flag.split_once('=').is_some_and(|(k, _)| {
        let k = k.trim();
        key == k
            || key
                .strip_prefix(k)
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// Where a key's value came from: the last `--set` naming it (or a table or list above it,
/// `device.0.round_trip={...}`), or its line in the scenario (`paths[0]`), platform
/// (`platform.`, `paths[1]`) or kernel (`kernel.`, `paths[2]`) file.
pub(crate) fn origin_in(
    key: &str,
    overrides: &[String],
    paths: [&Path; 3],
    texts: &[String; 3],
) -> Origin {
    if let Some(flag) = overrides.iter().rev().find(|f| sets(f, key)) {
        return Origin::Flag(flag.clone());
    }
    let (i, sub) = if let Some(rest) = key.strip_prefix("platform.") {
        (1, rest)
    } else if let Some(rest) = key.strip_prefix("kernel.") {
        (2, rest)
    } else {
        (0, key)
    };
    let (line, column) = locate(&texts[i], sub).unwrap_or((1, 1));
    Origin::File {
        path: paths[i].to_owned(),
        line,
        column,
    }
}

/// The leaves of `v` under `path`, as `--set` keys them: tables and non-empty lists of tables
/// are walked, anything else is one value.
fn flatten(v: &toml::Value, path: &mut Vec<String>, out: &mut Vec<(String, toml::Value)>) {
    match v {
        toml::Value::Table(t) => {
            for (k, v) in t {
                path.push(k.clone());
                flatten(v, path, out);
                path.pop();
            }
        }
        toml::Value::Array(a) if !a.is_empty() && a.iter().all(toml::Value::is_table) => {
            for (i, v) in a.iter().enumerate() {
                path.push(i.to_string());
                flatten(v, path, out);
                path.pop();
            }
        }
        _ => out.push((path.join("."), v.clone())),
    }
}

/// Apply one `key=value` to the combined document.
fn apply_override(root: &mut toml::Value, flag: &str) -> Result<(), ScenarioError> {
    let err = |message: String| ScenarioError::Override {
        flag: flag.to_string(),
        message,
    };
    let (key, raw) = flag
        .split_once('=')
        .ok_or_else(|| err("expected key=value, for example platform.cpu.clock_hz=2.0e9".into()))?;
    let key = key.trim();
    let raw = raw.trim();
    let parts: Vec<&str> = key.split('.').collect();
    // An optional setting a file may leave out can still be given by a flag.
    if let Some((&last, parent)) = parts.split_last() {
        if let Some(t) = addable(root, parent, last) {
            // As any value: TOML, a bare word taken as a string; these settings are strings.
            let value = toml::from_str::<toml::Table>(&format!("v = {raw}"))
                .ok()
                .and_then(|mut t| t.remove("v"))
                .unwrap_or_else(|| toml::Value::String(raw.to_string()));
            if !value.is_str() {
                return Err(err(format!(
                    "'{key}' is a string (a device's name), but '{raw}' is {}",
                    type_name(&value)
                )));
            }
            t.insert(last.to_string(), value);
            return Ok(());
        }
    }
    let mut node = root;
    let mut walked = Vec::new();
    for &part in &parts {
        let here = if walked.is_empty() {
            "the top level".to_string()
        } else {
            format!("'{}'", walked.join("."))
        };
        node = match node {
            toml::Value::Table(t) => {
                let keys: Vec<String> = t.keys().cloned().collect();
                t.get_mut(part).ok_or_else(|| {
                    err(format!(
                        "no key '{part}' in {here}; it has: {}",
                        keys.join(", ")
                    ))
                })?
            }
            toml::Value::Array(a) => {
                let n = a.len();
                let valid = match n {
                    0 => "it is empty".to_string(),
                    1 => "it has 1 element, index 0".to_string(),
                    _ => format!("it has {n} elements, indices 0 to {}", n - 1),
                };
                let i: usize = part.parse().map_err(|_| {
                    err(format!(
                        "{here} is a list: address an element by its index ({valid})"
                    ))
                })?;
                a.get_mut(i)
                    .ok_or_else(|| err(format!("index {i} is past the end of {here}: {valid}")))?
            }
            _ => return Err(err(format!("{here} is a value, not a table"))),
        };
        walked.push(part);
    }
    // Parse the value as TOML; a bare word is taken as a string (`delivery=xtpic`).
    let parsed: toml::Value = toml::from_str::<toml::Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()));
    let new = match (&*node, parsed) {
        (toml::Value::Float(_), toml::Value::Integer(i)) => toml::Value::Float(i as f64),
        (old, new) if std::mem::discriminant(old) == std::mem::discriminant(&new) => new,
        (old, new) => {
            return Err(err(format!(
                "'{key}' is {}, but '{raw}' is {}",
                type_name(old),
                type_name(&new)
            )))
        }
    };
    *node = new;
    Ok(())
}

/// Optional string settings a file may leave out, by the path of their table (`*`: any list
/// index): a `--set` adds them.
const ADDABLE: &[(&str, &str)] = &[("device.*.nic", "forward_to")];

/// The table at `parent` if `key` is one of the [`ADDABLE`] settings there and it is absent.
fn addable<'a>(
    root: &'a mut toml::Value,
    parent: &[&str],
    key: &str,
) -> Option<&'a mut toml::Table> {
    let pattern = ADDABLE.iter().find(|(path, k)| {
        *k == key
            && path.split('.').count() == parent.len()
            && path
                .split('.')
                .zip(parent)
                .all(|(p, q)| p == *q || (p == "*" && q.parse::<usize>().is_ok()))
    });
    pattern?;
    let mut node = root;
    for part in parent {
        node = match node {
            toml::Value::Table(t) => t.get_mut(*part)?,
            toml::Value::Array(a) => a.get_mut(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    match node {
        toml::Value::Table(t) if !t.contains_key(key) => Some(t),
        _ => None,
    }
}

fn type_name(v: &toml::Value) -> &'static str {
    match v {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "a whole number",
        toml::Value::Float(_) => "a decimal number",
        toml::Value::Boolean(_) => "a boolean (true or false)",
        toml::Value::Datetime(_) => "a date",
        toml::Value::Array(_) => "a list",
        toml::Value::Table(_) => "a table",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flood() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/seed003/flood.toml")
    }

    /// The flags are read back once, after the last; a refusal still names its flag, not the
    /// last one, and the flags before and after it changed nothing of what loads next.
    #[test]
    fn a_value_the_documents_refuse_names_its_flag_among_many() {
        let flags: Vec<String> = [
            "device.0.nic.gap_us=7",
            "delivery=msix",
            "device.1.nic.gap_us=7",
        ]
        .map(String::from)
        .to_vec();
        match Scenario::read_all(&flood(), &flags) {
            Err(ScenarioError::Override { flag, message }) => {
                assert_eq!(flag, "delivery=msix");
                assert!(
                    message.contains("the scenario does not accept it"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
        let good = Scenario::read_all(&flood(), &flags[..1]).unwrap();
        let again = Scenario::read_all(&flood(), &[]).unwrap();
        let gap = |s: &Scenario| {
            s.settings()
                .unwrap()
                .into_iter()
                .find(|(k, _)| k == "device.0.nic.gap_us")
        };
        assert_eq!(gap(&good).unwrap().1.as_float(), Some(7.0));
        assert_eq!(gap(&again).unwrap().1.as_float(), Some(10.0));
    }

    /// A document parsed once is what parsing gives: the kept copy loads as the first did, and
    /// a text that differs is parsed afresh.
    #[test]
    fn a_kept_parse_is_the_parse_of_that_text() {
        let text = read(&flood(), None).unwrap();
        let first = parsed(&flood(), &text, ScenarioFile::parse).unwrap();
        let kept = parsed(&flood(), &text, ScenarioFile::parse).unwrap();
        assert_eq!(format!("{first:?}"), format!("{kept:?}"));
        let other = text.replace("samples = 160000", "samples = 7");
        let fresh = parsed(&flood(), &other, ScenarioFile::parse).unwrap();
        assert_eq!(fresh.samples, 7);
        assert_ne!(format!("{fresh:?}"), format!("{kept:?}"));
        // A text that does not parse is an error every time, never kept.
        for _ in 0..2 {
            assert!(parsed(&flood(), "samples = \"x\"", ScenarioFile::parse).is_err());
        }
    }

    /// A range that does not lie around its value is refused at every load, not only the
    /// first (the range check is kept, as a parse is, only when it passed).
    #[test]
    fn a_bad_range_is_refused_at_every_load() {
        let dir = tempfile::tempdir().unwrap();
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let text = read(&flood(), None)
            .unwrap()
            .replace("\"../../", &format!("\"{}/", root.display()));
        let text = text.replace(
            "loop_instructions = { low = 150, high = 600,",
            "loop_instructions = { low = 1000, high = 2000,",
        );
        let path = dir.path().join("flood.toml");
        std::fs::write(&path, &text).unwrap();
        for _ in 0..2 {
            match Scenario::read_all(&path, &[]) {
                Err(ScenarioError::Invalid { key, .. }) => {
                    assert_eq!(key, "range.cyclictest.loop_instructions")
                }
                other => panic!("{other:?}"),
            }
        }
    }

    fn doc() -> toml::Value {
        toml::from_str(
            "[[device]]\nname = \"eth0\"\n[device.nic]\nring = 256\n\
             [[device]]\nname = \"eth1\"\n[device.nic]\nring = 256\n",
        )
        .unwrap()
    }

    #[test]
    fn a_flag_adds_an_optional_setting_the_file_left_out_and_only_that_one() {
        let mut d = doc();
        apply_override(&mut d, "device.1.nic.forward_to=eth0").unwrap();
        assert_eq!(d["device"][1]["nic"]["forward_to"].as_str(), Some("eth0"));
        assert!(d["device"][0]["nic"].get("forward_to").is_none());
        // Present now: a second flag replaces it as any setting.
        apply_override(&mut d, "device.1.nic.forward_to=eth1").unwrap();
        assert_eq!(d["device"][1]["nic"]["forward_to"].as_str(), Some("eth1"));
        // Other absent keys are still refused with the keys there are.
        let e = apply_override(&mut d, "device.0.nic.forward=eth1").unwrap_err();
        assert!(e.to_string().contains("no key 'forward'"), "{e}");
        // Not a nic table: not addable.
        let e = apply_override(&mut d, "device.0.forward_to=eth1").unwrap_err();
        assert!(e.to_string().contains("no key 'forward_to'"), "{e}");
        // Quoted as TOML or bare, the same string; not a number.
        let mut q = doc();
        apply_override(&mut q, "device.0.nic.forward_to=\"eth1\"").unwrap();
        assert_eq!(q["device"][0]["nic"]["forward_to"].as_str(), Some("eth1"));
        let e = apply_override(&mut doc(), "device.0.nic.forward_to=3").unwrap_err();
        assert!(e.to_string().contains("is a string"), "{e}");
        let e = apply_override(&mut d, "device.7.nic.forward_to=eth1").unwrap_err();
        assert!(e.to_string().contains("past the end"), "{e}");
    }
}
