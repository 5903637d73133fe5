//! `irqlab show`: a shipped file to copy and edit, or a scenario's `--set` keys with their values
//! and declared ranges.

use crate::args::ShowArgs;
use crate::ui::print;
use anyhow::Result;
use irqlab_report::table::Table;
use irqlab_report::text::wrap;
use irqlab_sim::scenario::ranges::Spread;
use irqlab_sim::scenario::Scenario;
use irqlab_sim::shipped;
use std::path::{Path, PathBuf};

pub fn run(a: ShowArgs) -> Result<()> {
    if a.keys {
        return keys(&a.name, &a.set);
    }
    let text = match file(&a.name)? {
        Found::Shipped(p) => shipped::copy_text(&p).expect("a shipped file has a text"),
        Found::Disk(p) => {
            std::fs::read_to_string(&p).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?
        }
    };
    print(&text)
}

enum Found {
    Shipped(PathBuf),
    Disk(PathBuf),
}

/// The file `name` names: on disk if there is one (as `irqlab sim` reads it), else the shipped
/// scenario, platform or kernel of that name.
fn file(name: &Path) -> Result<Found> {
    if name.is_dir() {
        anyhow::bail!(
            "{}: a directory; give a scenario, platform or kernel file, or a shipped one's name \
             (irqlab list)",
            name.display()
        );
    }
    if name.is_file() {
        return Ok(Found::Disk(name.to_path_buf()));
    }
    if let Some(p) = name.to_str().and_then(shipped::named) {
        return Ok(Found::Shipped(p));
    }
    let scenarios: Vec<String> = shipped::scenarios().into_iter().map(|(n, _)| n).collect();
    anyhow::bail!(
        "{}: no such file, and irqlab ships no scenario, platform or kernel of that name; \
         give a scenario ({}) or a platform or kernel as `irqlab list` names them",
        name.display(),
        scenarios.join(", ")
    )
}

/// Every `--set` key of a scenario, its value and its declared range.
fn keys(name: &Path, set: &[String]) -> Result<()> {
    let shipped_part = !name.exists()
        && shipped::scenario(&name.to_string_lossy()).is_none()
        && name.to_str().and_then(shipped::named).is_some();
    if shipped_part {
        anyhow::bail!(
            "{}: --keys lists a scenario's keys, and this is a platform or kernel; give a scenario \
             that runs it (irqlab list shows which), whose keys include it under platform. or \
             kernel.",
            name.display()
        );
    }
    let path = super::sim::resolve(name)?;
    let sim = Scenario::load(&path, set)?;
    let ranges = sim.ranges()?;
    // The value last: a list or an inline table may be long, and would push the ranges out.
    let mut t = Table::new(&["key", "range (validate --uncertainty)", "value"]).left_aligned();
    let settings = sim.settings()?;
    for (key, value) in &settings {
        let range = ranges
            .iter()
            .find(|r| &r.key == key)
            .map_or(String::new(), |r| describe(&r.spread));
        // A value a --set given here chose says so.
        let value = if set.iter().any(|f| irqlab_sim::scenario::read::sets(f, key)) {
            format!("{value}  (--set)")
        } else {
            value.to_string()
        };
        t.row(vec![key.clone(), range, value]);
    }
    let drawn = ranges
        .iter()
        .filter(|r| matches!(r.spread, Spread::Drawn(_)))
        .count();
    let mut out = wrap(
        &format!(
            "{} ({}): the keys `irqlab sim {} --set KEY=VALUE` takes, with their values{}.",
            sim.title(),
            path.display(),
            name.display(),
            if set.is_empty() {
                ""
            } else {
                " after the --set given"
            }
        ),
        "",
        "",
    );
    out.push('\n');
    out.push_str(&t.render());
    out.push('\n');
    out.push_str(&wrap(
        &format!(
            "{} keys; {drawn} with a range that `validate --uncertainty` draws, {} declared fixed \
             (not drawn; --set still changes them). Each range's basis is beside it in its \
             file's [range.*] table (irqlab show NAME prints the file).",
            settings.len(),
            ranges.len() - drawn
        ),
        "",
        "",
    ));
    print(&out)
}

/// A range as the table shows it: its bounds and distribution, or why it is not drawn, and the
/// rows it was read from.
fn describe(spread: &Spread) -> String {
    let (text, inferred) = match spread {
        Spread::Drawn(r) => (
            format!("{} .. {} ({})", r.low, r.high, r.dist.name()),
            &r.inferred_from,
        ),
        // Not drawn by the uncertainty run; --set still changes it.
        Spread::Fixed { inferred_from, .. } => ("not drawn".to_string(), inferred_from),
    };
    if inferred.is_empty() {
        text
    } else {
        format!("{text}, inferred from {}", inferred.join(", "))
    }
}
