//! The plausible ranges of a file's estimates: `[range.*]` tables beside the values they
//! qualify (DESIGN.md, "How a row is judged").
//!
//! A range table mirrors the path of its value, so a platform's
//!
//! ```toml
//! [cpu]
//! halt_exit_ns = 200.0
//!
//! [range.cpu]
//! halt_exit_ns = { low = 50.0, high = 1000.0, dist = "log-uniform", basis = "..." }
//! ```
//!
//! qualifies `platform.cpu.halt_exit_ns`, the key `--set` takes. A leaf is either a range
//! (`low`, `high`, `dist`, `basis`, optionally `inferred_from`, the rows whose published target
//! the value was read from) or `{ fixed = "why" }` for an estimate that is not drawn (a
//! configuration choice, say), which may name `inferred_from` rows too (a value read off a
//! row's own target and not drawn). The model never reads these tables: `validate
//! --uncertainty` draws them, and they are checked when the file loads so a bad range is
//! refused at once.

use super::error::{Origin, ScenarioError};
use super::read::locate;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// How a range is drawn.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dist {
    /// Every value in the range as likely: the bounds are limits, not a scale.
    Uniform,
    /// Every factor as likely: for a quantity known to within a factor (a time or a count
    /// spanning more than about 3x).
    LogUniform,
}

impl Dist {
    /// The value at `u` (0..1) of the distribution over `low..high`.
    pub fn at(self, u: f64, low: f64, high: f64) -> f64 {
        match self {
            Dist::Uniform => low + (high - low) * u,
            Dist::LogUniform => (low.ln() + (high.ln() - low.ln()) * u).exp(),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Dist::Uniform => "uniform",
            Dist::LogUniform => "log-uniform",
        }
    }
}

/// A leaf of a `[range.*]` table as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Leaf {
    low: Option<f64>,
    high: Option<f64>,
    dist: Option<Dist>,
    basis: Option<String>,
    #[serde(default)]
    inferred_from: Vec<String>,
    fixed: Option<String>,
}

/// A range to draw an estimate over.
#[derive(Clone, Debug, PartialEq)]
pub struct Range {
    pub low: f64,
    pub high: f64,
    pub dist: Dist,
    /// The source of each bound, or the physical argument.
    pub basis: String,
    /// Rows whose published target the value was read from.
    pub inferred_from: Vec<String>,
}

/// What a file says of one estimate.
#[derive(Clone, Debug, PartialEq)]
pub enum Spread {
    /// Drawn over its range.
    Drawn(Range),
    /// Not drawn, for the reason given; `inferred_from` as a range's.
    Fixed {
        reason: String,
        inferred_from: Vec<String>,
    },
}

/// One estimate's range, from the file that holds the value.
#[derive(Clone, Debug, PartialEq)]
pub struct Declared {
    /// The `--set` key: `platform.` or `kernel.` before a platform's or kernel's own path.
    pub key: String,
    pub file: PathBuf,
    pub spread: Spread,
    /// The file's own value (NaN for a setting that is not a number: only a `fixed` leaf can
    /// qualify one), and whether it is a whole number (then draws are rounded).
    pub nominal: f64,
    pub integer: bool,
}

impl super::Scenario {
    /// The ranges the three files declare beside their estimates, keyed as `--set` keys them;
    /// the files' own values, not the overridden ones, are the nominal.
    pub fn ranges(&self) -> Result<Vec<Declared>, ScenarioError> {
        let mut out = Vec::new();
        for (path, text, prefix) in self.documents() {
            out.extend(declared(path, text, prefix)?);
        }
        Ok(out)
    }
}

/// The ranges declared in `text` (the file at `path`), with `prefix` (`platform.`, `kernel.` or
/// empty) before each key. Every leaf must qualify a number the file sets, and lie around it.
pub fn declared(path: &Path, text: &str, prefix: &str) -> Result<Vec<Declared>, ScenarioError> {
    let at = |key: &str, message: String| {
        let (line, column) = locate(text, key).unwrap_or((1, 1));
        ScenarioError::Invalid {
            origin: Origin::File {
                path: path.to_owned(),
                line,
                column,
            },
            key: format!("{prefix}{key}"),
            message,
        }
    };
    let Ok(doc) = text.parse::<toml::Table>() else {
        // The file's own parse reports syntax errors with their place.
        return Ok(Vec::new());
    };
    let Some(tree) = doc.get("range") else {
        return Ok(Vec::new());
    };
    let mut leaves = Vec::new();
    collect(tree, &mut Vec::new(), &mut leaves);
    let mut out = Vec::new();
    for (rel, value) in leaves {
        let range_key = format!("range.{rel}");
        let leaf: Leaf = value.clone().try_into().map_err(|e: toml::de::Error| {
            at(
                &range_key,
                format!(
                    "a range is {{ low, high, dist, basis }} (or {{ fixed = \"why\" }}): {}",
                    e.message().trim()
                ),
            )
        })?;
        let (nominal, integer) = match lookup(&doc, &rel) {
            Some(toml::Value::Float(f)) => (*f, false),
            Some(toml::Value::Integer(i)) => (*i as f64, true),
            // A setting that is not a number (a preemption model, a path) cannot be drawn, but
            // may still have been chosen because a row passes: `{ fixed, inferred_from }`
            // labels it (DESIGN.md rule 4).
            Some(_) if leaf.fixed.is_some() && leaf.low.is_none() => (f64::NAN, false),
            Some(_) => {
                return Err(at(
                    &range_key,
                    format!(
                        "'{rel}' is not a number: only numbers have ranges (a setting that is \
                         not a number takes {{ fixed = \"why\", inferred_from = [rows] }})"
                    ),
                ))
            }
            None => {
                return Err(at(
                    &range_key,
                    format!("the file sets no '{rel}' for this range to qualify: a range sits beside its value"),
                ))
            }
        };
        let spread = match leaf {
            Leaf {
                fixed: Some(reason),
                low: None,
                high: None,
                dist: None,
                basis: None,
                inferred_from,
            } if !reason.trim().is_empty() => Spread::Fixed {
                reason,
                inferred_from,
            },
            Leaf {
                fixed: None,
                low: Some(low),
                high: Some(high),
                dist: Some(dist),
                basis: Some(basis),
                inferred_from,
            } => {
                if basis.trim().is_empty() {
                    return Err(at(
                        &range_key,
                        "the basis is empty: say where each bound comes from".into(),
                    ));
                }
                if !(low.is_finite() && high.is_finite() && low < high) {
                    return Err(at(
                        &range_key,
                        format!("low {low} must be below high {high}"),
                    ));
                }
                if !(low..=high).contains(&nominal) {
                    return Err(at(
                        &range_key,
                        format!(
                            "the file's value {nominal} lies outside its range {low}..{high}: \
                             widen the range (with a basis) or correct the value"
                        ),
                    ));
                }
                if dist == Dist::LogUniform && low <= 0.0 {
                    return Err(at(
                        &range_key,
                        format!("a log-uniform range needs low > 0, not {low}: use uniform"),
                    ));
                }
                Spread::Drawn(Range {
                    low,
                    high,
                    dist,
                    basis,
                    inferred_from,
                })
            }
            _ => {
                return Err(at(
                    &range_key,
                    "a range gives low, high, dist (uniform or log-uniform) and basis, or \
                     only fixed = \"why it is not drawn\""
                        .into(),
                ))
            }
        };
        out.push(Declared {
            key: format!("{prefix}{rel}"),
            file: path.to_owned(),
            spread,
            nominal,
            integer,
        });
    }
    Ok(out)
}

/// The leaves under `v` with their dotted paths: a table with `low` or `fixed` is a leaf.
fn collect(v: &toml::Value, path: &mut Vec<String>, out: &mut Vec<(String, toml::Value)>) {
    match v {
        toml::Value::Table(t) if !t.contains_key("low") && !t.contains_key("fixed") => {
            for (k, child) in t {
                path.push(k.clone());
                collect(child, path, out);
                path.pop();
            }
        }
        _ => out.push((path.join("."), v.clone())),
    }
}

/// The value at dotted `key` (list elements by index) in `doc`.
fn lookup<'a>(doc: &'a toml::Table, key: &str) -> Option<&'a toml::Value> {
    let mut parts = key.split('.');
    let mut v = doc.get(parts.next()?)?;
    for p in parts {
        v = match v {
            toml::Value::Table(t) => t.get(p)?,
            toml::Value::Array(a) => a.get(p.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<Declared>, ScenarioError> {
        declared(Path::new("p.toml"), text, "platform.")
    }

    #[test]
    fn a_range_mirrors_its_value_path() {
        let d = read(
            "[cpu]\nhalt_exit_ns = 200.0\nclocks = 12\n[range.cpu]\n\
             halt_exit_ns = { low = 50.0, high = 1000.0, dist = \"log-uniform\", basis = \"b\" }\n\
             clocks = { fixed = \"a configuration\", inferred_from = [\"q\"] }\n\
             [[device]]\nx = 1.0\n[range.device.0]\nx = { low = 0.5, high = 2, dist = \"uniform\", basis = \"b\", inferred_from = [\"r\"] }\n",
        )
        .unwrap();
        assert_eq!(d.len(), 3);
        assert_eq!(d[0].key, "platform.cpu.clocks");
        assert_eq!(
            d[0].spread,
            Spread::Fixed {
                reason: "a configuration".into(),
                inferred_from: vec!["q".into()],
            }
        );
        assert!(d[0].integer);
        assert_eq!(d[1].key, "platform.cpu.halt_exit_ns");
        assert_eq!(d[1].nominal, 200.0);
        assert_eq!(d[2].key, "platform.device.0.x");
        assert!(matches!(&d[2].spread, Spread::Drawn(r) if r.inferred_from == ["r"]));
    }

    #[test]
    fn a_setting_that_is_not_a_number_can_be_labelled_inferred() {
        let d = read(
            "[sched]\npreemption = \"preempt\"\n[range.sched]\n\
             preemption = { fixed = \"chosen\", inferred_from = [\"row\"] }\n",
        )
        .unwrap();
        assert!(d[0].nominal.is_nan());
        assert!(
            matches!(&d[0].spread, Spread::Fixed { inferred_from, .. } if inferred_from == &["row"])
        );
    }

    #[test]
    fn bad_ranges_are_refused_with_their_line() {
        let cases = [
            ("[cpu]\nx = 5.0\n[range.cpu]\nx = { low = 6.0, high = 9.0, dist = \"uniform\", basis = \"b\" }\n", "lies outside its range"),
            ("[cpu]\nx = 5.0\n[range.cpu]\ny = { low = 1.0, high = 9.0, dist = \"uniform\", basis = \"b\" }\n", "sets no 'cpu.y'"),
            ("[cpu]\nx = 5.0\n[range.cpu]\nx = { low = 1.0, high = 9.0, dist = \"normal\", basis = \"b\" }\n", "unknown variant"),
            ("[cpu]\nx = 5.0\n[range.cpu]\nx = { low = 1.0, high = 9.0, dist = \"uniform\" }\n", "gives low, high, dist"),
            ("[cpu]\nx = 5.0\n[range.cpu]\nx = { low = 0.0, high = 9.0, dist = \"log-uniform\", basis = \"b\" }\n", "needs low > 0"),
            ("[cpu]\nx = 5.0\n[range.cpu]\nx = { low = 1.0, high = 9.0, dist = \"uniform\", basis = \" \" }\n", "basis is empty"),
            ("[cpu]\nx = \"a\"\n[range.cpu]\nx = { low = 1.0, high = 9.0, dist = \"uniform\", basis = \"b\" }\n", "not a number"),
        ];
        for (text, want) in cases {
            let e = read(text).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
            assert!(e.starts_with("p.toml:4:"), "{e}");
        }
    }

    #[test]
    fn distributions_span_their_range() {
        assert_eq!(Dist::Uniform.at(0.5, 2.0, 4.0), 3.0);
        assert!((Dist::LogUniform.at(0.5, 10.0, 1000.0) - 100.0).abs() < 1e-9);
        assert!((Dist::LogUniform.at(1.0, 10.0, 1000.0) - 1000.0).abs() < 1e-9);
    }
}
