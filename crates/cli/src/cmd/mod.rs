//! One module per command: each turns its parsed flags into work in the library crates and
//! renders the result.

pub mod host;
pub mod list;
pub mod measure;
pub mod plan;
pub mod plan_host;
pub mod plot;
pub mod show;
pub mod sim;
pub mod sweep;
pub mod validate;

use crate::made::write_json;
use crate::ui::{print, wrote};
use anyhow::{Context, Result};
use irqlab_report as report;
use irqlab_report::json::Kind;
use std::path::Path;

/// Refuse, before anything runs, a `--json` file or `--plot` directory that cannot be written:
/// a long run or a measurement must not be made only to be lost.
pub fn check_outputs(json: Option<&Path>, plot: Option<&Path>) -> Result<()> {
    if let Some(p) = json {
        check_output("--json", p)?;
    }
    if let Some(d) = plot {
        if report::is_stdout(d) {
            anyhow::bail!(
                "--plot -: figures are files in a directory, not standard output; give a \
                 directory"
            );
        }
        report::check_plot_dir(d).with_context(|| "--plot")?;
    }
    Ok(())
}

/// The flag whose file goes to standard output (`-`), if one does: only one can.
static STDOUT_FLAG: std::sync::Mutex<Option<&'static str>> = std::sync::Mutex::new(None);

/// Refuse, before anything runs, a result file `flag` names that cannot be written (see
/// `irqlab_report::write_atomic` for what is written in place and what is refused). `-` is
/// standard output, for one flag only; the text the command prints then goes to stderr.
pub fn check_output(flag: &'static str, path: &Path) -> Result<()> {
    if report::is_stdout(path) {
        let mut taken = STDOUT_FLAG
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(other) = *taken {
            if other != flag {
                anyhow::bail!(
                    "{flag} -: standard output already takes {other}'s file; give {flag} a file"
                );
            }
        }
        *taken = Some(flag);
        crate::ui::stdout_is_a_result();
    }
    report::check_writable(path).with_context(|| flag)
}

/// A short, stable tag of the flags that change a deterministic result (`--set`, `--seed`,
/// ...), for figure names: runs with other flags never overwrite each other's figures, and the
/// same flags give the same figures. `None` when no such flag was given.
pub fn flags_tag(flags: &[String]) -> Option<String> {
    if flags.is_empty() {
        return None;
    }
    // FNV-1a (64 bit): stable across builds and platforms, unlike std's hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in flags.join("\u{1f}").bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    Some(format!("{:08x}", (h >> 32) as u32 ^ h as u32))
}

/// The figures a validation's `--plot` drew, or a note that its rows had none to draw.
pub fn wrote_validation_plots(files: &[std::path::PathBuf]) {
    if files.is_empty() {
        crate::ui::warning(
            "--plot: the selected rows have no latency distribution to draw (counts and rates \
             only, as seed 001's); nothing written",
        );
    }
    wrote(files);
}

/// Each of a result's warnings on stderr, one line each.
pub fn warn_all(warnings: &[String]) {
    for w in warnings {
        crate::ui::warning(w);
    }
}

/// Write a simulated run's JSON, print it, and draw its figures, named `NAME[-TAG]-FIGURE.svg`.
pub fn emit_run(
    rep: &irqlab_stats::results::RunReport,
    made: &irqlab_report::json::Made,
    json: Option<&Path>,
    plot: Option<(&Path, &str)>,
) -> Result<()> {
    if let Some(path) = json {
        write_json(path, Kind::Sim, made, rep).with_context(|| "--json")?;
    }
    print(&report::run_text(rep))?;
    warn_all(&rep.warnings);
    if let Some((dir, name)) = plot {
        wrote(&report::plot::plot_run(rep, dir, name).with_context(|| "--plot")?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_stable_and_tell_flags_apart() {
        assert_eq!(flags_tag(&[]), None);
        let a = flags_tag(&["--set".into(), "delivery=xtpic".into()]).unwrap();
        assert_eq!(a.len(), 8);
        assert_eq!(
            flags_tag(&["--set".into(), "delivery=xtpic".into()]),
            Some(a.clone())
        );
        assert_ne!(
            flags_tag(&["--set".into(), "delivery=msi".into()]),
            Some(a.clone())
        );
        // The same words split differently are other flags.
        assert_ne!(flags_tag(&["--setdelivery=xtpic".into()]), Some(a));
    }
}
